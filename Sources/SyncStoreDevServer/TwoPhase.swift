import Foundation
import SyncStoreSupport

/// The two-phase fetch/synchronise protocol (`--twophase`; docs/sync.md#two-phase), for apps
/// whose rows have client-made UUID keys and a `last_update` stamp:
///
///     GET  /twophase/fetch[?tables=a,b]  -> {"<table>": [{"<id key>": id, "last_update": ts}]}
///     POST /twophase/synchronise  {"add": {"<table>": [row]}, "update": {...}, "delete":
///          {"<table>": [id]}, "get": {"<table>": [id]}}
///       -> {"add": {"<table>": [{"<id key>", "last_update", "status", "row"?}]}, "update": ...,
///           "delete": {"<table>": [{"<id key>", "status"}]}, "get": {"<table>": [row]}}
///
/// `add` inserts; an id that exists already is not a second row: the same content is
/// `exists` (a retried add), other content is taken as an update. `update` is applied when its
/// `last_update` is newer than the stored one (or equal with the same content: a retry),
/// otherwise it is `stale` and the answer carries the server's row; an update of an id the
/// server does not have is `missing`. A row without `last_update` is stamped with the server's
/// clock (`--clock-offset` applies). The whole call is one transaction, applied in the order
/// add, update, delete, then get (so `get` sees the call's own writes). Same bearer token as the
/// Salesforce routes; faults apply as to every route.
///
/// `--twophase-plain` (or `PUT /__devserver/twophase` `plain` with `--admin`) answers as a server
/// written from the protocol's description would: like the fetch, per table an array of the full
/// rows (those asked for in `get`, then the stored rows of what was added or updated; a row
/// deleted meanwhile is left out), `{"<table>": [row]}`, and an `add` of an id it holds already
/// refuses the whole call: 409 `DUPLICATE_VALUE`, nothing applied.
final class TwoPhase: @unchecked Sendable {
    enum Format: String { case datetime, iso8601 }

    struct Table {
        let name: String
        let idKey: String
        let format: Format

        func format(_ millis: Int64) -> String {
            format == .datetime ? Timestamp.formatSpaced(millis) : Timestamp.format(millis)
        }
    }

    static let lastUpdate = "last_update"
    static let defaultTables = "todo:id:datetime,budget:bid:iso8601"
    let tables: [Table]
    private let store: Store
    /// The plain answer shape and 409 on a repeated add (under the store's lock).
    private var plainAnswers = false

    /// `--twophase-plain`, or the admin switch: which answer shape phase 2 gives.
    func setPlain(_ on: Bool) { store.locked { plainAnswers = on } }
    var plain: Bool { store.locked { plainAnswers } }

    init(store: Store, spec: String) throws {
        self.store = store
        tables = try TwoPhase.parseTables(spec)
        try store.db.exec("CREATE TABLE IF NOT EXISTS twophase_rows (tbl TEXT NOT NULL, id TEXT NOT NULL, last_update INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (tbl, id))")
    }

    /// `NAME[:IDKEY[:FORMAT]]` comma separated; IDKEY defaults to `id`, FORMAT (`datetime`:
    /// `YYYY-MM-DD HH:MM:SS`, or `iso8601`) to datetime.
    static func parseTables(_ spec: String) throws -> [Table] {
        var out: [Table] = []
        for part in spec.split(separator: ",") {
            let f = part.split(separator: ":", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let name = f[0]
            let valid = { (s: String) in !s.isEmpty && s.utf8.allSatisfy { $0 == 95 || ($0 >= 48 && $0 <= 57) || ($0 | 32 >= 97 && $0 | 32 <= 122) } }
            guard f.count <= 3, valid(name), f.count < 2 || valid(f[1]),
                  f.count < 3 || Format(rawValue: f[2]) != nil, !out.contains(where: { $0.name == name }) else {
                throw DevServerError(kind: .badInput, message: "--twophase-tables: '\(part)' must be NAME[:IDKEY[:datetime|iso8601]] (letters, digits, _; each name once)")
            }
            out.append(Table(name: name, idKey: f.count > 1 ? f[1] : "id", format: f.count > 2 ? Format(rawValue: f[2]) ?? .datetime : .datetime))
        }
        guard !out.isEmpty else { throw DevServerError(kind: .badInput, message: "--twophase-tables names no table") }
        return out
    }

    func table(_ name: String) throws -> Table {
        guard let t = tables.first(where: { $0.name == name }) else {
            throw APIError(400, "INVALID_TABLE", "No table '\(name)': this server has \(tables.map(\.name).joined(separator: ", "))")
        }
        return t
    }

    /// `/twophase/fetch` and `/twophase/synchronise`; the caller checked the token.
    func route(_ req: APIRequest) throws -> APIResponse {
        guard req.segments.count == 2 else { throw APIError.notFound }
        switch req.segments[1] {
        case "fetch":
            guard req.method == "GET" else { throw APIError.methodNotAllowed(req.method, allowed: ["GET"]) }
            let names = req.query["tables"].map { $0.split(separator: ",").map(String.init) } ?? tables.map(\.name)
            let chosen = try names.map(table)
            return try store.locked { APIResponse(status: 200, json: try fetch(chosen)) }
        case "synchronise", "synchronize":
            guard req.method == "POST" else { throw APIError.methodNotAllowed(req.method, allowed: ["POST"]) }
            let body = try req.json()
            return try store.locked { APIResponse(status: 200, json: try synchronise(body)) }
        default:
            throw APIError.notFound
        }
    }

    private func fetch(_ chosen: [Table]) throws -> JSON {
        let s = try store.db.prepare("SELECT id, last_update FROM twophase_rows WHERE tbl = ?1 ORDER BY last_update DESC, id")
        return .object(try chosen.map { t in
            try s.bind([.text(t.name)])
            var list: [JSON] = []
            while try s.step() {
                list.append(.object([(t.idKey, .string(s.text(0))), (TwoPhase.lastUpdate, .string(t.format(s.int64(1))))]))
            }
            s.reset()
            return (t.name, .array(list))
        })
    }

    /// One operation of a synchronise call, checked before anything is written.
    private struct Op {
        let table: Table
        let id: String
        let row: [(String, JSON)]?
        let stamp: Int64?
    }

    /// `{"<table>": [...]}` of one operation key; an empty object stands for no table (the
    /// protocol's own examples send `"invitations": {}`).
    private func section(_ body: JSON, _ key: String, rows: Bool) throws -> [Op] {
        guard let value = body[key], !value.isNull else { return [] }
        guard let tablesJSON = value.objectValue else { throw APIError(400, "INVALID_INPUT", "\"\(key)\" must be an object of tables") }
        var ops: [Op] = []
        for (name, items) in tablesJSON {
            if items.objectValue?.isEmpty ?? false { continue }
            let t = try table(name)
            guard let list = items.arrayValue else { throw APIError(400, "INVALID_INPUT", "\"\(key)\".\(name) must be an array") }
            for item in list {
                if rows {
                    guard let pairs = item.objectValue, let id = item[t.idKey]?.stringValue, TwoPhase.validId(id) else {
                        throw APIError(400, "INVALID_INPUT", "Each row of \"\(key)\".\(name) must be an object whose \"\(t.idKey)\" is a non-empty id of at most 64 characters")
                    }
                    var stamp: Int64? = nil
                    if let ts = item[TwoPhase.lastUpdate], !ts.isNull {
                        guard let text = ts.stringValue, let ms = Timestamp.parse(text) else {
                            throw APIError(400, "INVALID_INPUT", "\"\(TwoPhase.lastUpdate)\" of \(name) row \(id) must be a timestamp (YYYY-MM-DD HH:MM:SS or ISO-8601)")
                        }
                        // As the table shows it: a datetime table keeps whole seconds.
                        stamp = Timestamp.parse(t.format(ms))
                    }
                    ops.append(Op(table: t, id: id, row: pairs.filter { $0.0 != TwoPhase.lastUpdate }, stamp: stamp))
                } else {
                    guard let id = item.stringValue, TwoPhase.validId(id) else {
                        throw APIError(400, "INVALID_INPUT", "\"\(key)\".\(name) must list ids (non-empty strings of at most 64 characters)")
                    }
                    ops.append(Op(table: t, id: id, row: nil, stamp: nil))
                }
            }
        }
        return ops
    }

    static func validId(_ id: String) -> Bool { !id.isEmpty && id.utf8.count <= 64 }

    private struct Stored {
        let stamp: Int64
        let row: [(String, JSON)]
    }

    private func load(_ t: Table, _ id: String) throws -> Stored? {
        let s = try store.db.prepare("SELECT last_update, body FROM twophase_rows WHERE tbl = ?1 AND id = ?2")
        try s.bind([.text(t.name), .text(id)])
        guard try s.step() else { return nil }
        let stamp = s.int64(0)
        let body = try JSON.parse(s.text(1))
        return Stored(stamp: stamp, row: body.objectValue ?? [])
    }

    private func save(_ t: Table, _ id: String, stamp: Int64, row: [(String, JSON)]) throws {
        let s = try store.db.prepare("INSERT OR REPLACE INTO twophase_rows (tbl, id, last_update, body) VALUES (?1, ?2, ?3, ?4)")
        try s.bind([.text(t.name), .text(id), .int(stamp), .text(JSON.object(row).text)])
        try s.run()
    }

    /// A row as answered: its fields with `last_update` in the table's format.
    private func rowJSON(_ t: Table, _ stored: Stored) -> JSON {
        .object(stored.row + [(TwoPhase.lastUpdate, .string(t.format(stored.stamp)))])
    }

    /// Same fields and values, in any key order.
    private static func sameContent(_ a: [(String, JSON)], _ b: [(String, JSON)]) -> Bool {
        canonical(.object(a)).serialized == canonical(.object(b)).serialized
    }

    private static func canonical(_ v: JSON) -> JSON {
        switch v {
        case .object(let pairs): return .object(pairs.map { ($0.0, canonical($0.1)) }.sorted { $0.0 < $1.0 })
        case .array(let items): return .array(items.map(canonical))
        case .int(let i): return .double(Double(i))
        default: return v
        }
    }

    private func now(_ t: Table) -> Int64 { Timestamp.parse(t.format(store.clock.next())) ?? store.clock.next() }

    /// Writes `op` when it is newer than what is stored (or the same content at the same
    /// stamp, a retry); otherwise `stale` with the stored row.
    private func write(_ op: Op, creating: Bool) throws -> (String, JSON?) {
        let t = op.table
        let row = op.row ?? []
        guard let stored = try load(t, op.id) else {
            guard creating else { return ("missing", nil) }
            try save(t, op.id, stamp: op.stamp ?? now(t), row: row)
            return ("created", nil)
        }
        let same = TwoPhase.sameContent(stored.row, row)
        if creating && same { return ("exists", nil) }
        let stamp = op.stamp ?? now(t)
        if stamp > stored.stamp || (stamp == stored.stamp && same) {
            try save(t, op.id, stamp: stamp, row: row)
            return ("updated", nil)
        }
        return ("stale", rowJSON(t, stored))
    }

    private func synchronise(_ body: JSON) throws -> JSON {
        guard body.objectValue != nil else { throw APIError(400, "INVALID_INPUT", "The body must be {\"add\", \"update\", \"delete\", \"get\"}") }
        let adds = try section(body, "add", rows: true)
        let updates = try section(body, "update", rows: true)
        let deletes = try section(body, "delete", rows: false)
        let gets = try section(body, "get", rows: false)
        if plainAnswers { return try synchronisePlain(adds: adds, updates: updates, deletes: deletes, gets: gets) }
        // Results per operation, then per table in the order the tables first appear.
        func grouped(_ items: [(Table, JSON)]) -> JSON {
            var order: [String] = []
            var byTable: [String: [JSON]] = [:]
            for (t, item) in items {
                if byTable[t.name] == nil { order.append(t.name) }
                byTable[t.name, default: []].append(item)
            }
            return .object(order.map { ($0, .array(byTable[$0] ?? [])) })
        }
        return try store.db.savepoint {
            func outcome(_ op: Op, creating: Bool) throws -> (Table, JSON) {
                let (status, serverRow) = try write(op, creating: creating)
                let stamp = try load(op.table, op.id).map { JSON.string(op.table.format($0.stamp)) } ?? .null
                var pairs: [(String, JSON)] = [(op.table.idKey, .string(op.id)), (TwoPhase.lastUpdate, stamp), ("status", .string(status))]
                if let serverRow { pairs.append(("row", serverRow)) }
                return (op.table, .object(pairs))
            }
            let added = try adds.map { try outcome($0, creating: true) }
            let updated = try updates.map { try outcome($0, creating: false) }
            let deleted = try deletes.map { op -> (Table, JSON) in
                let s = try store.db.prepare("DELETE FROM twophase_rows WHERE tbl = ?1 AND id = ?2")
                try s.bind([.text(op.table.name), .text(op.id)])
                try s.run()
                return (op.table, .object([(op.table.idKey, .string(op.id)), ("status", .string(store.db.changes > 0 ? "deleted" : "missing"))]))
            }
            let got = try gets.compactMap { op -> (Table, JSON)? in
                try load(op.table, op.id).map { (op.table, rowJSON(op.table, $0)) }
            }
            return .object([("add", grouped(added)), ("update", grouped(updated)), ("delete", grouped(deleted)), ("get", grouped(got))])
        }
    }

    /// The plain shape: a repeated add refuses the whole call; the answer is per table the rows
    /// of the ids sent in add, update and get, as stored after the call (a row deleted is left out).
    private func synchronisePlain(adds: [Op], updates: [Op], deletes: [Op], gets: [Op]) throws -> JSON {
        var seen = Set<String>()
        for op in adds {
            let exists = try load(op.table, op.id) != nil
            guard !exists, seen.insert(op.table.name + "\u{0}" + op.id).inserted else {
                throw APIError(409, "DUPLICATE_VALUE", "add: \(op.table.name) already has id \(op.id); nothing was applied")
            }
        }
        return try store.db.savepoint {
            for op in adds { _ = try write(op, creating: true) }
            for op in updates { _ = try write(op, creating: false) }
            for op in deletes {
                let s = try store.db.prepare("DELETE FROM twophase_rows WHERE tbl = ?1 AND id = ?2")
                try s.bind([.text(op.table.name), .text(op.id)])
                try s.run()
            }
            var order: [String] = []
            var ids: [String: [String]] = [:]
            var listed = Set<String>()
            for op in gets + adds + updates + deletes where ids[op.table.name] == nil {
                order.append(op.table.name)
                ids[op.table.name] = []
            }
            for op in gets + adds + updates where listed.insert(op.table.name + "\u{0}" + op.id).inserted {
                ids[op.table.name, default: []].append(op.id)
            }
            return .object(try order.map { name in
                let t = try table(name)
                return (name, .array(try (ids[name] ?? []).compactMap { id in try load(t, id).map { rowJSON(t, $0) } }))
            })
        }
    }

    /// `--twophase-seed N`: N rows in each empty table, the same on every start.
    func seed(_ count: Int) throws -> Int {
        var rng = SplitMix64(seed: 22)
        var made = 0
        try store.locked {
            try store.db.savepoint {
                for t in tables {
                    let c = try store.db.prepare("SELECT count(*) FROM twophase_rows WHERE tbl = ?1")
                    try c.bind([.text(t.name)])
                    guard try c.step(), c.int64(0) == 0 else { continue }
                    c.reset()
                    let base = Timestamp.parse(t.format(store.clock.next())) ?? 0
                    for i in 0..<count {
                        var hex = ""
                        for _ in 0..<2 { hex += String(String(rng.next(), radix: 16).suffix(16)).leftPadded(16) }
                        let h = Array(hex)
                        let id = String(h[0..<8]) + "-" + String(h[8..<12]) + "-4" + String(h[13..<16]) + "-a" + String(h[17..<20]) + "-" + String(h[20..<32])
                        let row: [(String, JSON)] = [(t.idKey, .string(id)), ("title", .string("\(t.name) \(i + 1)")), ("done", .bool(i % 3 == 0))]
                        // One second apart, oldest first: ties and order are both seen.
                        try save(t, id, stamp: base - Int64(count - i) * 1000, row: row)
                        made += 1
                    }
                }
            }
        }
        return made
    }
}

private extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
