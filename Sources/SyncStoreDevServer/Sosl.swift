import Foundation

/// `FIND {term} [IN ALL|NAME|EMAIL|PHONE FIELDS] [RETURNING Type[(fields [WHERE] [ORDER BY] [LIMIT])], ...] [LIMIT n]`.
/// Each RETURNING spec is rewritten as a SOQL query and parsed by the SOQL parser.
struct SoslQuery {
    struct Spec {
        let object: SObjectDef
        var query: SoqlQuery
        let text: String
    }
    var terms: [String] = []
    var scope = "ALL"
    var returning: [Spec] = []
    var limit = 2000

    /// Terms as LIKE patterns: `*` and `?` are SOSL wildcards, `%`, `_`, `\` are literal.
    var likePatterns: [String] {
        terms.map { term in
            var out = "%"
            for c in term {
                switch c {
                case "*": out += "%"
                case "?": out += "_"
                case "%", "_", "\\": out += "\\" + String(c)
                default: out.append(c)
                }
            }
            return out + "%"
        }
    }

    func searchFields(_ obj: SObjectDef) -> [String] {
        obj.fields.filter { f in
            switch scope {
            case "NAME": return f.nameField || (obj.nameFieldName == nil && f.name == "Name")
            case "EMAIL": return f.type == .email
            case "PHONE": return f.type == .phone
            default: return f.type.isText
            }
        }.map(\.name)
    }

    static func parse(_ text: String, schema: Schema) throws -> SoslQuery {
        func malformed(_ m: String) -> APIError { APIError(400, "MALFORMED_SEARCH", m) }
        var b = Substring(text).drop { $0.isWhitespace }
        guard b.prefix(4).uppercased() == "FIND" else { throw malformed("No search term found. The search term must be enclosed in braces.") }
        b = b.dropFirst(4).drop { $0.isWhitespace }
        var term = ""
        guard let open = b.first, open == "{" || open == "'" else { throw malformed("No search term found. The search term must be enclosed in braces.") }
        let close: Character = open == "{" ? "}" : "'"
        b = b.dropFirst()
        var closed = false
        while let c = b.first {
            b = b.dropFirst()
            if c == "\\", let n = b.first { term.append(n); b = b.dropFirst(); continue }
            if c == close { closed = true; break }
            term.append(c)
        }
        guard closed else { throw malformed("No search term found. The search term must be enclosed in braces.") }
        var sosl = SoslQuery()
        sosl.terms = splitTerms(term)
        guard !sosl.terms.isEmpty, sosl.terms.allSatisfy({ $0.replacingOccurrences(of: "*", with: "").count >= 2 || $0.count >= 2 }) else {
            throw malformed("search term must be longer than one character: \(term)")
        }
        let rest = String(b)
        let tokens: [Token]
        do { tokens = try SoqlLexer.tokenize(rest) } catch let e as SoqlError { throw malformed(e.message) }
        var p = 0
        func cur() -> Token { tokens[min(p, tokens.count - 1)] }
        func kw(_ k: String) -> Bool { cur().kind == .ident && cur().upper == k }
        if kw("IN") {
            p += 1
            guard cur().kind == .ident, ["ALL", "NAME", "EMAIL", "PHONE", "SIDEBAR"].contains(cur().upper) else { throw malformed("unexpected token: \(cur().text)") }
            sosl.scope = cur().upper == "SIDEBAR" ? "ALL" : cur().upper
            p += 1
            guard kw("FIELDS") else { throw malformed("unexpected token: \(cur().text)") }
            p += 1
        }
        if kw("RETURNING") {
            p += 1
            repeat {
                if cur().kind == .punct, cur().text == "," { p += 1 }
                guard cur().kind == .ident, let obj = schema.object(cur().text) else {
                    throw APIError(400, "INVALID_TYPE", "sObject type '\(cur().text)' is not supported.")
                }
                p += 1
                var inner = "Id"
                if cur().kind == .punct, cur().text == "(" {
                    let start = cur().offset + 1
                    var depth = 0
                    repeat {
                        if cur().kind == .punct, cur().text == "(" { depth += 1 }
                        if cur().kind == .punct, cur().text == ")" { depth -= 1 }
                        if cur().kind == .eof { throw malformed("unexpected token: <EOF>") }
                        p += 1
                    } while depth > 0
                    let end = tokens[p - 1].offset
                    let bytes = Array(rest.utf8)
                    inner = String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
                }
                let soql = rewrite(inner, object: obj.name)
                do {
                    sosl.returning.append(Spec(object: obj, query: try SoqlParser.parse(soql), text: soql))
                } catch let e as SoqlError {
                    throw APIError(400, "MALFORMED_SEARCH", e.message)
                }
            } while cur().kind == .punct && cur().text == ","
        } else {
            for obj in schema.objects {
                let soql = "SELECT Id FROM \(obj.name)"
                if let q = try? SoqlParser.parse(soql) { sosl.returning.append(Spec(object: obj, query: q, text: soql)) }
            }
        }
        if kw("WITH") { while cur().kind != .eof && !kw("LIMIT") { p += 1 } }
        if kw("LIMIT") {
            p += 1
            guard cur().kind == .number, let n = Int(cur().text), n >= 0 else { throw malformed("unexpected token: \(cur().text)") }
            sosl.limit = min(n, 2000)
            p += 1
        }
        guard cur().kind == .eof else { throw malformed("unexpected token: \(cur().text)") }
        return sosl
    }

    /// `Id, Name WHERE x = 1 LIMIT 5` -> `SELECT Id, Name FROM T WHERE x = 1 LIMIT 5`.
    private static func rewrite(_ inner: String, object: String) -> String {
        guard let tokens = try? SoqlLexer.tokenize(inner) else { return "SELECT \(inner) FROM \(object)" }
        var depth = 0
        for t in tokens {
            if t.kind == .punct, t.text == "(" { depth += 1 }
            if t.kind == .punct, t.text == ")" { depth -= 1 }
            if depth == 0, t.kind == .ident, ["WHERE", "ORDER", "LIMIT", "OFFSET", "USING"].contains(t.upper) {
                let bytes = Array(inner.utf8)
                let fields = String(decoding: bytes[0..<t.offset], as: UTF8.self)
                let clauses = String(decoding: bytes[t.offset...], as: UTF8.self)
                return "SELECT \(fields.trimmingCharacters(in: .whitespaces).isEmpty ? "Id" : fields) FROM \(object) \(clauses)"
            }
        }
        let fields = inner.trimmingCharacters(in: .whitespaces)
        return "SELECT \(fields.isEmpty ? "Id" : fields) FROM \(object)"
    }

    private static func splitTerms(_ term: String) -> [String] {
        var out: [String] = []
        var current = ""
        var quoted = false
        for c in term {
            if c == "\"" { quoted.toggle(); continue }
            if c.isWhitespace && !quoted {
                if !current.isEmpty { out.append(current) }
                current = ""
            } else {
                current.append(c)
            }
        }
        if !current.isEmpty { out.append(current) }
        return out.filter { !["AND", "OR", "AND NOT"].contains($0.uppercased()) }
    }
}
