import Foundation
import SyncStoreSupport

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
        cursors[locator] = Cursor(result: result, batchSize: batchSize, lastUsed: Clock.nowMillis())
        return locator
    }

    func get(_ locator: String) -> Cursor? {
        guard var c = cursors[locator] else { return nil }
        c.lastUsed = Clock.nowMillis()
        cursors[locator] = c
        return c
    }

    /// Idle cursors expire as in the API; the oldest go first past a memory budget.
    private func evict() {
        let now = Clock.nowMillis()
        cursors = cursors.filter { now - $0.value.lastUsed < CursorStore.idleMillis }
        var total = cursors.values.reduce(0) { $0 + $1.result.data.count }
        while total > CursorStore.maxBytes, let oldest = cursors.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            total -= oldest.value.result.data.count
            cursors[oldest.key] = nil
        }
    }
}

extension API {
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
            return APIResponse(status: 200, body: page(cursor.result, from: offset, batch: batch, locator: String(locatorPart[..<dash]), kind: kind, version: version,
                                                       repeatFrom: req.repeatLocator ? offset : nil))
        }
        guard let text = req.query["q"], !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw APIError(400, "MALFORMED_QUERY", "A query string has to be specified")
        }
        let result: QueryResult
        let hasChildQuery: Bool
        do {
            let q = try SoqlParser.parse(text)
            hasChildQuery = q.items.contains { if case .subquery = $0 { return true }; return false }
            let compiled = try SoqlCompiler(schema: schema, version: version).compile(q, includeDeleted: all)
            result = try store.run(compiled)
        } catch let e as SoqlError {
            throw apiError(e, text: text)
        } catch let e as SQLiteError where e.code == 1 {
            // SQLITE_ERROR while preparing: a query too large or deep for SQLite's limits.
            throw APIError(400, "MALFORMED_QUERY", "Query is too complex: \(e.message)")
        }
        let batch = batchSize(req) ?? defaultBatchSize
        var locator: String?
        let paged = hasChildQuery ? try pageChildren(result, version: version) : result
        // Fault `repeat-locator`: even a one-page result gets a locator, so its next page can be itself.
        let repeating = req.repeatLocator && paged.countOnly == nil
        if paged.count > batch || repeating { locator = cursors.open(paged, batchSize: batch) }
        return APIResponse(status: 200, body: page(paged, from: 0, batch: batch, locator: locator, kind: kind, version: version,
                                                   repeatFrom: repeating ? 0 : nil))
    }

    /// Child subquery results longer than `childBatchSize` are cut there, as the API does: the
    /// nested result says `"done":false` and its `nextRecordsUrl` (a query locator of its own)
    /// serves the remaining children.
    func pageChildren(_ result: QueryResult, version: String) throws -> QueryResult {
        var out = QueryResult()
        for i in 0..<result.starts.count {
            let record = Array(result.slice(from: i, count: 1))
            out.starts.append(out.data.count)
            defer { out.data.append(UInt8(ascii: ",")) }
            guard case .object(var pairs) = try JSON.parse(record) else {
                out.data.append(contentsOf: record)
                continue
            }
            for (k, (key, value)) in pairs.enumerated() {
                guard case .object = value, let records = value["records"]?.arrayValue, value["done"] != nil,
                      records.count > childBatchSize else { continue }
                var children = QueryResult()
                for record in records {
                    children.starts.append(children.data.count)
                    var w = JSONWriter()
                    w.value(record)
                    children.data.append(contentsOf: w.bytes)
                    children.data.append(UInt8(ascii: ","))
                }
                let locator = cursors.open(children, batchSize: defaultBatchSize)
                pairs[k] = (key, .object([
                    ("totalSize", .int(Int64(records.count))), ("done", .bool(false)),
                    ("nextRecordsUrl", .string("/services/data/v\(version)/query/\(locator)-\(childBatchSize)")),
                    ("records", .array(Array(records.prefix(childBatchSize)))),
                ]))
            }
            var w = JSONWriter()
            w.value(.object(pairs))
            out.data.append(contentsOf: w.bytes)
        }
        return out
    }

    /// `{"totalSize":N,"done":B,"nextRecordsUrl":"...","records":[...]}` written straight from the snapshot.
    /// `repeatFrom` (fault `repeat-locator`): the next page named is the one at that offset, the
    /// page being served, and the answer is never `done`.
    func page(_ r: QueryResult, from: Int, batch: Int, locator: String?, kind: String, version: String, repeatFrom: Int? = nil) -> [UInt8] {
        var end = min(from + batch, r.starts.count)
        var done = r.countOnly != nil || end >= r.starts.count
        if let repeatFrom, locator != nil, r.countOnly == nil {
            end = repeatFrom
            done = false
        }
        let records = r.slice(from: from, count: batch)
        var w = JSONWriter(capacity: records.count + 256)
        w.raw("{\"totalSize\":\(r.count),\"done\":\(done ? "true" : "false"),")
        if !done, let locator {
            w.raw("\"nextRecordsUrl\":\"/services/data/v\(version)/\(kind)/\(locator)-\(end)\",")
        }
        w.raw("\"records\":[")
        w.bytes.append(contentsOf: records)
        w.raw("]}")
        return w.bytes
    }

    /// Record JSON for `ids` (in that order; nil for missing or deleted), with `fields` or all fields;
    /// `Id` is always there (after the fields asked for), as in an org's answer.
    func retrieve(_ obj: SObjectDef, ids: [String], fields: [String]?, version: String) throws -> [[UInt8]?] {
        var names = fields ?? obj.fields.map(\.name)
        if !names.contains(where: { $0.lowercased() == "id" }) { names.append("Id") }
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
