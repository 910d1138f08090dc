import Foundation
import SyncStoreSupport

/// Change Data Capture: every committed write of an sObject record becomes a change event in
/// `devserver_events` (in the same SQLite database, so `--db` keeps them), served by the
/// Streaming API (Streaming.swift).
///
/// Events are written inside the write's own transaction, as the write happens: a savepoint that
/// rolls back (a failed record, an allOrNone rollback, a failed request) takes its events with
/// it, and only a committed transaction publishes (wakes the long polls). Replay ids are the
/// table's AUTOINCREMENT keys: increasing in commit order (transactions never interleave: one
/// connection under the store lock), never reused, not contiguous. Nothing is held in memory
/// but counters: a transaction past `overflowThreshold` changes drops its events and publishes
/// one `GAP_OVERFLOW` event per object instead.
///
/// The store lock must be held for every call (the store's write paths and the streaming
/// routes hold it).
final class ChangeEvents: SavepointObserver, @unchecked Sendable {
    /// The record id of a `GAP_OVERFLOW` event, as in an org.
    static let overflowRecordId = "000000000000000AAA"
    static let maxAgeMillis: Int64 = 72 * 3_600_000
    static let defaultRetention = 100_000
    static let defaultOverflowThreshold = 100_000

    let db: SQLiteDB
    let schema: Schema
    /// Most events kept (`--event-retention`); older ones are purged at each commit.
    var retention = ChangeEvents.defaultRetention
    /// A transaction with more record changes than this publishes GAP_OVERFLOW events instead.
    var overflowThreshold = ChangeEvents.defaultOverflowThreshold
    /// The changeOrigin of what is written now: set by the API around a request; "" for
    /// seeding and imports.
    var origin = ""
    /// Called after a transaction that published events committed, with the entities it touched
    /// (the streaming routes wake the long polls waiting for them). Store lock held: do not block.
    var onPublish: (@Sendable (Set<String>) -> Void)?

    /// The newest replay id ever published (0: none), also after a purge.
    private(set) var newestReplayId: Int64 = 0
    /// Replay ids up to this one were purged (0: none ever was): older ones cannot be replayed.
    private(set) var purgedThrough: Int64 = 0
    private(set) var retainedCount = 0
    private var commitNumber: Int64 = 0
    /// Per entity: channel and schema id; per channel: its entity.
    private let channels: [String: String]
    private let entityByChannel: [String: String]
    private let schemaIds: [String: String]
    /// Per entity, per lower-cased component field: the compound field it nests under.
    private let compoundOf: [String: [String: String]]
    /// Per entity: what a CREATE event's body holds, in order (built once: seeding makes many).
    private let createPlans: [String: CreatePlan]

    private struct CreatePlan {
        enum Item {
            case created, modified
            /// A field (index into `fields`), its type, its key as `,"Name":`.
            case field(Int, FieldDef, [UInt8])
            /// A compound field's components, nested under its name.
            case compound(String, [(Int, FieldDef)])
        }
        let items: [Item]
        /// Field name -> index into `SObjectDef.fields`.
        let index: [String: Int]
        let count: Int
    }

    private static func createPlan(_ obj: SObjectDef, parts: [String: String]) -> CreatePlan {
        var index: [String: Int] = [:]
        for (i, f) in obj.fields.enumerated() { index[f.name] = i }
        var items: [CreatePlan.Item] = []
        for (i, f) in obj.fields.enumerated() {
            switch f.name {
            case "Id", "IsDeleted", "SystemModstamp": continue
            case "CreatedDate": items.append(.created)
            case "LastModifiedDate": items.append(.modified)
            default:
                if parts[f.name.lowercased()] != nil { continue }
                if !f.compoundOf.isEmpty {
                    items.append(.compound(f.name, f.compoundOf.compactMap { p in index[obj.field(p)?.name ?? ""].map { ($0, obj.fields[$0]) } }))
                    continue
                }
                var key = JSONWriter()
                key.raw(",")
                key.string(f.name)
                key.raw(":")
                items.append(.field(i, f, key.bytes))
            }
        }
        return CreatePlan(items: items, index: index, count: obj.fields.count)
    }

    static let allChannel = "/data/ChangeEvents"

    /// One transaction's bookkeeping (snapshotted at each nested savepoint, restored on its rollback).
    private struct Txn {
        var key: String?
        var commitMillis: Int64 = 0
        var commitNumber: Int64 = 0
        var sequence = 0
        var changes = 0
        var rows = 0
        var firstReplayId: Int64?
        var lastReplayId: Int64 = 0
        var overflowed = false
        /// Entities touched, in first-touch order (the GAP_OVERFLOW events' order).
        var touched: [String] = []
        // Set by savepointWillRelease, applied once the transaction committed.
        var retainedAfter = 0
        var purgedThroughAfter: Int64 = 0
    }
    private var txn = Txn()
    private var snapshots: [Txn] = []

    init(db: SQLiteDB, schema: Schema) throws {
        self.db = db
        self.schema = schema
        var channels: [String: String] = [:], byChannel: [String: String] = [:], ids: [String: String] = [:]
        var compound: [String: [String: String]] = [:]
        var plans: [String: CreatePlan] = [:]
        for obj in schema.objects {
            let channel = ChangeEvents.channel(for: obj.name)
            channels[obj.name] = channel
            byChannel[channel] = obj.name
            ids[obj.name] = ChangeEvents.schemaId(obj)
            var parts: [String: String] = [:]
            for f in obj.fields where !f.compoundOf.isEmpty {
                for p in f.compoundOf where parts[p.lowercased()] == nil { parts[p.lowercased()] = f.name }
            }
            compound[obj.name] = parts
            plans[obj.name] = ChangeEvents.createPlan(obj, parts: parts)
        }
        self.channels = channels
        entityByChannel = byChannel
        schemaIds = ids
        compoundOf = compound
        createPlans = plans
        try db.exec("""
            CREATE TABLE IF NOT EXISTS devserver_events (replay_id INTEGER PRIMARY KEY AUTOINCREMENT, \
            entity TEXT NOT NULL, commit_ms INTEGER NOT NULL, payload TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS ix_devserver_events_entity ON devserver_events(entity, replay_id);
            CREATE INDEX IF NOT EXISTS ix_devserver_events_commit ON devserver_events(commit_ms);
            CREATE TABLE IF NOT EXISTS devserver_event_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)
            """)
        newestReplayId = try int("SELECT seq FROM sqlite_sequence WHERE name = 'devserver_events'") ?? 0
        retainedCount = Int(try int("SELECT count(*) FROM devserver_events") ?? 0)
        purgedThrough = try int("SELECT value FROM devserver_event_meta WHERE key = 'purged_through'") ?? 0
        commitNumber = try int("SELECT value FROM devserver_event_meta WHERE key = 'commit_number'") ?? 0
        db.observer = self
    }

    private func int(_ sql: String) throws -> Int64? {
        let s = try db.prepare(sql, cached: false)
        defer { s.reset() }
        return try s.step() && !s.isNull(0) ? s.int64(0) : nil
    }

    // MARK: names

    /// `/data/ContactChangeEvent`; a custom `Foo__c`: `/data/Foo__ChangeEvent`.
    static func channel(for entity: String) -> String {
        entity.hasSuffix("__c") ? "/data/\(entity.dropLast())ChangeEvent" : "/data/\(entity)ChangeEvent"
    }

    func channel(ofEntity entity: String) -> String { channels[entity] ?? ChangeEvents.channel(for: entity) }

    /// The entity of a per-object channel; nil for `/data/ChangeEvents` and unknown channels.
    func entity(ofChannel channel: String) -> String? { entityByChannel[channel] }

    func schemaId(ofEntity entity: String) -> String { schemaIds[entity] ?? "" }

    /// A stable opaque id (22 base62 characters, as an org's) from the object's name and fields.
    private static func schemaId(_ obj: SObjectDef) -> String {
        let text = obj.name + ":" + obj.fields.map { "\($0.name)/\($0.type.rawValue)" }.joined(separator: ",")
        var out: [UInt8] = []
        for var h in [fnv1a(text), fnv1a(text + "#")] {
            for _ in 0..<11 {
                out.append(SFId.base62[Int(h % 62)])
                h /= 62
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: capture (called by the store's write paths)

    /// False once the transaction overflowed: the store can skip reading old values.
    var wantsDetail: Bool { !txn.overflowed }

    /// A bulk load (seeding, import) about to write `count` records of `entities` in this
    /// transaction: past the threshold it overflows at once, so no event is built for them.
    func expectBulk(_ entities: [String], count: Int) {
        guard count > overflowThreshold else { return }
        start(stampMillis: nil)
        txn.overflowed = true
        for e in entities where !txn.touched.contains(e) { txn.touched.append(e) }
    }

    func recordCreate(_ obj: SObjectDef, id: String, values: [(FieldDef, SQLValue)], created: String, modified: String, stampMillis: Int64?) throws {
        guard let plan = createPlans[obj.name] else { return }
        try record(obj, id: id, type: "CREATE", stampMillis: stampMillis) { w, _ in
            var slots = [SQLValue?](repeating: nil, count: plan.count)
            for (f, v) in values { if let i = plan.index[f.name] { slots[i] = v } }
            for item in plan.items {
                switch item {
                case .created: w.field("CreatedDate", .text(created), nil)
                case .modified: w.field("LastModifiedDate", .text(modified), nil)
                case .field(let i, let f, let key):
                    // Booleans not given are stored false (not null): they are in the body too.
                    let v = slots[i] ?? (f.type == .boolean ? .int(0) : .null)
                    if !v.isNull { w.field(key: key, v, f) }
                case .compound(let name, let parts):
                    let nested = parts.compactMap { p in slots[p.0].flatMap { $0.isNull ? nil : (p.1, $0) } }
                    if !nested.isEmpty { w.nested(name, nested) }
                }
            }
        }
    }

    /// `changed`: the fields whose value changed (null when nulled); LastModifiedDate is added.
    func recordUpdate(_ obj: SObjectDef, id: String, changed: [(FieldDef, SQLValue)], modified: String, stampMillis: Int64) throws {
        try record(obj, id: id, type: "UPDATE", stampMillis: stampMillis) { w, names in
            var byName: [String: SQLValue] = [:]
            for (f, v) in changed { byName[f.name] = v }
            let parts = compoundOf[obj.name] ?? [:]
            for f in obj.fields {
                if parts[f.name.lowercased()] != nil { continue }
                if !f.compoundOf.isEmpty {
                    let nested = f.compoundOf.compactMap { p in obj.field(p).flatMap { pf in byName[pf.name].map { (pf, $0) } } }
                    if !nested.isEmpty {
                        w.nested(f.name, nested)
                        names.append(contentsOf: nested.map { "\(f.name).\($0.0.name)" })
                    }
                    continue
                }
                if let v = byName[f.name], f.name != "LastModifiedDate" {
                    w.field(f.name, v, f)
                    names.append(f.name)
                }
            }
            w.field("LastModifiedDate", .text(modified), nil)
            names.append("LastModifiedDate")
        }
    }

    func recordDelete(_ obj: SObjectDef, id: String, stampMillis: Int64) throws {
        try record(obj, id: id, type: "DELETE", stampMillis: stampMillis) { _, _ in }
    }

    /// Opens the transaction's bookkeeping at its first change.
    private func start(stampMillis: Int64?) {
        guard txn.key == nil else { return }
        txn.key = UUID().uuidString.lowercased()
        txn.commitMillis = stampMillis ?? SFTime.serverNowMillis()
        commitNumber += 1
        txn.commitNumber = commitNumber
    }

    private func record(_ obj: SObjectDef, id: String, type: String, stampMillis: Int64?,
                        body: (inout EventBodyWriter, inout [String]) -> Void) throws {
        let autocommit = db.savepointDepth == 0
        if autocommit { txn = Txn() }
        start(stampMillis: stampMillis)
        if !txn.touched.contains(obj.name) { txn.touched.append(obj.name) }
        txn.changes += 1
        if !txn.overflowed && txn.changes > overflowThreshold {
            // Too many changes for one transaction: its events give way to GAP_OVERFLOW ones.
            if let first = txn.firstReplayId {
                let s = try db.prepare("DELETE FROM devserver_events WHERE replay_id >= ?1", cached: false)
                try s.bind([.int(first)])
                try s.run()
            }
            txn.overflowed = true
            txn.rows = 0
            txn.sequence = 0
            txn.firstReplayId = nil
        }
        if !txn.overflowed {
            var w = EventBodyWriter()
            var changed: [String] = []
            body(&w, &changed)
            try insert(entity: obj.name, recordIds: [id], type: type, changedFields: changed, body: w.bytes)
        }
        if autocommit {
            try savepointWillRelease(depth: 1)
            savepointReleased(depth: 1)
        }
    }

    private func insert(entity: String, recordIds: [String], type: String, changedFields: [String], body: [UInt8]) throws {
        txn.sequence += 1
        var w = JSONWriter(capacity: 512 + body.count)
        w.raw("{\"ChangeEventHeader\":{\"entityName\":")
        w.string(entity)
        w.raw(",\"recordIds\":")
        w.strings(recordIds)
        w.raw(",\"changeType\":")
        w.string(type)
        w.raw(",\"changeOrigin\":")
        w.string(origin)
        w.raw(",\"transactionKey\":")
        w.string(txn.key ?? "")
        w.raw(",\"sequenceNumber\":\(txn.sequence),\"commitTimestamp\":\(txn.commitMillis),\"commitNumber\":\(txn.commitNumber),\"commitUser\":")
        w.string(Auth.userId)
        w.raw(",\"changedFields\":")
        w.strings(changedFields)
        w.raw("}")
        w.raw(body)
        w.raw("}")
        let s = try db.prepare("INSERT INTO devserver_events (entity, commit_ms, payload) VALUES (?1, ?2, ?3)")
        try s.bind(.text(entity), at: 1)
        try s.bind(.int(txn.commitMillis), at: 2)
        try w.bytes.withUnsafeBufferPointer { buf in
            try s.bindTextNoCopy(buf.baseAddress!, length: buf.count, at: 3)
            try s.run()
        }
        let rowid = sqlite3LastInsertRowid()
        if txn.firstReplayId == nil { txn.firstReplayId = rowid }
        txn.lastReplayId = rowid
        txn.rows += 1
    }

    private func sqlite3LastInsertRowid() -> Int64 { db.lastInsertRowid }

    // MARK: transactions (SavepointObserver)

    func savepointBegan(depth: Int) {
        if depth == 1 {
            txn = Txn()
            snapshots.removeAll()
        } else {
            snapshots.append(txn)
        }
    }

    func savepointWillRelease(depth: Int) throws {
        guard depth == 1, txn.key != nil else { return }
        if txn.overflowed {
            for entity in txn.touched {
                try insert(entity: entity, recordIds: [ChangeEvents.overflowRecordId], type: "GAP_OVERFLOW", changedFields: [], body: [])
            }
        }
        try setMeta("commit_number", txn.commitNumber)
        // Retention, in the same transaction.
        (txn.retainedAfter, txn.purgedThroughAfter) = try applyRetention(count: retainedCount + txn.rows)
    }

    /// Purges what retention does not keep: past `retention` events the oldest, then those older
    /// than 72 hours (server clock). Answers the count left and the new purged-through id.
    private func applyRetention(count start: Int) throws -> (Int, Int64) {
        var count = start
        var through = purgedThrough
        if count > retention {
            let excess = count - retention
            if let last = try int("SELECT replay_id FROM devserver_events ORDER BY replay_id LIMIT 1 OFFSET \(excess - 1)") {
                try run("DELETE FROM devserver_events WHERE replay_id <= \(last)")
                count -= db.changes
                through = max(through, last)
            }
        }
        let (expired, expiredThrough) = try purgeOlder(than: SFTime.serverNowMillis() - ChangeEvents.maxAgeMillis)
        count -= expired
        through = max(through, expiredThrough)
        if through != purgedThrough { try setMeta("purged_through", through) }
        return (count, through)
    }

    func savepointReleased(depth: Int) {
        if depth > 1 {
            _ = snapshots.popLast()
            return
        }
        defer { txn = Txn(); snapshots.removeAll() }
        guard txn.key != nil else { return }
        retainedCount = txn.retainedAfter
        purgedThrough = txn.purgedThroughAfter
        if txn.rows > 0 {
            newestReplayId = max(newestReplayId, txn.lastReplayId)
            onPublish?(Set(txn.touched))
        }
    }

    func savepointRolledBack(depth: Int) {
        if depth == 1 {
            txn = Txn()
            snapshots.removeAll()
        } else if let saved = snapshots.popLast() {
            // SQLite took back the savepoint's rows; the counters follow. The transaction
            // keeps its key and commit number (a later change in it goes on with them).
            let key = txn.key, number = txn.commitNumber, millis = txn.commitMillis
            txn = saved
            if txn.key == nil, key != nil {
                txn.key = key
                txn.commitNumber = number
                txn.commitMillis = millis
            }
        }
    }

    private func setMeta(_ key: String, _ value: Int64) throws {
        let s = try db.prepare("INSERT OR REPLACE INTO devserver_event_meta (key, value) VALUES (?1, ?2)")
        try s.bind([.text(key), .int(value)])
        try s.run()
    }

    private func run(_ sql: String) throws {
        let s = try db.prepare(sql, cached: false)
        try s.run()
    }

    /// Deletes events committed before `cutoff` (server clock): how many, and the newest id among them.
    private func purgeOlder(than cutoff: Int64) throws -> (Int, Int64) {
        let s = try db.prepare("SELECT max(replay_id) FROM devserver_events WHERE commit_ms < ?1")
        try s.bind([.int(cutoff)])
        defer { s.reset() }
        guard try s.step(), !s.isNull(0) else { return (0, 0) }
        let last = s.int64(0)
        s.reset()
        let d = try db.prepare("DELETE FROM devserver_events WHERE commit_ms < ?1")
        try d.bind([.int(cutoff)])
        try d.run()
        return (db.changes, last)
    }

    // MARK: maintenance (admin, subscribe)

    /// Applies retention outside a write: at start (`--event-retention` may have been lowered),
    /// before a subscribe checks a replay id, for the admin endpoint.
    func enforceRetention() throws {
        guard retainedCount > 0 else { return }
        try db.savepoint {
            (retainedCount, purgedThrough) = try applyRetention(count: retainedCount)
        }
    }

    /// Purges every retained event (`POST /__devserver/events/purge`): replaying from any id
    /// before the newest then fails as an expired replay id does. Answers how many went.
    @discardableResult
    func purgeAll() throws -> Int {
        try db.savepoint {
            try run("DELETE FROM devserver_events")
            let n = db.changes
            try setMeta("purged_through", newestReplayId)
            retainedCount = 0
            purgedThrough = newestReplayId
            return n
        }
    }

    var oldestRetainedReplayId: Int64? { try? int("SELECT min(replay_id) FROM devserver_events") }

    /// Whether a subscriber may replay from after `replayId` (-1 and -2 always may): not past the
    /// newest event, not before what was purged.
    func isValidReplayId(_ replayId: Int64) -> Bool {
        if replayId == -1 || replayId == -2 { return true }
        return replayId >= 0 && replayId <= newestReplayId && replayId >= purgedThrough
    }

    struct StoredEvent {
        let replayId: Int64
        let entity: String
        let payload: [UInt8]
    }

    /// Events after `cursor`, of `entity` (nil: all), oldest first.
    func events(after cursor: Int64, entity: String?, limit: Int) throws -> [StoredEvent] {
        let s = entity == nil
            ? try db.prepare("SELECT replay_id, entity, payload FROM devserver_events WHERE replay_id > ?1 ORDER BY replay_id LIMIT ?2")
            : try db.prepare("SELECT replay_id, entity, payload FROM devserver_events WHERE entity = ?3 AND replay_id > ?1 ORDER BY replay_id LIMIT ?2")
        try s.bind([.int(cursor), .int(Int64(limit))])
        if let entity { try s.bind(.text(entity), at: 3) }
        defer { s.reset() }
        var out: [StoredEvent] = []
        while try s.step() {
            out.append(StoredEvent(replayId: s.int64(0), entity: s.text(1), payload: Array(s.textBytes(2))))
        }
        return out
    }
}

/// The fields of an event's payload after its header: `,"Name":value...`.
struct EventBodyWriter {
    var w = JSONWriter()
    var bytes: [UInt8] { w.bytes }

    mutating func field(_ name: String, _ v: SQLValue, _ f: FieldDef?) {
        w.raw(",")
        w.string(name)
        w.raw(":")
        value(v, f)
    }

    /// `key`: `,"Name":` already escaped.
    mutating func field(key: [UInt8], _ v: SQLValue, _ f: FieldDef?) {
        w.raw(key)
        value(v, f)
    }

    /// A compound field's components as one object: `"Name":{"FirstName":...,"LastName":...}`.
    mutating func nested(_ name: String, _ parts: [(FieldDef, SQLValue)]) {
        w.raw(",")
        w.string(name)
        w.raw(":{")
        for (i, (f, v)) in parts.enumerated() {
            if i > 0 { w.raw(",") }
            w.string(f.name)
            w.raw(":")
            value(v, f)
        }
        w.raw("}")
    }

    private mutating func value(_ v: SQLValue, _ f: FieldDef?) {
        switch v {
        case .null: w.raw("null")
        case .int(let i): w.raw(f?.type == .boolean ? (i != 0 ? "true" : "false") : String(i))
        case .real(let d): w.value(.double(d))
        case .text(let s): w.string(s)
        }
    }
}

extension SQLValue {
    var isNull: Bool { if case .null = self { return true }; return false }

    /// Same stored value (text compared exactly: a change of case is a change).
    func same(as other: SQLValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.int(let a), .int(let b)): return a == b
        case (.real(let a), .real(let b)): return a == b
        case (.int(let a), .real(let b)), (.real(let b), .int(let a)): return Double(a) == b
        case (.text(let a), .text(let b)): return a == b
        default: return false
        }
    }
}
