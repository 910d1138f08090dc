import SyncStoreSupport

/// SOQL (and the SOSL `RETURNING` specs, which reuse it) lexer and recursive-descent parser.
/// Every failure is a `SoqlError` carrying the offending offset; nothing here traps on input.

struct SoqlError: Error {
    enum Kind { case malformed, invalidField, invalidType, invalidFilter }
    let kind: Kind
    let offset: Int
    let message: String
}

struct Token {
    enum Kind { case ident, string, number, date, datetime, punct, eof }
    let kind: Kind
    let text: String        // ident / punct / number text; canonical datetime text
    let offset: Int
    var stringValue: String = ""  // unescaped string literal
    var likePattern: String = ""  // string literal as an SQLite LIKE pattern with ESCAPE '\'
    var millis: Int64 = 0         // datetime literal
    var upper: String { text.uppercased() }
}

struct SoqlLexer {
    private let b: [UInt8]
    private var i = 0

    init(_ text: String) { b = Array(text.utf8) }

    static func tokenize(_ text: String) throws -> [Token] {
        var lexer = SoqlLexer(text)
        var out: [Token] = []
        while true {
            let t = try lexer.next()
            out.append(t)
            if t.kind == .eof { return out }
            if out.count > 100_000 { throw SoqlError(kind: .malformed, offset: t.offset, message: "query too long") }
        }
    }

    private func isDigit(_ c: UInt8) -> Bool { (48...57).contains(c) }
    private func isIdentStart(_ c: UInt8) -> Bool { (65...90).contains(c) || (97...122).contains(c) || c == 95 }

    private mutating func next() throws -> Token {
        while i < b.count, b[i] == 32 || b[i] == 9 || b[i] == 10 || b[i] == 13 { i += 1 }
        guard i < b.count else { return Token(kind: .eof, text: "", offset: i) }
        let start = i
        let c = b[i]
        if isIdentStart(c) {
            while i < b.count, isIdentStart(b[i]) || isDigit(b[i]) { i += 1 }
            return Token(kind: .ident, text: String(decoding: b[start..<i], as: UTF8.self), offset: start)
        }
        if c == 39 { return try lexString(start) }
        if isDigit(c) || ((c == 45 || c == 43) && i + 1 < b.count && isDigit(b[i + 1])) {
            if isDigit(c), let t = lexDate(start) { return t }
            i += 1
            while i < b.count, isDigit(b[i]) { i += 1 }
            if i < b.count, b[i] == 46 {
                i += 1
                while i < b.count, isDigit(b[i]) { i += 1 }
            }
            return Token(kind: .number, text: String(decoding: b[start..<i], as: UTF8.self), offset: start)
        }
        let two = i + 1 < b.count ? String(decoding: b[i...(i + 1)], as: UTF8.self) : ""
        if ["!=", "<>", "<=", ">="].contains(two) {
            i += 2
            return Token(kind: .punct, text: two == "<>" ? "!=" : two, offset: start)
        }
        if "(),=<>.:".utf8.contains(c) {
            i += 1
            return Token(kind: .punct, text: String(UnicodeScalar(c)), offset: start)
        }
        throw SoqlError(kind: .malformed, offset: start, message: "unexpected token: '\(String(decoding: b[start..<min(start + 1, b.count)], as: UTF8.self))'")
    }

    private mutating func lexString(_ start: Int) throws -> Token {
        i += 1
        var value: [UInt8] = []
        var like: [UInt8] = []
        while true {
            guard i < b.count else { throw SoqlError(kind: .malformed, offset: start, message: "unterminated string literal") }
            let c = b[i]
            if c == 39 { i += 1; break }
            if c == 92 {
                guard i + 1 < b.count else { throw SoqlError(kind: .malformed, offset: i, message: "unterminated string literal") }
                let e = b[i + 1]
                i += 2
                switch e {
                case UInt8(ascii: "n"): value.append(10); like.append(10)
                case UInt8(ascii: "r"): value.append(13); like.append(13)
                case UInt8(ascii: "t"): value.append(9); like.append(9)
                case UInt8(ascii: "b"): value.append(8); like.append(8)
                case UInt8(ascii: "f"): value.append(12); like.append(12)
                case 39, 34: value.append(e); like.append(e)
                case 92: value.append(92); like.append(contentsOf: [92, 92])
                case 37, 95: value.append(e); like.append(contentsOf: [92, e]) // \% and \_ are literal in LIKE
                default:
                    throw SoqlError(kind: .malformed, offset: i - 2, message: "Invalid string literal '\\\(String(UnicodeScalar(e)))'. Illegal character sequence '\\\(String(UnicodeScalar(e)))' in string literal.")
                }
                continue
            }
            value.append(c)
            like.append(c)
            i += 1
        }
        var t = Token(kind: .string, text: "'" + String(decoding: value, as: UTF8.self) + "'", offset: start)
        t.stringValue = String(decoding: value, as: UTF8.self)
        t.likePattern = String(decoding: like, as: UTF8.self)
        return t
    }

    /// `2026-01-01` or `2026-01-01T00:00:00[.000](Z|+hh:mm|+hhmm)`.
    private mutating func lexDate(_ start: Int) -> Token? {
        guard start + 10 <= b.count, b[start + 4] == 45, b[start + 7] == 45 else { return nil }
        var end = start + 10
        if end < b.count, b[end] == 84 {
            end += 1
            while end < b.count, isDigit(b[end]) || b[end] == 58 || b[end] == 46 || b[end] == 43 || b[end] == 45 || b[end] == 90 { end += 1 }
            let text = String(decoding: b[start..<end], as: UTF8.self)
            guard let ms = SFTime.parseDateTime(text) else { return nil }
            i = end
            var t = Token(kind: .datetime, text: SFTime.format(millis: ms), offset: start)
            t.millis = ms
            return t
        }
        let text = String(decoding: b[start..<end], as: UTF8.self)
        guard Timestamp.parseDate(text) != nil else { return nil }
        i = end
        return Token(kind: .date, text: text, offset: start)
    }
}

// MARK: - AST

struct FieldRef {
    var path: [String]
    var offset: Int
    var dotted: String { path.joined(separator: ".") }
}

struct Literal {
    enum Value {
        case null
        case bool(Bool)
        case number(String)
        case string(String, like: String)
        case date(String)
        case datetime(Int64)
        case relativeDate(String, Int?)
    }
    var value: Value
    var offset: Int
}

enum SelectItem {
    case field(FieldRef)
    case aggregate(function: String, argument: FieldRef?, alias: String?, offset: Int)
    case subquery(SoqlQuery)
    /// FIELDS(ALL), FIELDS(STANDARD), FIELDS(CUSTOM)
    case fieldsMacro(String, offset: Int)
}

indirect enum Condition {
    case and(Condition, Condition)
    case or(Condition, Condition)
    case not(Condition)
    case compare(FieldRef, String, Literal)
    case inList(FieldRef, negated: Bool, [Literal])
    case inQuery(FieldRef, negated: Bool, SoqlQuery)
    case like(FieldRef, Literal)
    /// SOSL term match: every term must match at least one of the fields (LIKE patterns).
    case search(terms: [String], fields: [String])
    /// HAVING: `COUNT(Id) > 1`, `MAX(Amount) >= 100`.
    case aggregateCompare(function: String, argument: FieldRef?, op: String, Literal)
}

struct OrderItem {
    var item: SelectItem
    var ascending: Bool
    var nullsFirst: Bool
}

struct SoqlQuery {
    var items: [SelectItem] = []
    var from: String = ""
    var fromOffset: Int = 0
    var alias: String?
    var condition: Condition?
    var groupBy: [FieldRef] = []
    var having: Condition?
    var orderBy: [OrderItem] = []
    var limit: Int?
    var offset: Int?
    var allRows = false
}

// MARK: - Parser

struct SoqlParser {
    private var tokens: [Token]
    private var p = 0
    private var depth = 0

    static let aggregateFunctions: Set<String> = ["COUNT", "COUNT_DISTINCT", "MIN", "MAX", "SUM", "AVG"]
    static let reserved: Set<String> = ["AND", "OR", "NOT", "WHERE", "FROM", "LIMIT", "OFFSET", "ORDER", "GROUP", "WITH",
                                        "USING", "FOR", "ALL", "HAVING", "NULLS", "SELECT", "IN", "LIKE", "ASC", "DESC",
                                        "NULL", "TRUE", "FALSE", "INCLUDES", "EXCLUDES", "TYPEOF", "WHEN", "THEN", "ELSE", "END", "BY"]

    init(tokens: [Token]) { self.tokens = tokens }

    static func parse(_ text: String) throws -> SoqlQuery {
        var parser = SoqlParser(tokens: try SoqlLexer.tokenize(text))
        let q = try parser.parseQuery()
        try parser.expectEOF()
        return q
    }

    private var cur: Token { tokens[min(p, tokens.count - 1)] }
    private func peek(_ n: Int = 1) -> Token { tokens[min(p + n, tokens.count - 1)] }
    private mutating func advance() -> Token { let t = cur; if p < tokens.count - 1 { p += 1 }; return t }

    private func unexpected(_ t: Token? = nil) -> SoqlError {
        let t = t ?? cur
        return SoqlError(kind: .malformed, offset: t.offset, message: t.kind == .eof ? "unexpected token: <EOF>" : "unexpected token: '\(t.text)'")
    }

    private func isKeyword(_ k: String) -> Bool { cur.kind == .ident && cur.upper == k }
    private mutating func accept(_ k: String) -> Bool { if isKeyword(k) { p += 1; return true }; return false }
    private mutating func expectKeyword(_ k: String) throws { guard accept(k) else { throw unexpected() } }
    private func isPunct(_ s: String) -> Bool { cur.kind == .punct && cur.text == s }
    private mutating func acceptPunct(_ s: String) -> Bool { if isPunct(s) { p += 1; return true }; return false }
    private mutating func expectPunct(_ s: String) throws { guard acceptPunct(s) else { throw unexpected() } }

    mutating func expectEOF() throws { guard cur.kind == .eof else { throw unexpected() } }

    mutating func parseQuery() throws -> SoqlQuery {
        depth += 1
        defer { depth -= 1 }
        guard depth < 4 else { throw SoqlError(kind: .malformed, offset: cur.offset, message: "subqueries nested too deeply") }
        var q = SoqlQuery()
        try expectKeyword("SELECT")
        repeat { q.items.append(try parseSelectItem()) } while acceptPunct(",")
        try expectKeyword("FROM")
        guard cur.kind == .ident, !Self.reserved.contains(cur.upper) else { throw unexpected() }
        q.fromOffset = cur.offset
        q.from = advance().text
        if cur.kind == .ident, !Self.reserved.contains(cur.upper) { q.alias = advance().text }
        if accept("USING") {
            try expectKeyword("SCOPE")
            guard cur.kind == .ident else { throw unexpected() }
            _ = advance()
        }
        if accept("WHERE") { q.condition = try parseOr() }
        if accept("WITH") {
            // WITH SECURITY_ENFORCED / USER_MODE etc.: accepted and ignored (single-user emulator).
            guard cur.kind == .ident else { throw unexpected() }
            _ = advance()
        }
        if accept("GROUP") {
            try expectKeyword("BY")
            repeat { q.groupBy.append(try parseFieldRef()) } while acceptPunct(",")
            if accept("HAVING") { q.having = try parseOr() }
        }
        if accept("ORDER") {
            try expectKeyword("BY")
            repeat { q.orderBy.append(try parseOrderItem()) } while acceptPunct(",")
        }
        if accept("LIMIT") { q.limit = try parseNonNegativeInt() }
        if accept("OFFSET") { q.offset = try parseNonNegativeInt() }
        if accept("FOR") {
            guard cur.kind == .ident, ["VIEW", "REFERENCE", "UPDATE"].contains(cur.upper) else { throw unexpected() }
            _ = advance()
        }
        if accept("ALL") {
            try expectKeyword("ROWS")
            q.allRows = true
        }
        return q
    }

    private mutating func parseNonNegativeInt() throws -> Int {
        guard cur.kind == .number, let n = Int(cur.text), n >= 0 else { throw unexpected() }
        _ = advance()
        return n
    }

    private mutating func parseFieldRef() throws -> FieldRef {
        guard cur.kind == .ident, !Self.reserved.contains(cur.upper) else { throw unexpected() }
        let offset = cur.offset
        var path = [advance().text]
        while acceptPunct(".") {
            guard cur.kind == .ident else { throw unexpected() }
            path.append(advance().text)
        }
        guard path.count <= 6 else { throw SoqlError(kind: .malformed, offset: offset, message: "relationship path too long") }
        return FieldRef(path: path, offset: offset)
    }

    private mutating func parseSelectItem() throws -> SelectItem {
        if isPunct("(") {
            _ = advance()
            let sub = try parseQuery()
            try expectPunct(")")
            return .subquery(sub)
        }
        if cur.kind == .ident, peek().kind == .punct, peek().text == "(" {
            let fnTok = advance()
            if fnTok.upper == "FIELDS" {
                _ = advance()
                guard cur.kind == .ident, ["ALL", "STANDARD", "CUSTOM"].contains(cur.upper) else { throw unexpected() }
                let which = advance().upper
                try expectPunct(")")
                return .fieldsMacro(which, offset: fnTok.offset)
            }
            guard Self.aggregateFunctions.contains(fnTok.upper) else {
                throw SoqlError(kind: .malformed, offset: fnTok.offset, message: "Unsupported function: \(fnTok.text)")
            }
            _ = advance()
            var arg: FieldRef?
            if !isPunct(")") { arg = try parseFieldRef() }
            try expectPunct(")")
            if arg == nil && fnTok.upper != "COUNT" { throw unexpected() }
            var alias: String?
            if cur.kind == .ident, !Self.reserved.contains(cur.upper) { alias = advance().text }
            return .aggregate(function: fnTok.upper, argument: arg, alias: alias, offset: fnTok.offset)
        }
        return .field(try parseFieldRef())
    }

    private mutating func parseOrderItem() throws -> OrderItem {
        let item: SelectItem
        if cur.kind == .ident, peek().kind == .punct, peek().text == "(" {
            item = try parseSelectItem()
        } else {
            item = .field(try parseFieldRef())
        }
        var ascending = true
        if accept("DESC") { ascending = false } else { _ = accept("ASC") }
        var nullsFirst = ascending
        if accept("NULLS") {
            if accept("FIRST") { nullsFirst = true } else if accept("LAST") { nullsFirst = false } else { throw unexpected() }
        }
        return OrderItem(item: item, ascending: ascending, nullsFirst: nullsFirst)
    }

    mutating func parseOr() throws -> Condition {
        var left = try parseAnd()
        while accept("OR") { left = .or(left, try parseAnd()) }
        return left
    }

    private mutating func parseAnd() throws -> Condition {
        var left = try parseUnary()
        while accept("AND") { left = .and(left, try parseUnary()) }
        return left
    }

    private mutating func parseUnary() throws -> Condition {
        depth += 1
        defer { depth -= 1 }
        // SQLite's own parser stack is shallow; keep nesting well inside it.
        guard depth < 40 else { throw SoqlError(kind: .malformed, offset: cur.offset, message: "condition nested too deeply") }
        if accept("NOT") { return .not(try parseUnary()) }
        if acceptPunct("(") {
            let c = try parseOr()
            try expectPunct(")")
            return c
        }
        return try parsePredicate()
    }

    private mutating func parsePredicate() throws -> Condition {
        if cur.kind == .ident, Self.aggregateFunctions.contains(cur.upper), peek().kind == .punct, peek().text == "(" {
            guard case .aggregate(let fn, let arg, nil, _) = try parseSelectItem() else { throw unexpected() }
            guard cur.kind == .punct, ["=", "!=", "<", ">", "<=", ">="].contains(cur.text) else { throw unexpected() }
            let op = advance().text
            return .aggregateCompare(function: fn, argument: arg, op: op, try parseLiteral())
        }
        let field = try parseFieldRef()
        if cur.kind == .punct, ["=", "!=", "<", ">", "<=", ">="].contains(cur.text) {
            let op = advance().text
            return .compare(field, op, try parseLiteral())
        }
        var negated = false
        if accept("NOT") { negated = true }
        if accept("IN") {
            try expectPunct("(")
            if isKeyword("SELECT") {
                let sub = try parseQuery()
                try expectPunct(")")
                return .inQuery(field, negated: negated, sub)
            }
            var values: [Literal] = []
            repeat { values.append(try parseLiteral()) } while acceptPunct(",")
            try expectPunct(")")
            return .inList(field, negated: negated, values)
        }
        if accept("LIKE") {
            let lit = try parseLiteral()
            guard case .string = lit.value else { throw unexpected(tokens[max(p - 1, 0)]) }
            return negated ? .not(.like(field, lit)) : .like(field, lit)
        }
        throw unexpected()
    }

    static let relativeDates: Set<String> = ["TODAY", "YESTERDAY", "TOMORROW", "LAST_N_DAYS", "NEXT_N_DAYS", "N_DAYS_AGO",
                                             "THIS_WEEK", "LAST_WEEK", "NEXT_WEEK", "LAST_N_WEEKS", "NEXT_N_WEEKS",
                                             "THIS_MONTH", "LAST_MONTH", "NEXT_MONTH", "LAST_N_MONTHS", "NEXT_N_MONTHS",
                                             "THIS_YEAR", "LAST_YEAR", "NEXT_YEAR", "LAST_N_YEARS", "NEXT_N_YEARS"]

    private mutating func parseLiteral() throws -> Literal {
        let t = cur
        switch t.kind {
        case .string:
            _ = advance()
            return Literal(value: .string(t.stringValue, like: t.likePattern), offset: t.offset)
        case .number:
            _ = advance()
            return Literal(value: .number(t.text), offset: t.offset)
        case .date:
            _ = advance()
            return Literal(value: .date(t.text), offset: t.offset)
        case .datetime:
            _ = advance()
            return Literal(value: .datetime(t.millis), offset: t.offset)
        case .ident:
            let u = t.upper
            if u == "NULL" { _ = advance(); return Literal(value: .null, offset: t.offset) }
            if u == "TRUE" || u == "FALSE" { _ = advance(); return Literal(value: .bool(u == "TRUE"), offset: t.offset) }
            if Self.relativeDates.contains(u) {
                _ = advance()
                var n: Int?
                if u.contains("_N_") || u.hasPrefix("N_") {
                    try expectPunct(":")
                    n = try parseNonNegativeInt()
                    guard n ?? 0 <= 100_000 else { throw unexpected() }
                }
                return Literal(value: .relativeDate(u, n), offset: t.offset)
            }
            throw unexpected()
        default:
            throw unexpected()
        }
    }
}
