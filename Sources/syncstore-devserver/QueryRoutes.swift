import Foundation

/// Open query locators. Results are snapshots taken on the first page, served by slicing.
final class CursorStore {
    struct Cursor {
        let result: QueryResult
        let batchSize: Int
        var lastUsed: Int64
    }
    private var cursors: [String: Cursor] = [:]
    private var counter: Int64 = 0
    static let idleMillis: Int64 = 15 * 60 * 1000
    static let maxBytes = 1 << 30

    func open(_ result: QueryResult, batchSize: Int) -> String {
        evict()
        counter += 1
        let locator = String(SFId.make(prefix: "01g", sequence: counter).prefix(15))
        cursors[locator] = Cursor(result: result, batchSize: batchSize, lastUsed: SFTime.nowMillis())
        return locator
    }

    func get(_ locator: String) -> Cursor? {
        guard var c = cursors[locator] else { return nil }
        c.lastUsed = SFTime.nowMillis()
        cursors[locator] = c
        return c
    }

    /// Idle cursors expire as in the API; the oldest go first past a memory budget.
    private func evict() {
        let now = SFTime.nowMillis()
        cursors = cursors.filter { now - $0.value.lastUsed < CursorStore.idleMillis }
        var total = cursors.values.reduce(0) { $0 + $1.result.data.count }
        while total > CursorStore.maxBytes, let oldest = cursors.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            total -= oldest.value.result.data.count
            cursors[oldest.key] = nil
        }
    }
}

extension API {
    static let defaultBatchSize = 2000

    /// `Sforce-Query-Options: batchSize=N`, clamped to the API's 200...2000 (the lower bound is
    /// `--min-batch-size`, so tests can page through small data sets).
    func batchSize(_ req: APIRequest) -> Int? {
        guard let opt = req.headers["sforce-query-options"] else { return nil }
        for part in opt.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if kv.count == 2, kv[0].lowercased() == "batchsize", let n = Int(kv[1]) { return min(max(n, minBatchSize), 2000) }
        }
        return nil
    }

    func queryRoute(_ req: APIRequest, rest: [String], all: Bool, version: String) throws -> APIResponse {
        let kind = all ? "queryAll" : "query"
        if let locatorPart = rest.first {
            // Next page: <locator>-<offset>
            guard let dash = locatorPart.lastIndex(of: "-"), let offset = Int(locatorPart[locatorPart.index(after: dash)...]), offset >= 0,
                  let cursor = cursors.get(String(locatorPart[..<dash])), offset <= cursor.result.count else {
                throw APIError(400, "INVALID_QUERY_LOCATOR", "invalid query locator")
            }
            let batch = batchSize(req) ?? cursor.batchSize
            return APIResponse(status: 200, body: page(cursor.result, from: offset, batch: batch, locator: String(locatorPart[..<dash]), kind: kind, version: version))
        }
        guard let text = req.query["q"], !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw APIError(400, "MALFORMED_QUERY", "A query string has to be specified")
        }
        let result: QueryResult
        do {
            let q = try SoqlParser.parse(text)
            let compiled = try SoqlCompiler(schema: schema, version: version).compile(q, includeDeleted: all)
            result = try store.run(compiled)
        } catch let e as SoqlError {
            throw apiError(e, text: text)
        } catch let e as SQLiteError where e.code == 1 {
            // SQLITE_ERROR while preparing: a query too large or deep for SQLite's limits.
            throw APIError(400, "MALFORMED_QUERY", "Query is too complex: \(e.message)")
        }
        let batch = batchSize(req) ?? API.defaultBatchSize
        var locator: String?
        if result.count > batch { locator = cursors.open(result, batchSize: batch) }
        return APIResponse(status: 200, body: page(result, from: 0, batch: batch, locator: locator, kind: kind, version: version))
    }

    /// `{"totalSize":N,"done":B,"nextRecordsUrl":"...","records":[...]}` written straight from the snapshot.
    func page(_ r: QueryResult, from: Int, batch: Int, locator: String?, kind: String, version: String) -> [UInt8] {
        let end = min(from + batch, r.starts.count)
        let done = r.countOnly != nil || end >= r.starts.count
        var w = JSONWriter(capacity: r.countOnly != nil ? 64 : (from < r.starts.count ? (end < r.starts.count ? r.starts[end] - r.starts[from] : r.data.count - r.starts[from]) + 256 : 64))
        w.raw("{\"totalSize\":\(r.count),\"done\":\(done ? "true" : "false"),")
        if !done, let locator {
            w.raw("\"nextRecordsUrl\":\"/services/data/v\(version)/\(kind)/\(locator)-\(end)\",")
        }
        w.raw("\"records\":[")
        w.bytes.append(contentsOf: r.slice(from: from, count: batch))
        w.raw("]}")
        return w.bytes
    }

    /// Record JSON for `ids` (in that order; nil for missing or deleted), with `fields` or all fields.
    func retrieve(_ obj: SObjectDef, ids: [String], fields: [String]?, version: String) throws -> [[UInt8]?] {
        let names = fields ?? obj.fields.map(\.name)
        var q = SoqlQuery()
        q.from = obj.name
        q.items = names.map { .field(FieldRef(path: $0.split(separator: ".").map(String.init), offset: 0)) }
        let lits = ids.map { Literal(value: .string($0, like: $0), offset: 0) }
        q.condition = .inList(FieldRef(path: ["Id"], offset: 0), negated: false, lits)
        var byId: [String: [UInt8]] = [:]
        do {
            // Results carry the id in attributes.url; read it back to order the rows.
            let compiled = try SoqlCompiler(schema: schema, version: version).compile(q, includeDeleted: false)
            let result = try store.run(compiled)
            for i in 0..<result.starts.count {
                let bytes = Array(result.slice(from: i, count: 1))
                if let id = idFromAttributes(bytes) { byId[id] = bytes }
            }
        } catch let e as SoqlError {
            throw APIError(400, e.kind == .invalidField ? "INVALID_FIELD" : "MALFORMED_QUERY", e.message)
        }
        return ids.map { byId[$0] }
    }

    /// The id at the end of `"url":"/services/data/vX/sobjects/T/<id>"`, the first url in a record.
    private func idFromAttributes(_ bytes: [UInt8]) -> String? {
        let key = Array("\"url\":\"".utf8)
        guard bytes.count > key.count else { return nil }
        var i = 0
        while i + key.count <= bytes.count {
            if bytes[i] == key[0], Array(bytes[i..<(i + key.count)]) == key {
                var j = i + key.count
                while j < bytes.count, bytes[j] != 34 { j += 1 }
                let url = String(decoding: bytes[(i + key.count)..<j], as: UTF8.self)
                return url.split(separator: "/").last.map(String.init)
            }
            i += 1
        }
        return nil
    }

    // MARK: SOSL

    func search(_ req: APIRequest, version: String) throws -> APIResponse {
        guard let text = req.query["q"], !text.isEmpty else {
            throw APIError(400, "MALFORMED_SEARCH", "No search term found. The search term must be enclosed in braces.")
        }
        let sosl = try SoslQuery.parse(text, schema: schema)
        var w = JSONWriter()
        w.raw("{\"searchRecords\":[")
        var first = true
        var remaining = sosl.limit
        for spec in sosl.returning where remaining > 0 {
            let fields = sosl.searchFields(spec.object)
            var q = spec.query
            let cond = Condition.search(terms: sosl.likePatterns, fields: fields)
            q.condition = q.condition.map { .and($0, cond) } ?? cond
            q.limit = min(q.limit ?? remaining, remaining)
            let result: QueryResult
            do {
                result = try store.run(try SoqlCompiler(schema: schema, version: version).compile(q, includeDeleted: false))
            } catch let e as SoqlError {
                throw apiError(e, text: spec.text)
            } catch let e as SQLiteError where e.code == 1 {
                throw APIError(400, "MALFORMED_SEARCH", "Search is too complex: \(e.message)")
            }
            if result.count > 0 {
                if !first { w.raw(",") }
                w.bytes.append(contentsOf: result.slice(from: 0, count: result.count))
                first = false
            }
            remaining -= result.count
        }
        w.raw("]}")
        return APIResponse(status: 200, body: w.bytes)
    }
}

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
