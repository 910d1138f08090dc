import SyncStoreSupport
import SyncStoreCore

/// cleanResyncGhosts in proportion to what was deleted (docs/sync.md#ghosts): for a sync whose
/// query takes every record of one object, the ghosts since the last cleaning are the records the
/// server deleted since then, which `sobjects/{type}/deleted` lists without listing every id. The
/// server time each cleaning covered up to is kept per sync in `sync_ghost_marks`, written in the
/// transaction that deletes the ghosts; a sync without a mark, a mark older than `maxAge`, or a
/// server that no longer holds the window falls back to the full comparison, which sets the mark.
package struct DeletedRecordsWindow {
    package static let table = "sync_ghost_marks"
    /// How far back the server keeps deleted records (its recycle bin): 15 days.
    package static let maxAge: Int64 = 15 * 86_400_000
    /// A mark is set this far before the time it stands for: the server's clock is known to the
    /// second only, and records deleted in the overlap are simply found twice.
    package static let overlap: Int64 = 120_000

    package let ctx: SyncContext
    package let syncId: Int64

    /// The mark of this sync (server epoch ms), nil when it has none.
    package func mark() throws -> Int64? {
        try ctx.store.readers.withReader { db in
            guard try Self.exists(db) else { return nil }
            return try db.scalarInt("SELECT serverTime FROM \(Self.table) WHERE syncId = ?", [.int(syncId)])
        }
    }

    /// Made when the sync engine's companion is (a store opened for writing): a table made by a
    /// cleaning itself changed the schema under a sync up running beside it, which then failed.
    package static func createTable(_ db: Connection) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS \(table) (syncId INTEGER PRIMARY KEY, serverTime INTEGER NOT NULL)")
    }

    /// Sets the mark inside the caller's write transaction.
    package func setMark(_ serverTime: Int64, db: Connection) throws {
        let statement = try db.prepare("INSERT OR REPLACE INTO \(Self.table) (syncId, serverTime) VALUES (?, ?)")
        try statement.bind([.int(syncId), .int(serverTime)])
        _ = try statement.step()
    }

    /// Forgets the mark of a deleted sync (inside the caller's write transaction).
    package static func forget(syncId: Int64, db: Connection) throws {
        guard try exists(db) else { return }
        let statement = try db.prepare("DELETE FROM \(table) WHERE syncId = ?")
        try statement.bind([.int(syncId)])
        _ = try statement.step()
    }

    private static func exists(_ db: Connection) throws -> Bool {
        try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]) == 1
    }

    /// The ids `sobject` records the server deleted from `since` to now, and the server time the
    /// answer covers up to; nil when the window cannot be used (too old, or the server no longer
    /// holds its start), so the caller compares every id instead.
    package func deletedIds(of sobject: String, since: Int64) throws -> (ids: [String], coveredUntil: Int64)? {
        let now = ctx.rest.serverNow ?? Clock.nowMillis()
        guard now - since <= Self.maxAge, since < now else { return nil }
        // The end lies past now (the server's clock is known to the second): the answer's
        // latestDateCovered says how far it really reaches, and the next cleaning starts there.
        let query = RemoteURL.query([("start", Timestamp.format(since)), ("end", Timestamp.format(now + 60_000))])
        let doc = try ctx.rest.json("GET", "sobjects/\(sobject)/deleted/?\(query)", cancel: ctx.cancel)
        guard let records = doc.root["deletedRecords"], records.isArray,
              let covered = doc.root["latestDateCovered"]?.string.flatMap(Timestamp.parse) else {
            throw StoreError(.server, "GET sobjects/\(sobject)/deleted: the answer has no deletedRecords array or latestDateCovered")
        }
        if let earliest = doc.root["earliestDateAvailable"]?.string.flatMap(Timestamp.parse), earliest > since { return nil }
        var ids: [String] = []
        for record in records.elements {
            guard let id = record["id"]?.string else {
                throw StoreError(.server, "GET sobjects/\(sobject)/deleted: a deleted record has no string id")
            }
            ids.append(id)
        }
        return (ids, covered)
    }

    /// Of `ids` listed as deleted, those the server holds again (undeleted since): retrieved in
    /// sObject Collections of 2,000, which answer null for a record that does not exist.
    package func stillThere(_ ids: [String], of sobject: String) throws -> Set<String> {
        var found: Set<String> = []
        var start = 0
        while start < ids.count {
            if ctx.cancel.isCancelled { throw StoreError(.state, "The ghost cleaning was stopped") }
            let chunk = Array(ids[start..<min(ids.count, start + 2000)])
            start += chunk.count
            let body = JSONDocument.object()
            let list = JSONDocument.array()
            for id in chunk { list.root.append(owned: JSONMake.string(id)) }
            body.root.set("ids", owned: list.root.retained())
            let fields = JSONDocument.array()
            fields.root.append(owned: JSONMake.string("Id"))
            body.root.set("fields", owned: fields.root.retained())
            let answer = try ctx.rest.json("POST", "composite/sobjects/\(sobject)", body: Array(body.root.dump().utf8),
                                           headers: ["Content-Type: application/json"], idempotent: true, cancel: ctx.cancel)
            guard answer.root.isArray else {
                throw StoreError(.server, "POST composite/sobjects/\(sobject): the answer is not an array of records")
            }
            for record in answer.root.elements {
                if let id = record["Id"]?.string { found.insert(id) }
            }
        }
        return found
    }
}
