import CJansson
import SyncStoreSupport

/// One run of a `twophase` target (docs/sync.md#two-phase). Phase 1 fetches every id and
/// `last_update` of the target's tables; the engine then decides per id as the protocol says
/// (missing locally: get; on both sides: the newer `last_update` wins; only local and never
/// synced: add; only local and synced before: deleted on the server, deleted locally), and
/// phase 2 is one `synchronise` call. A sync down only gets (and deletes locally what the server
/// no longer has); dirty entries are the sync up's, which sends them as add/update/delete and
/// gets in the same call.
///
/// Crash safety: before phase 2 each entry to push gets its UUID and the `last_update` it will
/// carry, committed first (a retry sends the same row: the server takes a second identical add
/// or update as the same one). The outcome of phase 2 and the sync state are written in one
/// transaction that re-reads every entry: one the host changed while the call was in flight
/// keeps its edit and stays dirty.
struct TwoPhaseTask {
    let ctx: SyncContext
    let target: TwoPhaseTarget
    let options: SyncOptions
    let states: SyncStateStore
    let emit: (SyncState) -> Void
    /// Sync up: push dirty entries. Sync down: only get and delete locally.
    let pushing: Bool

    /// What the engine gave an entry for a push: `{"at", "idKey", "id", "lastUpdate"}`, `at` the
    /// entry's `_soupLastModifiedDate` then: while they are equal the host has not edited it
    /// since, and the stamp is reused.
    static let stampMark = "__twophase_stamp__"

    /// A host write made from a copy read before the engine stamped the entry (it lacks the
    /// mark) keeps what the stamp gave it: the id (else its add would go again under a new
    /// UUID: a second row) and the newest `last_update` sent (else its edit could be stamped no
    /// later than the one already sent, and lose to it).
    static func keepStamp(_ entry: JSON, stored mark: JSON) {
        guard let key = mark["idKey"]?.string, let id = mark["id"]?.string, let stamp = mark["lastUpdate"]?.string else { return }
        if entry[key]?.string.map({ $0.isEmpty }) ?? true { entry.set(key, owned: JSONMake.string(id)) }
        entry.set(TwoPhaseTarget.lastUpdate, owned: JSONMake.string(stamp))
        entry.set(stampMark, owned: mark.retained())
    }

    /// A local entry as read at phase 1.
    struct Local {
        let entryId: Int64
        var doc: JSONDocument
        var key: String?
        let dirty: Bool
        let created: Bool
        let deleted: Bool
        var lastModified: Int64 { doc.root[SoupPath.lastModified]?.int64 ?? 0 }
        var stamp: Int64? { doc.root[TwoPhaseTarget.lastUpdate]?.string.flatMap { Timestamp.parse($0) } }
    }

    /// What one table's run does.
    struct Plan {
        let table: TwoPhaseTarget.Table
        let info: SoupInfo
        var locals: [Local] = []
        var adds: [Int] = []
        var updates: [Int] = []
        var deletes: [Int] = []
        var gets: [String] = []
        var localDeletes: [Int] = []
        var conflicts: [(Int, String)] = []
        /// Ids whose get may replace a dirty entry (the server's row is newer; OVERWRITE).
        var overwrites: Set<String> = []

        var requests: Int { adds.count + updates.count + deletes.count + gets.count }
    }

    func run(_ state: inout SyncState) throws {
        // Phase 1.
        let fetched = try ctx.rest.json("GET", target.fetchPath, cancel: ctx.cancel)
        let offset = ctx.rest.serverNow.map { $0 - Clock.nowMillis() } ?? 0
        var plans: [Plan] = []
        for table in target.tables {
            let info = try ctx.store.requireSoup(table.soupName)
            let server = try serverStamps(fetched.root, table)
            let locals = try ctx.store.readers.withReader { db in try TwoPhaseTask.entries(db, info) }
            plans.append(decide(table, info: info, locals: locals, server: server, offset: offset))
        }
        state.totalSize = Int64(plans.reduce(0) { $0 + $1.requests + $1.localDeletes.count })
        emit(state)
        if pushing { try stampPushes(&plans, offset: offset) }
        // Phase 2.
        var answer: JSONDocument? = nil
        if plans.contains(where: { $0.requests > 0 }) {
            if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
            // Safe to send again: adds carry their UUIDs and updates their stamps.
            answer = try ctx.rest.json("POST", target.synchroniseUrl, body: Array(body(plans).root.dump().utf8),
                                       idempotent: true, cancel: ctx.cancel)
        }
        // Once answered, the answer is stored even if the sync was stopped meanwhile.
        var next = state
        next.progress = 100
        try ctx.store.write { db in
            for plan in plans { try apply(plan, answer: answer?.root, db: db, state: &next) }
            try states.save(next, db: db)
        }
        state = next
    }

    // MARK: phase 1

    /// The table's ids and stamps as the fetch answered them.
    private func serverStamps(_ root: JSON, _ table: TwoPhaseTarget.Table) throws -> [String: Int64] {
        guard let list = root[table.name], list.isArray else {
            throw StoreError(.server, "GET \(RemoteURL.redacted(target.fetchUrl)): the answer has no array for table '\(table.name)'")
        }
        var out: [String: Int64] = [:]
        for item in list.elements {
            guard let id = item[table.idKey]?.string, let text = item[TwoPhaseTarget.lastUpdate]?.string,
                  let ms = Timestamp.parse(text) else {
                throw StoreError(.server, "GET \(RemoteURL.redacted(target.fetchUrl)): each '\(table.name)' item must be {\"\(table.idKey)\", \"\(TwoPhaseTarget.lastUpdate)\"} with a timestamp: \(MessageLimit.bound(item.dump()))")
            }
            out[id] = ms
        }
        return out
    }

    /// Every entry of the soup, in entry order.
    static func entries(_ db: Connection, _ info: SoupInfo) throws -> [(Int64, JSONDocument)] {
        let statement = try db.prepare("SELECT id, soup FROM \(info.table) ORDER BY id")
        var out: [(Int64, JSONDocument)] = []
        while try statement.step() {
            let id = statement.int64(0)
            let bytes = statement.textBytes(1)
            guard let base = bytes.baseAddress else { continue }
            out.append((id, try SmartStore.storedEntry(base, length: bytes.count, id: id, soup: info.name)))
        }
        return out
    }

    /// The `last_update` a push of this dirty entry carries: the stamp already given to this
    /// very edit, else the time of the host's last write on the server's clock, and never less
    /// than one step after the copy the edit started from.
    private func stamp(_ local: Local, _ table: TwoPhaseTarget.Table, offset: Int64) -> Int64 {
        let base = local.stamp
        if let base, local.doc.root[TwoPhaseTask.stampMark]?["at"]?.int64 == local.lastModified { return base }
        let edit = table.ceil(local.lastModified + offset)
        return base.map { max(edit, $0 + table.unit) } ?? edit
    }

    private func decide(_ table: TwoPhaseTarget.Table, info: SoupInfo, locals entries: [(Int64, JSONDocument)],
                        server: [String: Int64], offset: Int64) -> Plan {
        var plan = Plan(table: table, info: info)
        let overwrite = options.mergeMode == .overwrite
        var seen = Set<String>()
        for (entryId, doc) in entries {
            let key = doc.root[table.idKey]?.string.flatMap { $0.isEmpty ? nil : $0 }
            // Only the first entry holding an id takes part; the protocol has one row per id.
            if let key, !seen.insert(key).inserted { continue }
            let root = doc.root
            let local = Local(entryId: entryId, doc: doc, key: key, dirty: LocalFlags.isSet(root[LocalFlags.local]),
                              created: LocalFlags.isSet(root[LocalFlags.created]) || key == nil,
                              deleted: LocalFlags.isSet(root[LocalFlags.deleted]))
            let i = plan.locals.count
            plan.locals.append(local)
            let serverStamp = key.flatMap { server[$0] }
            guard local.dirty else {
                guard let key else { continue }
                if let serverStamp {
                    if local.stamp != serverStamp { plan.gets.append(key) }
                } else {
                    plan.localDeletes.append(i)   // gone from the server
                }
                continue
            }
            guard let serverStamp, let key else {
                // Only local.
                if local.deleted {
                    plan.localDeletes.append(i)
                } else if local.created {
                    if pushing { plan.adds.append(i) }
                } else if pushing {
                    // Edited here, deleted there: OVERWRITE keeps the edit (the row is made
                    // again under its id), LEAVE_IF_CHANGED leaves it dirty and says why.
                    if overwrite {
                        plan.adds.append(i)
                    } else {
                        plan.conflicts.append((i, SyncUpTask.errorJSON("ENTITY_IS_DELETED", "The server no longer has this row; it was left dirty (LEAVE_IF_CHANGED): delete it, or set __locally_created__ to add it again")))
                    }
                }
                continue
            }
            // On both sides. A create the server already has is an earlier add whose answer
            // was lost: it goes again as an add (the same row is the same add).
            let mine = stamp(local, table, offset: offset)
            if serverStamp > mine && !(local.created && !local.deleted) {
                if overwrite {
                    plan.gets.append(key)
                    plan.overwrites.insert(key)
                } else if pushing {
                    plan.conflicts.append((i, SyncUpTask.errorJSON("CONFLICT", "The server's row (last_update \(table.format(serverStamp))) is newer than this local change (\(table.format(mine))); it was left dirty (LEAVE_IF_CHANGED)")))
                }
            } else if pushing {
                if local.deleted {
                    plan.deletes.append(i)
                } else if local.created {
                    plan.adds.append(i)
                } else {
                    plan.updates.append(i)
                }
            }
        }
        for key in server.keys.sorted() where !seen.contains(key) { plan.gets.append(key) }
        return plan
    }

    // MARK: before phase 2

    /// Gives the entries to add or update their UUID and the stamp they carry, in one committed
    /// transaction, before anything is sent. An entry the host changed since phase 1 read it is
    /// left out of this run (the next one sends its newest edit).
    private func stampPushes(_ plans: inout [Plan], offset: Int64) throws {
        guard plans.contains(where: { !$0.adds.isEmpty || !$0.updates.isEmpty }) else { return }
        try ctx.store.write { db in
            for p in plans.indices {
                let plan = plans[p]
                let current = Dictionary(try TwoPhaseTask.entries(db, plan.info), uniquingKeysWith: { a, _ in a })
                var kept: Set<Int> = []
                try ctx.store.withEntryWriter(db, soup: plan.info, externalIdPath: nil) { writer in
                    var sink: TextBuffer? = nil
                    for i in plan.adds + plan.updates {
                        let local = plan.locals[i]
                        guard let now = current[local.entryId], json_equal(now.root.raw, local.doc.root.raw) != 0 else { continue }
                        let entry = now.root
                        let key = local.key ?? ClientId.make()
                        let sent = plan.table.format(stamp(local, plan.table, offset: offset))
                        entry.set(plan.table.idKey, owned: JSONMake.string(key))
                        entry.set(TwoPhaseTarget.lastUpdate, owned: JSONMake.string(sent))
                        let mark = JSONDocument.object()
                        mark.root.set("at", owned: JSONMake.int(local.lastModified))
                        mark.root.set("idKey", owned: JSONMake.string(plan.table.idKey))
                        mark.root.set("id", owned: JSONMake.string(key))
                        mark.root.set("lastUpdate", owned: JSONMake.string(sent))
                        entry.set(TwoPhaseTask.stampMark, owned: mark.root.retained())
                        ctx.store.recentCreates.recordStamp(table: plan.info.table, entryId: local.entryId)
                        // The host's edit time stays the entry's: engine writes are not edits.
                        try writer.upsert(entry, index: i, now: local.lastModified, into: &sink)
                        plans[p].locals[i].doc = now
                        plans[p].locals[i].key = key
                        kept.insert(i)
                    }
                }
                plans[p].adds = plan.adds.filter(kept.contains)
                plans[p].updates = plan.updates.filter(kept.contains)
            }
        }
    }

    /// The `synchronise` body: per operation, per table.
    private func body(_ plans: [Plan]) -> JSONDocument {
        let doc = JSONDocument.object()
        func section(_ name: String, _ fill: (Plan) -> [UnsafeMutablePointer<json_t>?]) {
            let tables = JSONDocument.object()
            for plan in plans {
                let items = fill(plan)
                guard !items.isEmpty else { continue }
                let list = JSONDocument.array()
                for item in items { list.root.append(owned: item) }
                tables.root.set(plan.table.name, owned: list.root.retained())
            }
            doc.root.set(name, owned: tables.root.retained())
        }
        section("add") { plan in plan.adds.map { row(plan.locals[$0]) } }
        section("update") { plan in plan.updates.map { row(plan.locals[$0]) } }
        section("delete") { plan in plan.deletes.compactMap { plan.locals[$0].key.map(JSONMake.string) } }
        section("get") { plan in plan.gets.map(JSONMake.string) }
        return doc
    }

    /// An entry as a row: every field but the store's and the engine's own (`_soup*`, `__*`).
    private func row(_ local: Local) -> UnsafeMutablePointer<json_t>? {
        let out = JSONDocument.object()
        for (name, value) in local.doc.root.members where !name.hasPrefix("_soup") && !name.hasPrefix("__") {
            out.root.set(name, owned: value.retained())
        }
        return out.root.retained()
    }

    // MARK: after phase 2

    /// The answer's items of one operation and table, by id.
    private func results(_ answer: JSON?, _ op: String, _ table: TwoPhaseTarget.Table) -> [String: JSON] {
        var out: [String: JSON] = [:]
        for item in answer?[op]?[table.name]?.elements ?? [] {
            if let id = item[table.idKey]?.string { out[id] = item }
        }
        return out
    }

    /// Writes one table's outcome inside the run's transaction, each entry as it is now: an
    /// entry the host changed since it was read keeps its edit.
    private func apply(_ plan: Plan, answer: JSON?, db: Connection, state: inout SyncState) throws {
        let table = plan.table
        let current = Dictionary(try TwoPhaseTask.entries(db, plan.info), uniquingKeysWith: { a, _ in a })
        var byKey: [String: Int64] = [:]
        for (id, doc) in current.sorted(by: { $0.key < $1.key }) {
            if let key = doc.root[table.idKey]?.string, byKey[key] == nil { byKey[key] = id }
        }
        var localByKey: [String: Int] = [:]
        for (i, local) in plan.locals.enumerated() { if let key = local.key { localByKey[key] = i } }
        func unchanged(_ i: Int) -> JSON? {
            let local = plan.locals[i]
            guard let now = current[local.entryId], json_equal(now.root.raw, local.doc.root.raw) != 0 else { return nil }
            return now.root
        }
        var removals: [Int64] = []
        var reported: [(Int64, SyncUpTask.Outcome)] = []
        let overwrite = options.mergeMode == .overwrite
        let now = Clock.nowMillis()
        try ctx.store.withEntryWriter(db, soup: plan.info, externalIdPath: nil) { writer in
            writer.ruleErrorCode = .server   // rows the server sent
            var sink: TextBuffer? = nil
            var position = 0
            /// Marks an entry, leaving its edit time alone (it is still the host's edit).
            func note(_ i: Int, _ entry: JSON, error: String) throws {
                entry.set(LocalFlags.lastError, owned: JSONMake.string(error))
                try writer.upsert(entry, index: position, now: plan.locals[i].lastModified, into: &sink)
            }
            /// Stores a server row, clean, in place of entry `entryId` (nil: a new entry).
            func store(_ row: JSON, entryId: Int64?) throws {
                guard let copy = json_deep_copy(row.raw) else { return }
                let entry = JSONDocument(owning: copy).root
                LocalFlags.clear(entry, syncId: ctx.syncId)
                entry.remove(TwoPhaseTask.stampMark)
                if let entryId { entry.set(SoupPath.entryId, owned: JSONMake.int(entryId)) }
                try writer.upsert(entry, index: position, now: now, into: &sink)
            }
            // Adds and updates.
            let added = results(answer, "add", table), updated = results(answer, "update", table)
            for (i, isAdd) in plan.adds.map({ ($0, true) }) + plan.updates.map({ ($0, false) }) {
                position += 1
                let local = plan.locals[i]
                guard let key = local.key, let entry = unchanged(i) else { continue }
                guard let result = (isAdd ? added : updated)[key] else {
                    try note(i, entry, error: SyncUpTask.errorJSON("NO_ANSWER", "The server's answer did not mention this row; it stays dirty for the next sync"))
                    reported.append((local.entryId, .failed("")))
                    continue
                }
                switch result["status"]?.string ?? "" {
                case "created", "exists", "updated":
                    if let stamp = result[TwoPhaseTarget.lastUpdate], stamp.string != nil {
                        entry.set(TwoPhaseTarget.lastUpdate, owned: stamp.retained())
                    }
                    LocalFlags.clear(entry, syncId: nil)
                    entry.remove(TwoPhaseTask.stampMark)
                    try writer.upsert(entry, index: position, now: now, into: &sink)
                case "stale":
                    if overwrite, let row = result["row"], row.isObject {
                        try store(row, entryId: local.entryId)
                    } else {
                        try note(i, entry, error: SyncUpTask.errorJSON("CONFLICT", "The server's row is newer than this local change; it was left dirty (LEAVE_IF_CHANGED)"))
                        reported.append((local.entryId, .conflict("")))
                    }
                case "missing":
                    if overwrite {
                        // Deleted there since phase 1: the edit is kept and added again next run.
                        entry.set(LocalFlags.created, owned: JSONMake.bool(true))
                        try writer.upsert(entry, index: position, now: local.lastModified, into: &sink)
                    } else {
                        try note(i, entry, error: SyncUpTask.errorJSON("ENTITY_IS_DELETED", "The server no longer has this row; it was left dirty (LEAVE_IF_CHANGED)"))
                        reported.append((local.entryId, .conflict("")))
                    }
                default:
                    try note(i, entry, error: SyncUpTask.errorJSON("SERVER_ERROR", MessageLimit.bound(result.dump())))
                    reported.append((local.entryId, .failed("")))
                }
            }
            // Deletes: whatever the answer (deleted, or missing: gone already), the row is gone.
            let deleted = results(answer, "delete", table)
            for i in plan.deletes {
                position += 1
                let local = plan.locals[i]
                guard let key = local.key, deleted[key] != nil, let entry = current[local.entryId]?.root else { continue }
                if unchanged(i) != nil || LocalFlags.isSet(entry[LocalFlags.deleted]) {
                    removals.append(local.entryId)
                } else {
                    // Undeleted by the host meanwhile: the row is gone there, so it is new again.
                    entry.set(LocalFlags.created, owned: JSONMake.bool(true))
                    try writer.upsert(entry, index: position, now: entry[SoupPath.lastModified]?.int64 ?? now, into: &sink)
                }
            }
            // Gets: stored where nothing changed since phase 1 (a dirty entry only when the
            // server's row is newer and the merge mode is OVERWRITE).
            for row in answer?["get"]?[table.name]?.elements ?? [] {
                position += 1
                guard row.isObject, let key = row[table.idKey]?.string else { continue }
                if let i = localByKey[key] {
                    let local = plan.locals[i]
                    guard unchanged(i) != nil, !local.dirty || plan.overwrites.contains(key) else { continue }
                    try store(row, entryId: local.entryId)
                } else if byKey[key] == nil {
                    try store(row, entryId: nil)
                }
            }
            for (i, error) in plan.conflicts {
                position += 1
                guard let entry = unchanged(i) else { continue }
                try note(i, entry, error: error)
                reported.append((plan.locals[i].entryId, .conflict("")))
            }
        }
        for i in plan.localDeletes where unchanged(i) != nil { removals.append(plan.locals[i].entryId) }
        try ctx.store.deleteRows(db, plan.info, ids: removals)
        state.record(reported.map(\.0), reported.map(\.1))
    }
}
