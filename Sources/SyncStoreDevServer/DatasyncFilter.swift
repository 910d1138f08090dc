import SyncStoreSupport

/// The OData `$filter` subset the Datasync routes understand, compiled to SQL over the
/// `datasync_rows` table:
///
///     EXPR    := AND ('or' AND)*          AND := UNARY ('and' UNARY)*
///     UNARY   := 'not' UNARY | '(' EXPR ')' | FIELD OP LITERAL
///     OP      := eq | ne | gt | ge | lt | le
///     LITERAL := 'text' | number | true | false | null | 2026-01-01T00:00:00.000Z
///              | datetimeoffset'...' | cast(2026-...Z, Edm.DateTimeOffset)
///
/// `updatedAt`/`createdAt` compare as instants (a quoted ISO-8601 text is accepted too), `id`,
/// `version`, `deleted` are columns, any other name is a field of the entity's JSON.
struct DatasyncFilterError: Error { let message: String }

struct DatasyncFilter {
    private enum Token: Equatable { case word(String), text(String), number(String), open, close, comma }

    private var tokens: [Token] = []
    private var position = 0
    /// Nesting of parentheses and `not`: bounded, so no filter can exhaust the stack.
    private var depth = 0
    private(set) var binds: [SQLValue] = []
    /// Binds are numbered from here (the route binds the table name first).
    private let firstBind: Int

    /// Compiles `text` into a SQL condition whose parameters start at `?firstBind`.
    static func compile(_ text: String, firstBind: Int) throws -> (sql: String, binds: [SQLValue]) {
        var f = DatasyncFilter(firstBind: firstBind)
        f.tokens = try tokenize(text)
        let sql = try f.expression()
        guard f.position == f.tokens.count else { throw DatasyncFilterError(message: "$filter: unexpected text after the expression") }
        return (sql, f.binds)
    }

    private init(firstBind: Int) { self.firstBind = firstBind }

    /// SQL for a field: system properties are columns, the rest live in the JSON `data`.
    static func column(_ field: String) throws -> String {
        switch field.lowercased() {
        case "id": return "id"
        case "updatedat": return "updatedAt"
        case "createdat": return "createdAt"
        case "version": return "version"
        case "deleted": return "deleted"
        default:
            guard isName(field) else { throw DatasyncFilterError(message: "'\(field)' is not a property name") }
            return "json_extract(data, '$.\"\(field)\"')"
        }
    }

    static func isName(_ s: String) -> Bool {
        guard let first = s.utf8.first, first == UInt8(ascii: "_") || isLetter(first) else { return false }
        return s.utf8.allSatisfy { $0 == UInt8(ascii: "_") || isLetter($0) || ($0 >= 48 && $0 <= 57) }
    }

    private static func isLetter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }

    private static func tokenize(_ text: String) throws -> [Token] {
        let b = Array(text.utf8)
        var out: [Token] = []
        var i = 0
        while i < b.count {
            let c = b[i]
            if c == 32 || c == 9 || c == 10 || c == 13 { i += 1; continue }
            if c == UInt8(ascii: "(") { out.append(.open); i += 1; continue }
            if c == UInt8(ascii: ")") { out.append(.close); i += 1; continue }
            if c == UInt8(ascii: ",") { out.append(.comma); i += 1; continue }
            if c == UInt8(ascii: "'") {
                var s: [UInt8] = []
                i += 1
                var closed = false
                while i < b.count {
                    if b[i] == UInt8(ascii: "'") {
                        if i + 1 < b.count && b[i + 1] == UInt8(ascii: "'") { s.append(b[i]); i += 2; continue }
                        i += 1
                        closed = true
                        break
                    }
                    s.append(b[i])
                    i += 1
                }
                guard closed else { throw DatasyncFilterError(message: "$filter: unterminated string") }
                out.append(.text(String(decoding: s, as: UTF8.self)))
                continue
            }
            // A word, a number or a bare datetime: everything up to a separator.
            let start = i
            while i < b.count, ![32, 9, 10, 13, UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ",")].contains(b[i]) {
                if b[i] == UInt8(ascii: "'") {
                    // datetimeoffset'...': the quoted part belongs to the word.
                    i += 1
                    while i < b.count, b[i] != UInt8(ascii: "'") { i += 1 }
                }
                i += 1
            }
            let word = String(decoding: b[start..<min(i, b.count)], as: UTF8.self)
            if let first = word.utf8.first, first == UInt8(ascii: "-") || (first >= 48 && first <= 57) {
                out.append(.number(word))
            } else {
                out.append(.word(word))
            }
        }
        return out
    }

    private var peek: Token? { position < tokens.count ? tokens[position] : nil }

    private mutating func keyword(_ k: String) -> Bool {
        if case .word(let w)? = peek, w.lowercased() == k { position += 1; return true }
        return false
    }

    private mutating func expression() throws -> String {
        var parts = [try conjunction()]
        while keyword("or") { parts.append(try conjunction()) }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " OR ") + ")"
    }

    private mutating func conjunction() throws -> String {
        var parts = [try unary()]
        while keyword("and") { parts.append(try unary()) }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " AND ") + ")"
    }

    private mutating func unary() throws -> String {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 30 else { throw DatasyncFilterError(message: "$filter: nested more than 30 deep") }
        if keyword("not") { return "(NOT \(try unary()))" }
        if peek == .open {
            position += 1
            let inner = try expression()
            guard peek == .close else { throw DatasyncFilterError(message: "$filter: missing ')'") }
            position += 1
            return "(\(inner))"
        }
        return try comparison()
    }

    private mutating func comparison() throws -> String {
        guard case .word(let field)? = peek else { throw DatasyncFilterError(message: "$filter: expected a property name") }
        position += 1
        guard case .word(let opWord)? = peek else { throw DatasyncFilterError(message: "$filter: expected eq, ne, gt, ge, lt or le after '\(field)'") }
        let ops = ["eq": "=", "ne": "<>", "gt": ">", "ge": ">=", "lt": "<", "le": "<="]
        guard let op = ops[opWord.lowercased()] else { throw DatasyncFilterError(message: "$filter: unknown operator '\(opWord)'") }
        position += 1
        let column = try DatasyncFilter.column(field)
        let value = try literal(field: field)
        if case .null = value {
            guard op == "=" || op == "<>" else { throw DatasyncFilterError(message: "$filter: null only compares with eq or ne") }
            return "(\(column) IS \(op == "=" ? "" : "NOT ")NULL)"
        }
        binds.append(value)
        return "(\(column) \(op) ?\(firstBind + binds.count - 1))"
    }

    private mutating func literal(field: String) throws -> SQLValue {
        guard let token = peek else { throw DatasyncFilterError(message: "$filter: expected a value after '\(field)'") }
        position += 1
        let isInstant = ["updatedat", "createdat"].contains(field.lowercased())
        func instant(_ s: String) throws -> SQLValue {
            guard let ms = Timestamp.parse(s, requireFractionDigits: true) else {
                throw DatasyncFilterError(message: "$filter: '\(s)' is not an ISO-8601 date and time")
            }
            return .text(Timestamp.format(ms))
        }
        switch token {
        case .text(let s):
            if isInstant { return try instant(s) }
            return .text(s)
        case .number(let n):
            if isInstant || n.contains("T") { return try instant(n) }
            if let i = Int64(n) { return .int(i) }
            if let d = Double(n), d.isFinite { return .real(d) }
            throw DatasyncFilterError(message: "$filter: '\(n)' is not a number")
        case .word(let w):
            switch w.lowercased() {
            case "true": return .int(1)
            case "false": return .int(0)
            case "null": return .null
            case "cast":
                // cast(2026-01-01T00:00:00Z, Edm.DateTimeOffset)
                guard peek == .open else { break }
                position += 1
                guard case .number(let n)? = peek else { break }
                position += 1
                guard peek == .comma else { break }
                position += 1
                guard case .word? = peek else { break }
                position += 1
                guard peek == .close else { break }
                position += 1
                return try instant(n)
            default:
                let lower = w.lowercased()
                for prefix in ["datetimeoffset'", "datetime'"] where lower.hasPrefix(prefix) && w.hasSuffix("'") {
                    return try instant(String(w.dropFirst(prefix.count).dropLast()))
                }
            }
            throw DatasyncFilterError(message: "$filter: cannot read the value '\(w)'")
        default:
            throw DatasyncFilterError(message: "$filter: expected a value after '\(field)'")
        }
    }
}
