import CJansson
import SyncStoreSupport
import SyncStoreCore

/// One run of a sync up (docs/sync.md#sync-up). Dirty entries are pushed in batches (sObject
/// Collections) or one by one; each batch's outcome is committed in one transaction that
/// re-reads every entry first, so an edit the host made while the batch was in flight is kept
/// (the entry stays dirty with the new edit: an entry counts as edited when its stored JSON
/// differs from what was read, an exact test that no clock resolution can fool). Creates are
/// made exactly once: by upsert on an external id when the target has one, else the entry is
/// marked before the request and a retry after a lost answer adopts the record the first
/// attempt created (LostCreateFinder). After its own writes the local copy takes the server's
/// new modification date, so the next LEAVE_IF_CHANGED run sees no false conflict.
package struct SyncUpTask: SyncRun {
    package let ctx: SyncContext
    package let target: SyncUpTarget
    package let options: SyncOptions
    package let states: SyncStateStore
    package let emit: (SyncState) -> Void

    package enum Action { case create, update, delete, localDelete }

    /// A dirty entry as read for this batch.
    package struct Item {
        package let entryId: Int64
        package let entry: JSONDocument
        package var action: Action
        package let type: String
        package var serverId: String?
        /// A clean local copy of this entry's server record, removed when the entry adopts it.
        package var absorbs: Int64? = nil
        /// The server record an unanswered create made, adopted in this run by an entry edited
        /// since: the entry takes its id and is pushed as an update.
        package var adopted: String? = nil
        package var lastModified: Int64 { entry.root[SoupPath.lastModified]?.int64 ?? 0 }
    }

    package enum Outcome {
        case created(String)
        case updated
        case deleted
        case failed(String)
        case conflict(String)
        case untouched
        /// Update of a record deleted on the server, OVERWRITE: the entry becomes a create.
        case recreate
    }

    package func run(_ state: inout SyncState) throws {
        let info = try ctx.store.requireSoup(ctx.soupName)
        var ids = try dirtyIds(info)
        state.totalSize = Int64(ids.count)
        var requeued = Set<Int64>()
        // The server's new modification dates of a batch's records are read while the next
        // batch is pushed, and stored with it (or at the end): the read costs no wall time.
        var pendingDates: Prefetch<[Int64: String]>? = nil
        defer { _ = try? pendingDates?.join() }
        var offset = 0
        while offset < ids.count {
            if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
            let chunk = Array(ids[offset..<min(ids.count, offset + target.batchSize)])
            offset += chunk.count
            var items = try load(chunk, info: info)
            var outcomes = [Outcome](repeating: .untouched, count: items.count)
            try prepare(&items, &outcomes, info: info)
            if options.mergeMode == .leaveIfChanged { try checkConflicts(items, &outcomes) }
            try push(&items, &outcomes)
            let written = writtenRecords(items, outcomes)
            let latest = ctx.rest.serverNow.map { $0 + 1_000 }
            let earlier = (try? pendingDates?.join()) ?? [:]
            pendingDates = written.isEmpty ? nil : Prefetch { [self] in try modificationDates(written, latest: latest) }
            var next = state
            next.progress = min(100, offset * 100 / ids.count)
            next.record(items.map(\.entryId), outcomes)
            try apply(items, outcomes, info: info, dates: earlier, state: next)
            // A record deleted on the server is created again (OVERWRITE), once, in this run.
            for (i, item) in items.enumerated() where outcomes[i].isRecreate && requeued.insert(item.entryId).inserted {
                ids.append(item.entryId)
            }
            state = next
            emit(state)
        }
        // Best effort: without them the next LEAVE_IF_CHANGED run still tells our own writes
        // from others' by their values (acceptOwnWrites).
        if let last = try? pendingDates?.join(), !last.isEmpty {
            try ctx.store.write { db in try applyDates(db, last, info: info) }
        }
        pendingDates = nil
        state.progress = 100
    }

    // MARK: reading

    package func dirtyIds(_ info: SoupInfo) throws -> [Int64] {
        try ctx.store.readers.withReader { db in
            let statement = try db.prepare("SELECT id FROM \(info.table) WHERE \(LocalFlags.dirtyCondition) ORDER BY id")
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(0)) }
            return ids
        }
    }

    package func load(_ ids: [Int64], info: SoupInfo) throws -> [Item] {
        let text = try ctx.store.retrieve(soup: info.name, ids: ids)
        let doc: JSONDocument
        do {
            doc = try JSONDocument.parse(text.string, what: "dirty entries", limitDepth: false)
        } catch {
            // Name the entry at fault (one stored by an earlier version against the JSON rule).
            for id in ids {
                let one = try ctx.store.retrieve(soup: info.name, ids: [id])
                var bytes = one.string
                try bytes.withUTF8 { b in
                    if let base = b.baseAddress { _ = try SmartStore.storedEntry(base, length: b.count, id: id, soup: info.name) }
                }
            }
            throw error
        }
        var items: [Item] = []
        for entry in doc.root.elements {
            guard let entryId = entry[SoupPath.entryId]?.int64, LocalFlags.isSet(entry[LocalFlags.local]) else { continue }
            // Each item owns a copy so later batches do not hold the whole page.
            guard let copy = json_deep_copy(entry.raw) else { continue }
            let own = JSONDocument(owning: copy)
            let serverId = own.root[target.idFieldName]?.string.flatMap { $0.isEmpty ? nil : $0 }
            let created = LocalFlags.isSet(own.root[LocalFlags.created]) || serverId == nil
            let action: Action
            if LocalFlags.isSet(own.root[LocalFlags.deleted]) {
                action = created ? .localDelete : .delete
            } else {
                action = created ? .create : .update
            }
            let type = own.root["attributes"]?["type"]?.string ?? target.sobjectType ?? ""
            items.append(Item(entryId: entryId, entry: own, action: action, type: type, serverId: serverId))
        }
        return items
    }

    // MARK: before sending

    /// Items without a type fail. Before any create is sent, the entry is given what makes the
    /// create repeatable, committed first: a generated external id (upsert targets), or a
    /// "sent" mark so a retry after a lost answer can find the record (other targets). Creates
    /// sent earlier without an answer are reconciled here, a whole batch with one query per type.
    /// `createFields` gives what a create of an item sends, when that is not just the target's
    /// fields of the entry (parent_children: the parent's server id). `renamed` is called in the
    /// transaction that gives an entry the id of the record it adopted, with the entry's id before
    /// (its temporary one, if any) and the record's (parent_children: its children follow).
    package func prepare(_ items: inout [Item], _ outcomes: inout [Outcome], info: SoupInfo,
                 createFields: ((Item) -> [(String, JSON)])? = nil,
                 renamed: ((Connection, String?, String) throws -> Void)? = nil) throws {
        for i in items.indices where items[i].type.isEmpty && items[i].action != .localDelete && target.custom == nil {
            outcomes[i] = .failed(errorJSON("NO_SOBJECT_TYPE", "The record has no attributes.type and the target no sobjectType"))
        }
        guard target.custom == nil else { return }
        // External id marks carry their value; "sent" marks are made in the transaction, from
        // the entry as it is sent.
        var marks: [Int: [(String, UnsafeMutablePointer<json_t>?)]] = [:]
        let creates = items.indices.filter { items[$0].action == .create && pending(outcomes, $0) }
        // Creates sent without an answer (upserts are repeatable: only POSTs), and local
        // deletes of such creates: the record may exist on the server.
        let ext = target.externalIdFieldName
        let sent = items.indices.filter {
            (ext == nil && items[$0].action == .create || items[$0].action == .localDelete) && pending(outcomes, $0)
                && items[$0].entry.root[LocalFlags.pendingCreate] != nil
        }.map { ($0, items[$0]) }
        let finder = LostCreateFinder(ctx: ctx, target: target, options: options)
        var found = try finder.find(sent, fields: createFields ?? { sentFields($0) }, info: info)
        // A record not found may still be on its way: the server can commit an earlier attempt
        // after its answer was lost (a killed process, a stop, a timeout). Such an entry waits
        // until that attempt has settled and is looked for again; only then is it sent anew
        // (or, deleted locally, dropped).
        let settleMs = Int64(ctx.rest.current.createSettleMs)
        let wait = sent.filter { found[$0.0] == nil }
            .map { LostCreateFinder.unsettledMs($0.1.entry.root, settleMs: settleMs) }.max() ?? 0
        if wait > 0 {
            try RestClient.pause(wait, cancel: ctx.cancel)
            found = try finder.find(sent, fields: createFields ?? { sentFields($0) }, info: info)
        }
        adopt(found, &items, &outcomes)
        try persistAdoptions(&items, outcomes, info: info, renamed: renamed)
        if let ext {
            // Upserts are repeatable, but a sync down before the retry must still tell the
            // record it brings from a second one: the "sent" mark lets it adopt the record.
            for i in creates {
                if let v = items[i].entry.root[ext], !v.isNull {
                    marks[i] = [(LocalFlags.pendingCreate, nil)]
                } else {
                    marks[i] = [(ext, JSONMake.string(ClientId.make())), (LocalFlags.pendingCreate, nil)]
                }
            }
        } else {
            for i in creates where found[i] == nil { marks[i] = [(LocalFlags.pendingCreate, nil)] }
        }
        guard !marks.isEmpty else { return }
        let now = Clock.nowMillis()
        var deletedMeanwhile: [Int] = []
        let marked: [Int: JSONDocument] = try ctx.store.write { db in
            try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
                var sink: TextBuffer? = nil
                var marked: [Int: JSONDocument] = [:]
                for (i, entryMarks) in marks {
                    guard let current = try self.current(items[i].entryId, db: db, info: info) else { continue }
                    // Deleted by the host while the run waited for an earlier attempt to settle
                    // (not found: its record was never made): dropped, never sent.
                    if ext == nil, items[i].action == .create, LocalFlags.isSet(current.root[LocalFlags.deleted]), found[i] == nil {
                        deletedMeanwhile.append(i)
                        continue
                    }
                    // In order: the "sent" mark holds the external id given just before it.
                    for (key, given) in entryMarks {
                        // A retried create may have made its record at the first attempt: the
                        // search window keeps starting there.
                        let since = current.root[LocalFlags.pendingCreate]
                        let value = given.map { cjansson_incref($0) }
                            ?? LostCreateFinder.mark(ctx.rest, sent: target.fields(of: current.root, creating: true, options: options), since: since)
                        current.root.set(key, owned: value)
                    }
                    try writer.upsert(current.root, index: i, now: now, into: &sink)
                    // As stored (with its new _soupLastModifiedDate): what later edits are told from.
                    marked[i] = try self.current(items[i].entryId, db: db, info: info) ?? current
                }
                return marked
            }
        }
        for (_, entryMarks) in marks { for (_, given) in entryMarks { if let v = given { cjansson_decref(v) } } }
        for i in deletedMeanwhile {
            items[i] = Item(entryId: items[i].entryId, entry: items[i].entry, action: .localDelete, type: items[i].type,
                            serverId: nil, absorbs: items[i].absorbs, adopted: items[i].adopted)
        }
        // Send what is stored now: it includes any edit made since the batch was read.
        for (i, entry) in marked {
            items[i] = Item(entryId: items[i].entryId, entry: entry, action: items[i].action, type: items[i].type,
                            serverId: items[i].serverId, absorbs: items[i].absorbs, adopted: items[i].adopted)
        }
    }

    /// Entries take the records their unanswered creates made: unchanged since sent, the create
    /// is done; edited since, the record gets the edit as an update; deleted locally since, the
    /// record is deleted on the server.
    private func adopt(_ found: [Int: LostCreateFinder.Found], _ items: inout [Item], _ outcomes: inout [Outcome]) {
        for (i, record) in found {
            items[i].serverId = record.serverId
            items[i].absorbs = record.absorbs
            if items[i].action == .localDelete {
                // The entry names the record (so no sync down brings it back as a new entry)
                // and deletes it.
                items[i].action = .delete
                items[i].adopted = record.serverId
            } else if LostCreateFinder.same(target.fields(of: items[i].entry.root, creating: true, options: options), sentFields(items[i])) {
                outcomes[i] = .created(record.serverId)
            } else {
                items[i].action = .update
                items[i].adopted = record.serverId
            }
        }
    }

    /// Entries that adopted a record and will change it (an update with their edits, or a
    /// delete) take its id before anything is sent, with any clean copy of it removed, in one
    /// committed transaction. The record stops holding what the create sent once the update
    /// lands, so it can never be found again: an adoption lost to a crash after that update made
    /// the record twice (and brought the first one down as a second entry).
    private func persistAdoptions(_ items: inout [Item], _ outcomes: [Outcome], info: SoupInfo,
                                  renamed: ((Connection, String?, String) throws -> Void)?) throws {
        let adopted = items.indices.filter { items[$0].adopted != nil && pending(outcomes, $0) }
        guard !adopted.isEmpty else { return }
        let stored: [Int: JSONDocument] = try ctx.store.write { db in
            var stored: [Int: JSONDocument] = [:]
            var removals: [Int64] = []
            var renames: [(String?, String)] = []
            try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
                var sink: TextBuffer? = nil
                let now = Clock.nowMillis()
                for i in adopted {
                    guard let id = items[i].adopted, let current = try self.current(items[i].entryId, db: db, info: info) else { continue }
                    renames.append((current.root[target.idFieldName]?.string, id))
                    current.root.set(target.idFieldName, owned: JSONMake.string(id))
                    current.root.set(LocalFlags.created, owned: JSONMake.bool(false))
                    current.root.set(LocalFlags.updated, owned: JSONMake.bool(true))
                    current.root.remove(LocalFlags.pendingCreate)
                    try writer.upsert(current.root, index: i, now: now, into: &sink)
                    if let copy = items[i].absorbs, try isClean(copy, db: db, info: info) { removals.append(copy) }
                    stored[i] = try self.current(items[i].entryId, db: db, info: info) ?? current
                }
            }
            try ctx.store.deleteRows(db, info, ids: removals)
            if let renamed { for (old, new) in renames { try renamed(db, old, new) } }
            return stored
        }
        // What is stored now is what later edits are told from.
        for (i, entry) in stored {
            items[i] = Item(entryId: items[i].entryId, entry: entry, action: items[i].action, type: items[i].type,
                            serverId: items[i].serverId, absorbs: nil, adopted: items[i].adopted)
        }
    }

    /// Before a sync down: entries whose creates were sent without an answer adopt the records
    /// those creates made, so the sync down updates them instead of storing the records again as
    /// second entries; entries deleted locally since take the record's id and delete it at the
    /// next sync up (a LEAVE_IF_CHANGED sync down leaves them alone). Returns the entries whose
    /// records were not found: a create the server commits late (after a stop or a timeout) may
    /// still make one that the sync down brings (`adopt(records:)`).
    package func adoptLostCreates(info: SoupInfo) throws -> [Item] {
        let marked = try ctx.store.readers.withReader { db in
            // Every sync down runs this over the whole soup: a substring test first, so entries
            // without a mark (nearly all) cost no JSON parsing.
            let statement = try db.prepare("SELECT id FROM \(info.table) WHERE instr(soup, '\"\(LocalFlags.pendingCreate)\"') > 0 AND \(LocalFlags.dirtyCondition) AND \(SoupPath.jsonExtract(LocalFlags.pendingCreate)) IS NOT NULL ORDER BY id")
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(0)) }
            return ids
        }
        guard !marked.isEmpty else { return [] }
        var items = try load(marked, info: info).filter { $0.action == .create || $0.action == .localDelete }
        var outcomes = [Outcome](repeating: .untouched, count: items.count)
        let found = try LostCreateFinder(ctx: ctx, target: target, options: options)
            .find(items.indices.map { ($0, items[$0]) }, fields: { sentFields($0) }, info: info)
        guard !found.isEmpty else { return items }
        adopt(found, &items, &outcomes)
        let adopted = items.indices.filter { found[$0] != nil }
        try apply(adopted.map { items[$0] }, adopted.map { outcomes[$0] }, info: info, state: nil)
        return items.indices.filter { found[$0] == nil }.map { items[$0] }
    }

    /// Inside a sync down's page transaction, before the page is written: `pending` entries
    /// (from `adoptLostCreates`) adopt the page's records that their creates made and that no
    /// entry holds, so the page updates them. Returns the entries still without a record.
    package func adopt(records: [JSON], idFieldName: String, pending: [Item], db: Connection, info: SoupInfo) throws -> [Item] {
        var items = pending
        var found: [Int: LostCreateFinder.Found] = [:]
        let offset = ctx.rest.serverNow.map { $0 - Clock.nowMillis() }
        for record in records {
            guard let id = record[idFieldName]?.string, !id.isEmpty,
                  let i = items.indices.first(where: { found[$0] == nil && LostCreateFinder.made(record, by: items[$0], sent: sentFields(items[$0]), clockOffset: offset) }),
                  try LostCreateFinder.holders(id, idFieldName: target.idFieldName, info: info, db: db).isEmpty else { continue }
            found[i] = LostCreateFinder.Found(serverId: id, absorbs: nil)
        }
        guard !found.isEmpty else { return pending }
        var outcomes = [Outcome](repeating: .untouched, count: items.count)
        adopt(found, &items, &outcomes)
        let adopted = items.indices.filter { found[$0] != nil }
        try applyIn(db, adopted.map { items[$0] }, adopted.map { outcomes[$0] }, info: info)
        return items.indices.filter { found[$0] == nil }.map { pending[$0] }
    }

    /// What the entry's create sent (from its mark), else what it would send now.
    package func sentFields(_ item: Item) -> [(String, JSON)] {
        LostCreateFinder.sentValues(item.entry.root) ?? target.fields(of: item.entry.root, creating: true, options: options)
    }

    /// LEAVE_IF_CHANGED: updates and deletes go ahead only if the local copy is at least as new
    /// as the server's; otherwise the record is a conflict. A local copy without the
    /// modification date (a whole-entry upsert dropped it) is compared by the time of its last
    /// local write, on the server's clock: a server change after the local edit is a conflict;
    /// one before it cannot be told from the copy the edit started from, and the edit is sent.
    /// Entries that already failed (no type) are not looked up.
    private func checkConflicts(_ items: [Item], _ outcomes: inout [Outcome]) throws {
        let candidates = items.indices.filter {
            (items[$0].action == .update || items[$0].action == .delete) && items[$0].serverId != nil && pending(outcomes, $0)
        }
        guard !candidates.isEmpty else { return }
        var serverTimes: [String: Int64?] = [:]
        let field = target.modificationDateFieldName
        if target.custom != nil { return }
        if target.mode == .single {
            for i in candidates {
                guard let id = items[i].serverId else { continue }
                let response = try ctx.rest.send("GET", "sobjects/\(RemoteURL.encode(items[i].type))/\(RemoteURL.encode(id))?fields=\(RemoteURL.encode(field))", cancel: ctx.cancel)
                if response.status == 404 { serverTimes[id] = .some(nil); continue }
                guard response.isSuccess else { throw RestClient.error(for: response, method: "GET", path: "sobjects/\(items[i].type)") }
                let doc = try response.json(what: "server record")
                serverTimes[id] = doc.root[field]?.string.flatMap(Timestamp.parse)
            }
        } else {
            for (type, indices) in Dictionary(grouping: candidates, by: { items[$0].type }) {
                let records = try retrieve(type: type, ids: indices.compactMap { items[$0].serverId }, fields: [field])
                // The answer is in request order; null marks a deleted record.
                for (position, i) in indices.enumerated() {
                    guard let id = items[i].serverId else { continue }
                    let record = records.root[position]
                    serverTimes[id] = (record?.isNull ?? true) ? .some(nil) : record?[field]?.string.flatMap(Timestamp.parse)
                }
            }
        }
        // Local write times are on this machine's clock; the server's answers give its offset.
        let clockOffset = ctx.rest.serverNow.map { $0 - Clock.nowMillis() } ?? 0
        for i in candidates {
            guard let id = items[i].serverId, let known = serverTimes[id] else { continue }
            guard let serverTime = known else {
                if items[i].action == .update {
                    outcomes[i] = .failed(errorJSON("ENTITY_IS_DELETED", "The record was deleted on the server; LEAVE_IF_CHANGED leaves the local copy"))
                }
                continue
            }
            if let localTime = items[i].entry.root[field]?.string.flatMap(Timestamp.parse) {
                if localTime < serverTime {
                    outcomes[i] = .conflict(errorJSON("CONFLICT", "The server record changed after the local copy was synced (server \(field) \(Timestamp.format(serverTime))); the local change was not sent"))
                }
            } else if let written = items[i].entry.root[SoupPath.lastModified]?.int64, written + clockOffset < serverTime {
                outcomes[i] = .conflict(errorJSON("CONFLICT", "The server record changed after the local edit (server \(field) \(Timestamp.format(serverTime)); the local copy has no \(field)); the local change was not sent"))
            }
        }
        try acceptOwnWrites(items, &outcomes)
    }

    /// A newer server copy that already holds every value this update sends is our own write
    /// whose answer was lost (or an identical one): not a conflict, and nothing to send. Read
    /// only for the few suspected conflicts; when that read fails they stay conflicts.
    private func acceptOwnWrites(_ items: [Item], _ outcomes: inout [Outcome]) throws {
        let suspects = items.indices.filter {
            if case .conflict = outcomes[$0], items[$0].action == .update, items[$0].serverId != nil { return true }
            return false
        }
        for (type, indices) in Dictionary(grouping: suspects, by: { items[$0].type }) {
            let sent = indices.map { target.fields(of: items[$0].entry.root, creating: false, options: options) }
            var names: [String] = []
            for fields in sent { for (name, _) in fields where !names.contains(name) { names.append(name) } }
            guard !names.isEmpty,
                  let records = try? retrieve(type: type, ids: indices.compactMap { items[$0].serverId }, fields: names) else { continue }
            for (position, i) in indices.enumerated() {
                guard let record = records.root[position], record.isObject, !sent[position].isEmpty else { continue }
                if sent[position].allSatisfy({ name, value in LostCreateFinder.same(record[name], value) }) { outcomes[i] = .updated }
            }
        }
    }

    /// Records of `type` by id with `fields` (sObject Collections retrieve, 200 ids a request),
    /// in the order of `ids`; null for a record the server does not have.
    package func retrieve(type: String, ids: [String], fields: [String]) throws -> JSONDocument {
        let all = JSONDocument.array()
        var start = 0
        while start < ids.count {
            let chunk = ids[start..<min(ids.count, start + 200)]
            start += chunk.count
            let body = JSONDocument.object()
            let idList = JSONDocument.array()
            for id in chunk { idList.root.append(owned: JSONMake.string(id)) }
            let fieldList = JSONDocument.array()
            for name in fields { fieldList.root.append(owned: JSONMake.string(name)) }
            body.root.set("ids", owned: idList.root.retained())
            body.root.set("fields", owned: fieldList.root.retained())
            let doc = try ctx.rest.json("POST", "composite/sobjects/\(RemoteURL.encode(type))", body: Array(body.root.dump().utf8),
                                        idempotent: true, cancel: ctx.cancel)
            guard doc.root.isArray, doc.root.count == chunk.count else {
                throw StoreError(.server, "The server answered a retrieve of \(chunk.count) \(type) records with \(doc.root.count) results")
            }
            for record in doc.root.elements { all.root.append(owned: record.retained()) }
        }
        return all
    }

    // MARK: sending

    package func pending(_ outcomes: [Outcome], _ i: Int) -> Bool {
        if case .untouched = outcomes[i] { return true }
        return false
    }

    private func push(_ items: inout [Item], _ outcomes: inout [Outcome]) throws {
        for i in items.indices where items[i].action == .localDelete { outcomes[i] = .deleted }
        if let custom = target.custom {
            for i in items.indices where pending(outcomes, i) { outcomes[i] = try pushCustom(items[i], custom) }
            return
        }
        if target.mode == .single {
            for i in items.indices where pending(outcomes, i) { outcomes[i] = try pushSingle(items[i]) }
        } else {
            try pushCollection(items, &outcomes)
        }
        // 404 on update: OVERWRITE creates the record again, as a create of its own (marked
        // first, so a lost answer cannot make it twice).
        for i in items.indices {
            if case .failed(let error) = outcomes[i], items[i].action == .update, options.mergeMode == .overwrite,
               error.includes("ENTITY_IS_DELETED") || error.includes("NOT_FOUND") {
                outcomes[i] = .recreate
            }
        }
    }

    package func body(_ item: Item, creating: Bool, withType: Bool, withId: Bool) -> JSONDocument {
        let doc = JSONDocument.object()
        if withType {
            let attributes = JSONDocument.object()
            attributes.root.set("type", owned: JSONMake.string(item.type))
            doc.root.set("attributes", owned: attributes.root.retained())
        }
        if withId, let id = item.serverId { doc.root.set("Id", owned: JSONMake.string(id)) }
        for (name, value) in target.fields(of: item.entry.root, creating: creating, options: options) {
            doc.root.set(name, owned: value.retained())
        }
        if creating, let ext = target.externalIdFieldName, let value = item.entry.root[ext], !value.isNull {
            doc.root.set(ext, owned: value.retained())
        }
        return doc
    }

    private func pushSingle(_ item: Item) throws -> Outcome {
        let type = RemoteURL.encode(item.type)
        switch item.action {
        case .create:
            if let ext = target.externalIdFieldName, let value = externalValue(item, ext) {
                let payload = body(item, creating: true, withType: false, withId: false)
                payload.root.remove(ext)
                let path = "sobjects/\(type)/\(RemoteURL.encode(ext))/\(RemoteURL.encode(value))"
                let response = try ctx.rest.send("PATCH", path, body: Array(payload.root.dump().utf8), cancel: ctx.cancel)
                if response.isSuccess && response.body.isEmpty {
                    // 204 (older API versions): the record existed; read its id back.
                    let record = try ctx.rest.json("GET", "\(path)?fields=Id", cancel: ctx.cancel)
                    if let id = record.root["Id"]?.string { return .created(id) }
                }
                return try createdOutcome(response)
            }
            let payload = body(item, creating: true, withType: false, withId: false)
            return try createdOutcome(try ctx.rest.send("POST", "sobjects/\(type)", body: Array(payload.root.dump().utf8), cancel: ctx.cancel))
        case .update:
            guard let id = item.serverId else { return .failed(errorJSON("NO_ID", "The record has no server id")) }
            let payload = body(item, creating: false, withType: false, withId: false)
            let response = try ctx.rest.send("PATCH", "sobjects/\(type)/\(RemoteURL.encode(id))", body: Array(payload.root.dump().utf8), cancel: ctx.cancel)
            return response.isSuccess ? .updated : .failed(errorText(response))
        case .delete:
            guard let id = item.serverId else { return .deleted }
            let response = try ctx.rest.send("DELETE", "sobjects/\(type)/\(RemoteURL.encode(id))", cancel: ctx.cancel)
            return response.isSuccess || response.status == 404 ? .deleted : .failed(errorText(response))
        case .localDelete:
            return .deleted
        }
    }

    package func createdOutcome(_ response: HTTPResponse) throws -> Outcome {
        guard response.isSuccess else { return .failed(errorText(response)) }
        let doc = try response.body.isEmpty ? JSONDocument.object() : response.json(what: "create response")
        guard let id = doc.root["id"]?.string else {
            return .failed(errorJSON("NO_ID", "The server answered the create without an id"))
        }
        return .created(id)
    }

    /// The record's external id value (prepare() stored one before the first attempt, so a
    /// retried upsert always names the same record).
    private func externalValue(_ item: Item, _ field: String) -> String? {
        guard let v = item.entry.root[field], !v.isNull else { return nil }
        return v.string ?? v.dump()
    }

    private func pushCollection(_ items: [Item], _ outcomes: inout [Outcome]) throws {
        // Creates: upsert collections per type when an external id is configured, else POST.
        let creates = items.indices.filter { items[$0].action == .create && pending(outcomes, $0) }
        if let ext = target.externalIdFieldName {
            for (type, indices) in Dictionary(grouping: creates, by: { items[$0].type }) {
                try collection("PATCH", "composite/sobjects/\(RemoteURL.encode(type))/\(RemoteURL.encode(ext))", items, indices,
                               creating: true, &outcomes)
            }
        } else if !creates.isEmpty {
            try collection("POST", "composite/sobjects", items, creates, creating: true, &outcomes)
        }
        let updates = items.indices.filter { items[$0].action == .update && pending(outcomes, $0) }
        if !updates.isEmpty {
            try collection("PATCH", "composite/sobjects", items, updates, creating: false, &outcomes)
        }
        let deletes = items.indices.filter { items[$0].action == .delete && pending(outcomes, $0) }
        if !deletes.isEmpty {
            let ids = deletes.compactMap { items[$0].serverId }.map(RemoteURL.encode).joined(separator: ",")
            let response = try ctx.rest.send("DELETE", "composite/sobjects?ids=\(ids)&allOrNone=false", cancel: ctx.cancel)
            guard response.isSuccess else { throw RestClient.error(for: response, method: "DELETE", path: "composite/sobjects") }
            let results = try response.json(what: "collection response")
            for (position, i) in deletes.enumerated() { outcomes[i] = deleteOutcome(results, position) }
        }
    }

    /// A collection delete's result: a record already gone counts as deleted.
    package func deleteOutcome(_ results: JSONDocument, _ position: Int) -> Outcome {
        let result = collectionOutcome(results, position, created: false)
        if case .failed(let e) = result, e.includes("ENTITY_IS_DELETED") || e.includes("NOT_FOUND") { return .deleted }
        if case .updated = result { return .deleted }
        return result
    }

    /// Creates or updates `indices` in one collections request. A request the server refuses as a
    /// whole (400: one record it cannot read, such as a field the type does not have, fails the
    /// request, not that record) is sent again record by record, so each entry gets its own
    /// outcome and the others still go up.
    private func collection(_ method: String, _ path: String, _ items: [Item], _ indices: [Int], creating: Bool,
                            _ outcomes: inout [Outcome]) throws {
        let records = indices.map { body(items[$0], creating: creating, withType: true, withId: !creating) }
        if let results = try collectionCall(method, path, records: records) {
            for (position, i) in indices.enumerated() { outcomes[i] = collectionOutcome(results, position, created: creating) }
        } else {
            for i in indices { outcomes[i] = try pushSingle(items[i]) }
        }
    }

    /// One sObject Collections request (allOrNone false): the per-record results, in order; nil
    /// when the server refused the request as a whole as bad (400).
    private func collectionCall(_ method: String, _ path: String, records: [JSONDocument]) throws -> JSONDocument? {
        let body = JSONDocument.object()
        body.root.set("allOrNone", owned: JSONMake.bool(false))
        let list = JSONDocument.array()
        for record in records { list.root.append(owned: record.root.retained()) }
        body.root.set("records", owned: list.root.retained())
        let response = try ctx.rest.send(method, path, body: Array(body.root.dump().utf8), cancel: ctx.cancel)
        if response.status == 400 { return nil }
        guard response.isSuccess else { throw RestClient.error(for: response, method: method, path: path) }
        let results = try response.json(what: "collection response")
        guard results.root.isArray, results.root.count == records.count else {
            throw StoreError(.server, "\(method) \(path) answered \(results.root.count) results for \(records.count) records")
        }
        return results
    }

    /// A collection create's or update's result at `position` of the per-record results.
    package func collectionOutcome(_ results: JSONDocument, _ position: Int, created: Bool) -> Outcome {
        guard let result = results.root[position] else { return .failed(errorJSON("NO_RESULT", "The server gave no result for this record")) }
        if result["success"]?.bool == true {
            if created, let id = result["id"]?.string { return .created(id) }
            return .updated
        }
        let errors = result["errors"] ?? results.root
        return .failed(errors.dump())
    }

    private func pushCustom(_ item: Item, _ custom: CustomTargetCallbacks) throws -> Outcome {
        guard let push = custom.pushRecord else { return .failed(errorJSON("NO_CALLBACK", "The custom target cannot push records")) }
        let action: String
        switch item.action {
        case .create: action = "create"
        case .update: action = "update"
        case .delete: action = "delete"
        case .localDelete: return .deleted
        }
        do {
            let text = try push(target.customJSON, action, item.entry.root.dump())
            let doc = try JSONDocument.parse(text.isEmpty ? "{}" : text, what: "custom target push_record result")
            switch item.action {
            case .create:
                guard let id = doc.root["id"]?.string else { return .failed(errorJSON("NO_ID", "The custom target returned no id")) }
                return .created(id)
            case .update: return .updated
            default: return .deleted
            }
        } catch let error as StoreError where error.code == .server || error.code == .conflict {
            return .failed(errorJSON("CUSTOM_TARGET_ERROR", error.message))
        }
    }

    // MARK: committing

    package func current(_ entryId: Int64, db: Connection, info: SoupInfo) throws -> JSONDocument? {
        let statement = try db.prepare("SELECT soup FROM \(info.table) WHERE id = ?")
        try statement.bind([.int(entryId)])
        guard try statement.step() else { return nil }
        let bytes = statement.textBytes(0)
        guard let base = bytes.baseAddress else { return nil }
        return try SmartStore.storedEntry(base, length: bytes.count, id: entryId, soup: info.name)
    }

    /// Records a batch created or updated on the server: (entry id, type, server id).
    package func writtenRecords(_ items: [Item], _ outcomes: [Outcome]) -> [(Int64, String, String)] {
        guard target.custom == nil else { return [] }
        var written: [(Int64, String, String)] = []
        for (i, outcome) in outcomes.enumerated() where !items[i].type.isEmpty {
            switch outcome {
            case .created(let id): written.append((items[i].entryId, items[i].type, id))
            case .updated: if let id = items[i].serverId { written.append((items[i].entryId, items[i].type, id)) }
            default: break
            }
        }
        return written
    }

    /// The server's modification date of records we wrote, by entry id (one retrieve per type
    /// and 200 records), so the local copy can carry it and the next LEAVE_IF_CHANGED run sees
    /// no false conflict. A date later than `latest` (the server's clock when our writes were
    /// answered, plus the Date header's second) is someone else's later change: not taken.
    package func modificationDates(_ written: [(Int64, String, String)], latest: Int64?) throws -> [Int64: String] {
        let field = target.modificationDateFieldName
        var dates: [Int64: String] = [:]
        for (type, group) in Dictionary(grouping: written, by: { $0.1 }) {
            let records = try retrieve(type: type, ids: group.map(\.2), fields: [field])
            for (position, record) in group.enumerated() {
                guard let text = records.root[position]?[field]?.string, let ms = Timestamp.parse(text) else { continue }
                if let latest, ms > latest { continue }
                dates[record.0] = text
            }
        }
        return dates
    }

    /// Stores the server's modification dates on the entries (flags untouched).
    package func applyDates(_ db: Connection, _ dates: [Int64: String], info: SoupInfo) throws {
        guard !dates.isEmpty else { return }
        try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
            var sink: TextBuffer? = nil
            let now = Clock.nowMillis()
            for (position, (entryId, date)) in dates.enumerated() {
                guard let current = try self.current(entryId, db: db, info: info) else { continue }
                current.root.set(target.modificationDateFieldName, owned: JSONMake.string(date))
                try writer.upsert(current.root, index: position, now: now, into: &sink)
            }
        }
    }

    /// Applies a batch's outcomes and the state in one transaction, each on the entry as it is
    /// now: if the host changed it since it was read, its new edit stays dirty.
    /// `dates`: modification dates of records written by an earlier batch, stored with this one.
    package func apply(_ items: [Item], _ outcomes: [Outcome], info: SoupInfo, dates: [Int64: String] = [:], state: SyncState?) throws {
        try ctx.store.write { db in
            try applyIn(db, items, outcomes, info: info)
            try applyDates(db, dates, info: info)
            if let state { try states.save(state, db: db) }
        }
    }

    /// `apply` inside a transaction the caller holds.
    package func applyIn(_ db: Connection, _ items: [Item], _ outcomes: [Outcome], info: SoupInfo) throws {
        var removals: [Int64] = []
        try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
            var sink: TextBuffer? = nil
            let now = Clock.nowMillis()
            for (i, item) in items.enumerated() {
                // The clean copy a sync down stored of the record this entry now holds.
                if let copy = item.absorbs, !isUntouched(outcomes[i]), try isClean(copy, db: db, info: info) { removals.append(copy) }
                guard let current = try self.current(item.entryId, db: db, info: info) else { continue }
                let entry = current.root
                // Exact: any write since the batch was read changed the stored JSON (at least
                // its _soupLastModifiedDate, and whatever the host edited).
                let edited = json_equal(entry.raw, item.entry.root.raw) == 0
                if let id = item.adopted ?? { if case .created(let id) = outcomes[i] { return id }; return nil }() {
                    try ctx.store.recentCreates.record(table: info.table, entryId: item.entryId, idField: target.idFieldName, serverId: id)
                }
                if let id = item.adopted {
                    // Whatever became of the update, the entry now names the record.
                    entry.set(target.idFieldName, owned: JSONMake.string(id))
                    entry.set(LocalFlags.created, owned: JSONMake.bool(false))
                    entry.set(LocalFlags.updated, owned: JSONMake.bool(true))
                    entry.remove(LocalFlags.pendingCreate)
                }
                switch outcomes[i] {
                case .untouched:
                    if item.adopted == nil { continue }
                case .created(let id):
                    entry.set(target.idFieldName, owned: JSONMake.string(id))
                    if edited {
                        entry.set(LocalFlags.created, owned: JSONMake.bool(false))
                        entry.set(LocalFlags.updated, owned: JSONMake.bool(true))
                        entry.set(LocalFlags.local, owned: JSONMake.bool(true))
                        entry.remove(LocalFlags.pendingCreate)
                        entry.remove(LocalFlags.lastError)
                    } else {
                        LocalFlags.clear(entry, syncId: nil)
                    }
                case .updated:
                    if edited {
                        if item.adopted == nil { continue }
                    } else {
                        LocalFlags.clear(entry, syncId: nil)
                    }
                case .deleted:
                    if !edited || LocalFlags.isSet(entry[LocalFlags.deleted]) {
                        removals.append(item.entryId)
                        continue
                    }
                    // Undeleted by the host meanwhile: the server copy is gone, so it is new again.
                    entry.remove(target.idFieldName)
                    entry.set(LocalFlags.created, owned: JSONMake.bool(true))
                case .recreate:
                    // Gone from the server: the entry (with any newer edit) is a create now.
                    entry.remove(target.idFieldName)
                    entry.set(LocalFlags.local, owned: JSONMake.bool(true))
                    entry.set(LocalFlags.created, owned: JSONMake.bool(true))
                    entry.set(LocalFlags.updated, owned: JSONMake.bool(false))
                    entry.remove(LocalFlags.lastError)
                case .failed(let error), .conflict(let error):
                    let bounded = error.utf8.count <= MessageLimit.bytes ? error : errorJSON("SERVER_ERROR", MessageLimit.bound(error))
                    entry.set(LocalFlags.lastError, owned: JSONMake.string(bounded))
                    // The server answered a create with an error: nothing was made, so there is
                    // nothing a retry could find.
                    if item.action == .create, case .failed = outcomes[i] { entry.remove(LocalFlags.pendingCreate) }
                }
                try writer.upsert(entry, index: i, now: now, into: &sink)
            }
        }
        try ctx.store.deleteRows(db, info, ids: removals)
    }

    /// The server's error answer as JSON text for `__last_error__` (bounded; a long or non-JSON
    /// answer is described instead).
    private func isUntouched(_ outcome: Outcome) -> Bool {
        if case .untouched = outcome { return true }
        return false
    }

    private func isClean(_ entryId: Int64, db: Connection, info: SoupInfo) throws -> Bool {
        let statement = try db.prepare("SELECT \(LocalFlags.dirtyCondition) FROM \(info.table) WHERE id = ?")
        try statement.bind([.int(entryId)])
        return try statement.step() && statement.int64(0) == 0
    }

    package func errorText(_ response: HTTPResponse) -> String {
        let text = response.text
        if !text.isEmpty, text.utf8.count <= MessageLimit.bytes, (try? JSONDocument.parse(text)) != nil { return text }
        return errorJSON("HTTP_\(response.status)", RestClient.describe(response))
    }

    package func errorJSON(_ code: String, _ message: String) -> String { SyncUpTask.errorJSON(code, message) }

    /// `[{"errorCode", "message"}]`, the shape of `__last_error__` (the API's error answers).
    package static func errorJSON(_ code: String, _ message: String) -> String {
        let doc = JSONDocument.array()
        let item = JSONDocument.object()
        item.root.set("errorCode", owned: JSONMake.string(code))
        item.root.set("message", owned: JSONMake.string(message))
        doc.root.append(owned: item.root.retained())
        return doc.root.dump()
    }
}

extension SyncUpTask.Outcome {
    package var isRecreate: Bool {
        if case .recreate = self { return true }
        return false
    }
}

/// Client-generated record ids (UUID v4 text) from the kernel's random source.
package enum ClientId {
    package static func make() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        let h = Array(hex)
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
    }
}
