import Foundation
import SyncStoreSupport

/// The Datasync (Azure Mobile Apps / CommunityToolkit Datasync) table protocol, served under
/// `/tables/{table}` when the server runs with `--datasync`. Every table lives in one SQLite
/// table, `datasync_rows`; a table exists as soon as a row is written to it. Entities carry the
/// system properties `id` (client-chosen or generated), `updatedAt` (ISO-8601 with
/// milliseconds, set by the server from the same monotonic write clock as the Salesforce
/// stamps, so `--clock-offset` shifts it), `createdAt`, `version` (opaque, new on every write)
/// and `deleted` (soft delete: the row stays, listed with `__includedeleted=true`).
/// Runs with the store lock held (API.route), on the dev server's one connection.
final class DatasyncTables {
    let store: Store
    /// Most items one answer carries; more are paged through `nextLink`.
    let pageSize: Int
    private var lastVersion: Int64 = 0

    init(store: Store, pageSize: Int) throws {
        self.store = store
        self.pageSize = pageSize
        try store.locked {
            try store.db.exec("""
                CREATE TABLE IF NOT EXISTS datasync_rows (tbl TEXT NOT NULL, id TEXT NOT NULL, updatedAt TEXT NOT NULL,
                  createdAt TEXT NOT NULL, version TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL,
                  PRIMARY KEY (tbl, id));
                CREATE INDEX IF NOT EXISTS ix_datasync_rows_sync ON datasync_rows(tbl, updatedAt, id)
                """)
            let s = try store.db.prepare("SELECT coalesce(max(CAST(substr(version, 2) AS INTEGER)), 0), max(updatedAt) FROM datasync_rows", cached: false)
            if try s.step() {
                lastVersion = s.int64(0)
                if let stamp = s.optionalText(1), let ms = Timestamp.parse(stamp) { store.clock.advance(past: ms) }
            }
        }
    }

    static let systemKeys: Set<String> = ["id", "updatedat", "createdat", "version", "deleted"]

    private func nextVersion() -> String {
        lastVersion += 1
        return "v\(lastVersion)"
    }

    // MARK: seeding

    /// Parses `todo=300` (all rows share one updatedAt) or `todo=300/10` (runs of 10 rows share
    /// one), several separated by commas.
    static func parseSeed(_ spec: String) throws -> [(table: String, count: Int, group: Int)] {
        try spec.split(separator: ",").map { part in
            let kv = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: .whitespaces) }
            let numbers = kv.count == 2 ? kv[1].split(separator: "/").map { Int($0) } : []
            guard kv.count == 2, DatasyncFilter.isName(kv[0]), let n = numbers.first ?? nil, (0...1_000_000).contains(n),
                  numbers.count <= 2, (numbers.count == 1 || (numbers[1] ?? 0) >= 1) else {
                throw DevServerError(kind: .badInput, message: "--datasync-seed: expected table=N[/G] (G rows share each updatedAt), got '\(part)'")
            }
            return (kv[0], n, numbers.count == 2 ? (numbers[1] ?? n) : max(n, 1))
        }
    }

    /// Seeds a table only while it is empty: ids `seed-<table>-000001`..., fields `title`,
    /// `complete`, `rank`; `group` rows share each updatedAt (1 ms apart between groups).
    func seed(table: String, count: Int, group: Int) throws -> Int {
        try store.locked {
            let existing = try store.db.prepare("SELECT count(*) FROM datasync_rows WHERE tbl = ?1", cached: false)
            try existing.bind([.text(table)])
            guard count > 0, try existing.step(), existing.int64(0) == 0 else { return 0 }
            let base = store.clock.next()
            let insert = try store.db.prepare("INSERT INTO datasync_rows (tbl, id, updatedAt, createdAt, version, deleted, data) VALUES (?1, ?2, ?3, ?3, ?4, 0, ?5)")
            try store.db.savepoint {
                for i in 0..<count {
                    let stamp = base + Int64(i / group)
                    let data = JSON.object([("title", .string("Item \(i + 1)")), ("complete", .bool(i % 3 == 0)), ("rank", .int(Int64(i + 1)))])
                    let digits = String(i + 1)
                    let id = "seed-\(table)-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
                    try insert.bind([.text(table), .text(id), .text(Timestamp.format(stamp)), .text(nextVersion()), .text(data.text)])
                    try insert.run()
                    store.clock.advance(past: stamp)
                }
            }
            return count
        }
    }

    // MARK: routing

    /// `/tables/{table}[/{id}]`; the store lock is held. `baseURL` starts `nextLink`s.
    func handle(_ req: APIRequest, baseURL: String) throws -> APIResponse {
        self.baseURL = baseURL
        let s = req.segments
        guard s.count == 2 || s.count == 3, DatasyncFilter.isName(s[1]) else {
            return problem(404, "No such table: tables are named with letters, digits and '_'")
        }
        let table = s[1]
        if s.count == 2 {
            switch req.method {
            case "GET": return try list(req, table)
            case "POST": return try create(req, table)
            default: return problem(405, "\(req.method) is not allowed on /tables/\(table): use GET or POST")
            }
        }
        let id = s[2]
        switch req.method {
        case "GET": return try read(req, table, id)
        case "PUT": return try replace(req, table, id)
        case "DELETE": return try delete(req, table, id)
        default: return problem(405, "\(req.method) is not allowed on an entity: use GET, PUT or DELETE")
        }
    }

    func problem(_ status: Int, _ message: String) -> APIResponse {
        APIResponse(status: status, json: .object([("status", .int(Int64(status))), ("message", .string(message))]))
    }

    // MARK: rows

    private struct Row {
        let id: String, updatedAt: String, createdAt: String, version: String, deleted: Bool, data: String

        var entity: JSON {
            var pairs: [(String, JSON)] = [("id", .string(id)), ("updatedAt", .string(updatedAt)), ("createdAt", .string(createdAt)),
                                           ("version", .string(version)), ("deleted", .bool(deleted))]
            if let fields = (try? JSON.parse(data))?.objectValue { pairs += fields }
            return .object(pairs)
        }

        var etag: (String, String) { ("ETag", "\"\(version)\"") }
    }

    private static let rowColumns = "id, updatedAt, createdAt, version, deleted, data"

    private func row(_ s: Statement) -> Row {
        Row(id: s.text(0), updatedAt: s.text(1), createdAt: s.text(2), version: s.text(3), deleted: s.int64(4) != 0, data: s.text(5))
    }

    private func find(_ table: String, _ id: String) throws -> Row? {
        let s = try store.db.prepare("SELECT \(DatasyncTables.rowColumns) FROM datasync_rows WHERE tbl = ?1 AND id = ?2")
        defer { s.reset() }
        try s.bind([.text(table), .text(id)])
        return try s.step() ? row(s) : nil
    }

    /// The request's entity: a JSON object; its user fields (system properties dropped) and its
    /// `deleted` (false when absent or null; nil when not a boolean: the entity is unreadable).
    private func body(_ req: APIRequest) throws -> (id: String?, fields: JSON, deleted: Bool)? {
        guard let json = try? JSON.parse(req.body), let pairs = json.objectValue else { return nil }
        var id: String?
        if let v = json["id"] { id = v.stringValue ?? (v.isNull ? nil : "") }
        var deleted = false
        if let v = pairs.first(where: { $0.0.lowercased() == "deleted" })?.1, !v.isNull {
            guard let flag = v.boolValue else { return nil }
            deleted = flag
        }
        return (id, .object(pairs.filter { !DatasyncTables.systemKeys.contains($0.0.lowercased()) }), deleted)
    }

    /// `__includedeleted=true`: soft-deleted entities are in view (listed, read, replaced).
    private func includesDeleted(_ req: APIRequest) -> Bool { req.query["__includedeleted"]?.lowercased() == "true" }

    /// An `If-Match` the entity does not satisfy (none, or `*`, always is).
    private func preconditionFails(_ req: APIRequest, _ row: Row) -> Bool {
        guard let match = req.headers["if-match"]?.trimmingCharacters(in: .whitespaces), !match.isEmpty, match != "*" else { return false }
        let tags = match.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return !tags.contains("\"\(row.version)\"") && !tags.contains("W/\"\(row.version)\"")
    }

    private func answer(_ status: Int, _ row: Row) -> APIResponse {
        APIResponse(status: status, headers: [row.etag], json: row.entity)
    }

    // MARK: operations

    private func read(_ req: APIRequest, _ table: String, _ id: String) throws -> APIResponse {
        guard let row = try find(table, id) else { return problem(404, "No entity \(id) in \(table)") }
        if row.deleted && !includesDeleted(req) { return problem(410, "Entity \(id) in \(table) is deleted") }
        return answer(200, row)
    }

    private func create(_ req: APIRequest, _ table: String) throws -> APIResponse {
        guard let parsed = try body(req) else { return problem(400, "The body must be a JSON object (the entity)") }
        let (given, fields, _) = parsed
        if let given, given.isEmpty || given.utf8.count > 255 { return problem(400, "\"id\" must be a non-empty string of at most 255 bytes") }
        let id = given ?? UUID().uuidString.lowercased()
        // Client ids make a retried create safe: the second attempt meets the first one's row.
        if let existing = try find(table, id) { return answer(409, existing) }
        let stamp = Timestamp.format(store.clock.next())
        let version = nextVersion()
        let s = try store.db.prepare("INSERT INTO datasync_rows (tbl, id, updatedAt, createdAt, version, deleted, data) VALUES (?1, ?2, ?3, ?3, ?4, 0, ?5)")
        try s.bind([.text(table), .text(id), .text(stamp), .text(version), .text(fields.text)])
        try s.run()
        guard let row = try find(table, id) else { return problem(500, "The created entity could not be read back") }
        var r = answer(201, row)
        r.headers.append(("Location", "\(baseURL)/tables/\(table)/\(id)"))
        return r
    }

    /// As CommunityToolkit Datasync's TableController.ReplaceAsync: a soft-deleted entity is 410
    /// (before any If-Match) unless the query has `__includedeleted=true`; then it is replaced
    /// like any other, the body's `deleted` included, so `"deleted": false` (or none) undeletes it.
    private func replace(_ req: APIRequest, _ table: String, _ id: String) throws -> APIResponse {
        guard let parsed = try body(req) else { return problem(400, "The body must be a JSON object (the entity; \"deleted\" a boolean)") }
        let (given, fields, deleted) = parsed
        if let given, given != id { return problem(400, "The body's id '\(given)' is not the id in the path '\(id)'") }
        guard let row = try find(table, id) else { return problem(404, "No entity \(id) in \(table)") }
        if row.deleted && !includesDeleted(req) { return problem(410, "Entity \(id) in \(table) is deleted") }
        if preconditionFails(req, row) { return answer(412, row) }
        try write(table, id, data: fields.text, deleted: deleted)
        guard let updated = try find(table, id) else { return problem(500, "The entity could not be read back") }
        return answer(200, updated)
    }

    private func delete(_ req: APIRequest, _ table: String, _ id: String) throws -> APIResponse {
        guard let row = try find(table, id) else { return problem(404, "No entity \(id) in \(table)") }
        // Already deleted: 410 whatever the If-Match (TableController.DeleteAsync checks it first).
        if row.deleted { return problem(410, "Entity \(id) in \(table) is deleted") }
        if preconditionFails(req, row) { return answer(412, row) }
        try write(table, id, data: row.data, deleted: true)
        return APIResponse(status: 204, body: [])
    }

    /// Every write takes a new updatedAt (the monotonic write clock) and a new version.
    private func write(_ table: String, _ id: String, data: String, deleted: Bool) throws {
        let s = try store.db.prepare("UPDATE datasync_rows SET data = ?3, deleted = ?4, updatedAt = ?5, version = ?6 WHERE tbl = ?1 AND id = ?2")
        try s.bind([.text(table), .text(id), .text(data), .int(deleted ? 1 : 0), .text(Timestamp.format(store.clock.next())), .text(nextVersion())])
        try s.run()
    }

    var baseURL = "http://127.0.0.1"

    /// `GET /tables/{t}`: `$filter`, `$orderby`, `$top`, `$skip`, `$count=true`,
    /// `__includedeleted=true`; at most `pageSize` items, then a `nextLink` with the same query
    /// and the next `$skip`.
    private func list(_ req: APIRequest, _ table: String) throws -> APIResponse {
        let q = req.query
        var conditions = ["tbl = ?1"]
        var binds: [SQLValue] = [.text(table)]
        if !includesDeleted(req) { conditions.append("deleted = 0") }
        if let filter = q["$filter"], !filter.trimmingCharacters(in: .whitespaces).isEmpty {
            do {
                let compiled = try DatasyncFilter.compile(filter, firstBind: binds.count + 1)
                conditions.append(compiled.sql)
                binds += compiled.binds
            } catch let e as DatasyncFilterError {
                return problem(400, e.message)
            }
        }
        var order: [String] = []
        if let orderby = q["$orderby"], !orderby.isEmpty {
            for term in orderby.split(separator: ",") {
                let words = term.split(separator: " ").map(String.init)
                guard words.count == 1 || (words.count == 2 && ["asc", "desc"].contains(words[1].lowercased())),
                      let column = try? DatasyncFilter.column(words[0]) else {
                    return problem(400, "$orderby: cannot read '\(term)' (property [asc|desc], comma separated)")
                }
                order.append("\(column) \(words.count == 2 ? words[1].uppercased() : "ASC")")
            }
        }
        if !order.contains(where: { $0.hasPrefix("id ") }) { order.append("id ASC") } // a stable order for paging
        func nonNegative(_ key: String) -> Int?? {
            guard let v = q[key] else { return .some(nil) }
            guard let n = Int(v), n >= 0 else { return nil }
            return .some(n)
        }
        guard let top = nonNegative("$top"), let skipValue = nonNegative("$skip") else {
            return problem(400, "$top and $skip must be whole numbers (0 or more)")
        }
        let skip = skipValue ?? 0
        let limit = min(top ?? Int.max, pageSize)
        let whereSQL = conditions.joined(separator: " AND ")
        let sql = "SELECT \(DatasyncTables.rowColumns) FROM datasync_rows WHERE \(whereSQL) ORDER BY \(order.joined(separator: ", ")) LIMIT ?\(binds.count + 1) OFFSET ?\(binds.count + 2)"
        // A filter SQLite cannot run (too complex for its parser): the request's fault.
        guard let s = try? store.db.prepare(sql, cached: false) else { return problem(400, "$filter is too complex: \(store.db.lastError)") }
        try s.bind(binds + [.int(Int64(limit + 1)), .int(Int64(skip))])
        var rows: [Row] = []
        while try s.step() { rows.append(row(s)) }
        let more = rows.count > limit && (top ?? Int.max) > limit
        if rows.count > limit { rows.removeLast(rows.count - limit) }
        var pairs: [(String, JSON)] = [("items", .array(rows.map(\.entity)))]
        if q["$count"]?.lowercased() == "true" {
            let c = try store.db.prepare("SELECT count(*) FROM datasync_rows WHERE \(whereSQL)", cached: false)
            try c.bind(binds)
            pairs.append(("count", .int(try c.step() ? c.int64(0) : 0)))
        }
        if more {
            var next = q
            next["$skip"] = String(skip + rows.count)
            if let top { next["$top"] = String(top - rows.count) }
            let query = next.sorted { $0.key < $1.key }.map { "\(DatasyncTables.encode($0.key))=\(DatasyncTables.encode($0.value))" }
            pairs.append(("nextLink", .string("\(baseURL)/tables/\(table)?\(query.joined(separator: "&"))")))
        }
        return APIResponse(status: 200, json: .object(pairs))
    }

    /// RFC 3986 unreserved characters: all else is percent-encoded in a nextLink's query.
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func encode(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? s }
}
