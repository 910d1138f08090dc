import CJansson
import SyncStoreSupport
import SyncStoreCore

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
package struct TwoPhaseTask: SyncRun {
    package let ctx: SyncContext
    package let target: TwoPhaseTarget
    package let options: SyncOptions
    package let states: SyncStateStore
    package let emit: (SyncState) -> Void
    /// Sync up: push dirty entries. Sync down: only get and delete locally.
    package let pushing: Bool

    /// What the engine gave an entry for a push: `{"at", "idKey", "id", "lastUpdate"}`, `at` the
    /// entry's `_soupLastModifiedDate` then: while they are equal the host has not edited it
    /// since, and the stamp is reused.
    package static let stampMark = "__twophase_stamp__"

    /// A host write made from a copy read before the engine stamped the entry (it lacks the
    /// mark) keeps what the stamp gave it: the id (else its add would go again under a new
    /// UUID: a second row) and the newest `last_update` sent (else its edit could be stamped no
    /// later than the one already sent, and lose to it).
    package static func keepStamp(_ entry: JSON, stored mark: JSON) {
        guard let key = mark["idKey"]?.string, let id = mark["id"]?.string, let stamp = mark["lastUpdate"]?.string else { return }
        if entry[key]?.string.map({ $0.isEmpty }) ?? true { entry.set(key, owned: JSONMake.string(id)) }
        entry.set(TwoPhaseTarget.lastUpdate, owned: JSONMake.string(stamp))
        entry.set(stampMark, owned: mark.retained())
    }

    /// A local entry as read at phase 1.
    package struct Local {
        package let entryId: Int64
        package var doc: JSONDocument
        package var key: String?
        package let dirty: Bool
        package let created: Bool
        package let deleted: Bool
        package var lastModified: Int64 { doc.root[SoupPath.lastModified]?.int64 ?? 0 }
        package var stamp: Int64? { doc.root[TwoPhaseTarget.lastUpdate]?.string.flatMap { Timestamp.parse($0) } }
    }

    /// What one table's run does.
    package struct Plan {
        package let table: TwoPhaseTarget.Table
        package let info: SoupInfo
        package var locals: [Local] = []
        package var adds: [Int] = []
        package var updates: [Int] = []
        package var deletes: [Int] = []
        package var gets: [String] = []
        package var localDeletes: [Int] = []
        package var conflicts: [(Int, String)] = []
        /// Ids whose get may replace a dirty entry (the server's row is newer; OVERWRITE).
        package var overwrites: Set<String> = []

        package var requests: Int { adds.count + updates.count + deletes.count + gets.count }
    }

    package func run(_ state: inout SyncState) throws {
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
        var answers: [Answer]? = nil
        if plans.contains(where: { $0.requests > 0 }) { answers = try synchronise(&plans) }
        // Once answered, the answer is stored even if the sync was stopped meanwhile.
        var next = state
        next.progress = 100
        try ctx.store.write { db in
            for (p, plan) in plans.enumerated() { try apply(plan, answer: answers?[p], db: db, state: &next) }
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
    package static func entries(_ db: Connection, _ info: SoupInfo) throws -> [(Int64, JSONDocument)] {
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
                        try ctx.store.recentCreates.recordStamp(table: plan.info.table, entryId: local.entryId)
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

    // MARK: phase 2

    /// One table's outcome of phase 2, read from either answer shape.
    package struct Answer {
        package enum Push {
            /// Stored: the server's `last_update` (the operations shape), or its whole row (the
            /// plain shape: its fields go over the entry's).
            case applied(stamp: JSON?, row: JSON?)
            /// The server's row is newer (it is not the one sent).
            case stale(row: JSON?)
            /// The server has no such row: deleted since phase 1.
            case missing
            /// The answer does not say.
            case unanswered
            /// Refused: the error for `__last_error__`.
            case failed(String)
        }

        /// Adds and updates by id.
        package var pushes: [String: Push] = [:]
        /// Ids whose delete is done.
        package var deleted: Set<String> = []
        /// The rows answered for `get`, in answer order.
        package var rows: [JSON] = []
        /// Ids asked for in `get` that the server no longer has.
        package var gone: Set<String> = []

        package mutating func merge(_ other: Answer) {
            pushes.merge(other.pushes) { _, new in new }
            deleted.formUnion(other.deleted)
            rows += other.rows
            gone.formUnion(other.gone)
        }
    }

    /// Phase 2: one `synchronise` call, answered in either shape (docs/sync.md#two-phase). A
    /// server may refuse the whole call with 409 (nothing applied) when an `add` names an id it
    /// holds already: an earlier add whose answer was lost, as a retry of this very call after a
    /// lost answer is. Then the adds whose ids a new fetch lists go as updates of those rows (the
    /// same row is the same add; an edit made since goes with it) and the call is sent again.
    /// Refused still with nothing to explain it, the other changes go without the adds, then each
    /// add alone: an add refused on its own stays dirty with the server's reason, and blocks
    /// nothing else.
    private func synchronise(_ plans: inout [Plan]) throws -> [Answer] {
        // The call sent again after a lost answer is refused too, hence a few rounds.
        for _ in 0..<3 {
            switch try send(plans) {
            case .answered(let answers): return answers
            case .refused(let why):
                guard plans.contains(where: { !$0.adds.isEmpty }) else { throw StoreError(.server, why) }
                guard try moveHeldAdds(&plans) else { return try isolateAdds(plans) }
            }
        }
        return try isolateAdds(plans)
    }

    /// Fetches the ids again; an add whose id the server lists goes as an update of that row.
    /// Whether any did.
    private func moveHeldAdds(_ plans: inout [Plan]) throws -> Bool {
        let fetched = try ctx.rest.json("GET", target.fetchPath, cancel: ctx.cancel)
        var moved = false
        for p in plans.indices where !plans[p].adds.isEmpty {
            let server = try serverStamps(fetched.root, plans[p].table)
            let held = Set(plans[p].adds.filter { i in plans[p].locals[i].key.map { server[$0] != nil } ?? false })
            guard !held.isEmpty else { continue }
            moved = true
            plans[p].adds.removeAll(where: held.contains)
            plans[p].updates += held.sorted()
        }
        return moved
    }

    /// A refusal no fetch explains: the changes but the adds in one call (refused too, it fails
    /// the run), then each add alone. An add refused alone whose id the server lists then (its
    /// own answer was lost) is that add; any other stays dirty with the server's reason.
    private func isolateAdds(_ plans: [Plan]) throws -> [Answer] {
        func only(_ pick: (inout Plan, Plan) -> Void) -> [Plan] {
            plans.map { plan in
                var out = Plan(table: plan.table, info: plan.info)
                out.locals = plan.locals
                pick(&out, plan)
                return out
            }
        }
        var answers = Array(repeating: Answer(), count: plans.count)
        func merge(_ call: [Plan]) throws {
            guard call.contains(where: { $0.requests > 0 }) else { return }
            switch try send(call) {
            case .answered(let got): for p in answers.indices { answers[p].merge(got[p]) }
            case .refused(let why): throw StoreError(.server, why)
            }
        }
        try merge(only { out, plan in
            out.updates = plan.updates
            out.deletes = plan.deletes
            out.gets = plan.gets
        })
        var refused = only { _, _ in }
        var reasons: [Int: [Int: String]] = [:]
        for p in plans.indices {
            for i in plans[p].adds {
                var one = only { _, _ in }
                one[p].adds = [i]
                switch try send(one) {
                case .answered(let got): answers[p].merge(got[p])
                case .refused(let why):
                    refused[p].adds.append(i)
                    reasons[p, default: [:]][i] = why
                }
            }
        }
        guard refused.contains(where: { !$0.adds.isEmpty }) else { return answers }
        if try moveHeldAdds(&refused) { try merge(refused.map { var plan = $0; plan.adds = []; return plan }) }
        for p in refused.indices {
            for i in refused[p].adds {
                guard let key = plans[p].locals[i].key else { continue }
                answers[p].pushes[key] = .failed(SyncUpTask.errorJSON("DUPLICATE_VALUE", "The server refused this add (\(reasons[p]?[i] ?? "409")); it stays dirty"))
            }
        }
        return answers
    }

    package enum Sent {
        case answered([Answer])
        /// 409: the server refused the whole call (why, for a message).
        case refused(String)
    }

    /// Sends one `synchronise` call for `plans` and reads its answer.
    private func send(_ plans: [Plan]) throws -> Sent {
        if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
        // Safe to send again: adds carry their UUIDs and updates their stamps.
        let response = try ctx.rest.send("POST", target.synchroniseUrl, body: Array(body(plans).root.dump().utf8),
                                          idempotent: true, cancel: ctx.cancel)
        if response.status == 409 {
            return .refused("POST \(RemoteURL.redacted(target.synchroniseUrl)): \(RestClient.describe(response))")
        }
        guard response.isSuccess else { throw RestClient.error(for: response, method: "POST", path: target.synchroniseUrl) }
        let doc = try RestClient.parse(response.body, method: "POST", path: RemoteURL.redacted(target.synchroniseUrl))
        return .answered(try read(doc.root, plans))
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
        section("add") { plan in plan.adds.map { row(plan.locals[$0]).root.retained() } }
        section("update") { plan in plan.updates.map { row(plan.locals[$0]).root.retained() } }
        section("delete") { plan in plan.deletes.compactMap { plan.locals[$0].key.map(JSONMake.string) } }
        section("get") { plan in plan.gets.map(JSONMake.string) }
        return doc
    }

    /// An entry as a row: every field but the store's and the engine's own (`_soup*`, `__*`).
    private func row(_ local: Local) -> JSONDocument {
        let out = JSONDocument.object()
        for (name, value) in local.doc.root.members where !name.hasPrefix("_soup") && !name.hasPrefix("__") {
            out.root.set(name, owned: value.retained())
        }
        return out
    }

    /// The answer, per plan. Two shapes are accepted, told apart by their keys: the operations
    /// shape (the dev server's) has an object under `add`, `update`, `delete` or `get`; the plain
    /// shape (a server answering as its fetch does) has, per table, an array of the full rows.
    private func read(_ root: JSON, _ plans: [Plan]) throws -> [Answer] {
        guard root.isObject else {
            throw StoreError(.server, "POST \(RemoteURL.redacted(target.synchroniseUrl)): the answer must be a JSON object (per operation or per table), not \(MessageLimit.bound(String(root.dump().prefix(200))))")
        }
        let operations = ["add", "update", "delete", "get"].contains { root[$0]?.isObject ?? false }
        return try plans.map { operations ? readOperations(root, $0) : try readRows(root, $0) }
    }

    /// `{"add": {"<table>": [{"<id>", "last_update", "status", "row"?}]}, "update": ...,
    ///   "delete": {"<table>": [{"<id>", "status"}]}, "get": {"<table>": [row]}}`.
    private func readOperations(_ root: JSON, _ plan: Plan) -> Answer {
        let table = plan.table
        var out = Answer()
        for op in ["add", "update"] {
            for item in root[op]?[table.name]?.elements ?? [] {
                guard let id = item[table.idKey]?.string else { continue }
                switch item["status"]?.string ?? "" {
                case "created", "exists", "updated":
                    out.pushes[id] = .applied(stamp: item[TwoPhaseTarget.lastUpdate].flatMap { $0.string != nil ? $0 : nil }, row: nil)
                case "stale":
                    out.pushes[id] = .stale(row: item["row"].flatMap { $0.isObject ? $0 : nil })
                case "missing":
                    out.pushes[id] = .missing
                default:
                    out.pushes[id] = .failed(SyncUpTask.errorJSON("SERVER_ERROR", MessageLimit.bound(item.dump())))
                }
            }
        }
        for item in root["delete"]?[table.name]?.elements ?? [] {
            if let id = item[table.idKey]?.string { out.deleted.insert(id) }
        }
        var answered = Set<String>()
        for row in root["get"]?[table.name]?.elements ?? [] {
            guard row.isObject, let id = row[table.idKey]?.string else { continue }
            out.rows.append(row)
            answered.insert(id)
        }
        // A `get` section that leaves an id out: the server no longer has that row.
        if root["get"]?.isObject ?? false { out.gone = Set(plan.gets).subtracting(answered) }
        return out
    }

    /// `{"<table>": [row]}`: the rows of the ids sent in add, update and get, as the server now
    /// holds them; an id left out was deleted (a delete's id left out is done).
    private func readRows(_ root: JSON, _ plan: Plan) throws -> Answer {
        let table = plan.table
        let url = RemoteURL.redacted(target.synchroniseUrl)
        var out = Answer()
        guard let list = root[table.name] else {
            guard plan.adds.isEmpty && plan.updates.isEmpty && plan.gets.isEmpty else {
                throw StoreError(.server, "POST \(url): the answer has neither operations (add, update, delete, get) nor an array of rows for table '\(table.name)'")
            }
            for i in plan.deletes { if let key = plan.locals[i].key { out.deleted.insert(key) } }
            return out
        }
        guard list.isArray else {
            throw StoreError(.server, "POST \(url): the answer's '\(table.name)' must be an array of rows")
        }
        var byId: [String: JSON] = [:]
        for item in list.elements {
            guard item.isObject, let id = item[table.idKey]?.string, !id.isEmpty else {
                throw StoreError(.server, "POST \(url): each '\(table.name)' row must be an object with its \"\(table.idKey)\": \(MessageLimit.bound(String(item.dump().prefix(200))))")
            }
            if byId[id] == nil { byId[id] = item }
        }
        let adds = Set(plan.adds)
        for i in plan.adds + plan.updates {
            let local = plan.locals[i]
            guard let key = local.key else { continue }
            guard let server = byId[key] else {
                out.pushes[key] = adds.contains(i) ? .unanswered : .missing
                continue
            }
            // The row sent, or one the server made of it (its own stamp, fields it adds); a
            // row that differs and is newer than the one sent is another change: stale.
            let sent = row(local).root
            let same = sent.members.allSatisfy { name, value in
                name == TwoPhaseTarget.lastUpdate || server[name].map { $0.sameValue(as: value) } ?? false
            }
            let newer = { () -> Bool in
                guard let theirs = server[TwoPhaseTarget.lastUpdate]?.string.flatMap(Timestamp.parse) else { return false }
                return theirs > (local.stamp ?? Int64.max)
            }()
            out.pushes[key] = same || !newer ? .applied(stamp: nil, row: server) : .stale(row: server)
        }
        for i in plan.deletes {
            if let key = plan.locals[i].key, byId[key] == nil { out.deleted.insert(key) }
        }
        for id in plan.gets {
            if let row = byId[id] { out.rows.append(row) } else { out.gone.insert(id) }
        }
        return out
    }

    // MARK: after phase 2

    /// Writes one table's outcome inside the run's transaction, each entry as it is now: an
    /// entry the host changed since it was read keeps its edit.
    private func apply(_ plan: Plan, answer: Answer?, db: Connection, state: inout SyncState) throws {
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
            for i in plan.adds + plan.updates {
                position += 1
                let local = plan.locals[i]
                guard let key = local.key, let entry = unchanged(i) else { continue }
                switch answer?.pushes[key] ?? .unanswered {
                case .applied(let stamp, let row):
                    for (name, value) in row?.members ?? [] where !name.hasPrefix("_soup") {
                        entry.set(name, owned: value.retained())
                    }
                    if let stamp { entry.set(TwoPhaseTarget.lastUpdate, owned: stamp.retained()) }
                    LocalFlags.clear(entry, syncId: nil)
                    entry.remove(TwoPhaseTask.stampMark)
                    try writer.upsert(entry, index: position, now: now, into: &sink)
                case .stale(let row):
                    if overwrite, let row {
                        try store(row, entryId: local.entryId)
                    } else {
                        try note(i, entry, error: SyncUpTask.errorJSON("CONFLICT", "The server's row is newer than this local change; it was left dirty (LEAVE_IF_CHANGED)"))
                        reported.append((local.entryId, .conflict("")))
                    }
                case .missing:
                    if overwrite {
                        // Deleted there since phase 1: the edit is kept and added again next run.
                        entry.set(LocalFlags.created, owned: JSONMake.bool(true))
                        try writer.upsert(entry, index: position, now: local.lastModified, into: &sink)
                    } else {
                        try note(i, entry, error: SyncUpTask.errorJSON("ENTITY_IS_DELETED", "The server no longer has this row; it was left dirty (LEAVE_IF_CHANGED)"))
                        reported.append((local.entryId, .conflict("")))
                    }
                case .unanswered:
                    try note(i, entry, error: SyncUpTask.errorJSON("NO_ANSWER", "The server's answer did not mention this row; it stays dirty for the next sync"))
                    reported.append((local.entryId, .failed("")))
                case .failed(let error):
                    try note(i, entry, error: error)
                    reported.append((local.entryId, .failed("")))
                }
            }
            // Deletes: whatever the answer (deleted, or missing: gone already), the row is gone.
            for i in plan.deletes {
                position += 1
                let local = plan.locals[i]
                guard let key = local.key, answer?.deleted.contains(key) ?? false, let entry = current[local.entryId]?.root else { continue }
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
            for row in answer?.rows ?? [] {
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
            // A get the server no longer answers: deleted there since phase 1 (a dirty entry is
            // left to the next run, which sees it gone).
            for key in answer?.gone ?? [] {
                if let i = localByKey[key], !plan.locals[i].dirty, unchanged(i) != nil { removals.append(plan.locals[i].entryId) }
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
