import CJansson
import SyncStoreSupport
import SyncStoreCore

/// A sync up to a Datasync table (docs/sync.md#datasync), one entry at a time in
/// `_soupEntryId` order. The rules of SyncUpTask hold (its reading and committing are reused):
/// each outcome is committed with the state in one transaction on the entry as it is then, so
/// an edit made while its request was in flight stays dirty.
///
/// - create: `POST /tables/{t}` with an `id` the engine generated and committed in the entry
///   (with the `__sync_create_sent__` mark, which keeps the id should a host write drop it)
///   before the first attempt. The request is repeatable: a retry meets the first attempt's
///   row as a 409, and a 409 whose entity holds what was sent is our own create.
/// - update: `PUT /tables/{t}/{id}` with every data field of the entry (a PUT replaces the row)
///   and `If-Match: "<version>"` (LEAVE_IF_CHANGED; OVERWRITE sends none: forced). A 412 whose
///   entity holds what was sent is our own earlier write.
/// - update of a row soft-deleted on the server (410, or a 412 with `deleted: true`):
///   LEAVE_IF_CHANGED makes it an `ENTITY_IS_DELETED` conflict; OVERWRITE (the local copy wins)
///   brings it back: `PUT ...?__includedeleted=true` with `"deleted": false` (the protocol
///   replaces a soft-deleted entity only with that query) and takes the returned entity. A create
///   meeting a soft-deleted row of its id (409) goes the same way. A row gone for good (404) is
///   created again under OVERWRITE.
/// - delete: `DELETE /tables/{t}/{id}` with `If-Match` as above; 404 and 410 count as deleted.
/// - 409/412 otherwise: a conflict. `__last_error__` gets `[{"errorCode": "CONFLICT",
///   "message", "serverRecord": <entity>}]`, the entry stays dirty, the state counts it.
/// - success stores the returned entity: all of it on an entry unchanged since it was read, its
///   `version`/`updatedAt`/`createdAt` only on one edited meanwhile (which stays dirty and goes
///   up next run with the right `If-Match`).
package struct DatasyncUpTask: SyncRun {
    package let base: SyncUpTask
    package let table: DatasyncTable
    package typealias Item = SyncUpTask.Item
    package typealias Outcome = SyncUpTask.Outcome

    package init(_ base: SyncUpTask, table: DatasyncTable) {
        self.base = base
        self.table = table
    }

    private var ctx: SyncContext { base.ctx }
    private var force: Bool { base.options.mergeMode == .overwrite }

    package func run(_ state: inout SyncState) throws {
        let info = try ctx.store.requireSoup(ctx.soupName)
        let ids = try base.dirtyIds(info)
        state.totalSize = Int64(ids.count)
        for (n, entryId) in ids.enumerated() {
            if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
            guard var item = try base.load([entryId], info: info).first else { continue }
            if item.action == .create {
                guard let prepared = try prepareCreate(item, info: info) else { continue }
                item = prepared
            }
            let (outcome, entity) = try push(item)
            var next = state
            next.progress = (n + 1) * 100 / ids.count
            next.record([item.entryId], [outcome])
            try ctx.store.write { db in
                try base.applyIn(db, [item], [outcome], info: info)
                if let entity { try store(entity, entryId: item.entryId, db: db, info: info) }
                try base.states.save(next, db: db)
            }
            state = next
            base.emit(state)
        }
        state.progress = 100
    }

    // MARK: before sending

    /// Gives a create its id (the entry's own, the one its mark kept, or a new UUID) and the
    /// in-flight mark, committed; returns the entry as stored (what later edits are told from).
    private func prepareCreate(_ item: Item, info: SoupInfo) throws -> Item? {
        try ctx.store.write { db in
            try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer -> Item? in
                guard let current = try base.current(item.entryId, db: db, info: info) else { return nil }
                let root = current.root
                let mark = root[LocalFlags.pendingCreate]
                let own = root[DatasyncTable.idField]?.string.flatMap { $0.isEmpty ? nil : $0 }
                let id = own ?? mark?[DatasyncTable.idField]?.string ?? ClientId.make()
                if own == nil { root.set(DatasyncTable.idField, owned: JSONMake.string(id)) }
                // The values of the last attempts: a 409 holding any of them is this entry's row.
                let sent = JSONDocument.object()
                for (name, value) in fields(root, creating: true) { sent.root.set(name, owned: value.retained()) }
                var history = mark?[DatasyncTable.idField]?.string == id ? (mark?["sent"]?.elements ?? []) : []
                if let last = history.last, json_equal(last.raw, sent.root.raw) != 0 { history.removeLast() }
                let list = JSONDocument.array()
                for earlier in history.suffix(4) { list.root.append(owned: earlier.retained()) }
                list.root.append(owned: sent.root.retained())
                let m = JSONDocument.object()
                m.root.set(DatasyncTable.idField, owned: JSONMake.string(id))
                m.root.set("client", owned: JSONMake.int(mark?["client"]?.int64 ?? Clock.nowMillis()))
                m.root.set("sent", owned: list.root.retained())
                root.set(LocalFlags.pendingCreate, owned: m.root.retained())
                var sink: TextBuffer? = nil
                try writer.upsert(root, index: 0, now: Clock.nowMillis(), into: &sink)
                let stored = try base.current(item.entryId, db: db, info: info) ?? current
                return Item(entryId: item.entryId, entry: stored, action: .create, type: item.type, serverId: id)
            }
        }
    }

    // MARK: sending

    /// The entity's data: the target's fields without the system properties.
    /// What a create or update sends. A PUT replaces the whole row, so an update sends every
    /// data field of the entry: a field left out (by `updateFieldlist` or `fieldlist`) would be
    /// erased on the server. If-Match makes the entry's copy of the other fields the server's.
    private func fields(_ entry: JSON, creating: Bool) -> [(String, JSON)] {
        (creating ? base.target.fields(of: entry, creating: true, options: base.options) : base.target.allFields(of: entry))
            .filter { !DatasyncTable.systemFields.contains($0.0.lowercased()) }
    }

    /// The entity sent; `undelete` adds `"deleted": false` (a replace that brings back a
    /// soft-deleted row).
    private func body(_ id: String, _ fields: [(String, JSON)], undelete: Bool = false) -> [UInt8] {
        let doc = JSONDocument.object()
        doc.root.set(DatasyncTable.idField, owned: JSONMake.string(id))
        for (name, value) in fields { doc.root.set(name, owned: value.retained()) }
        if undelete { doc.root.set("deleted", owned: JSONMake.bool(false)) }
        return Array(doc.root.dump().utf8)
    }

    private func entityPath(_ id: String) -> String { table.path + "/" + RemoteURL.encode(id) }

    private func ifMatch(_ item: Item) -> [String] {
        guard !force, let version = item.entry.root["version"]?.string, !version.isEmpty else { return DatasyncTable.headers }
        return DatasyncTable.headers + ["If-Match: \"\(version)\""]
    }

    /// The outcome and, on success, the entity the server returned.
    private func push(_ item: Item) throws -> (Outcome, JSONDocument?) {
        switch item.action {
        case .create:
            guard let id = item.serverId else { return (.failed(base.errorJSON("NO_ID", "The create has no id")), nil) }
            let earlier = (item.entry.root[LocalFlags.pendingCreate]?["sent"]?.elements ?? []).map(\.members)
            return try create(id, fields(item.entry.root, creating: true), earlier: earlier)
        case .update:
            guard let id = item.serverId else { return (.failed(base.errorJSON("NO_ID", "The record has no server id")), nil) }
            let sent = fields(item.entry.root, creating: false)
            let response = try send("PUT", entityPath(id), body: body(id, sent), headers: ifMatch(item))
            switch response.status {
            case 200...299: return (.updated, try entity(response))
            case 412:
                let server = try entity(response)
                if let server, server.root["deleted"]?.bool != true, holds(server, sent) { return (.updated, server) }
                // A server that checks If-Match before the soft delete: the same as its 410.
                if server?.root["deleted"]?.bool == true { return (deletedConflict(server), nil) }
                return (conflict("The server entity changed since it was synced (If-Match failed); the local change was not sent", server), nil)
            case 404 where force:
                // Gone from the server for good: OVERWRITE makes it again, with the same id.
                return try recreate(id, item)
            case 410 where force:
                // Soft-deleted by another client: OVERWRITE (the local copy wins) brings it back.
                switch try undelete(id, sent) {
                case .back(let server): return (.updated, server)
                case .gone: return try recreate(id, item)
                case .refused(let outcome): return (outcome, nil)
                }
            case 404, 410:
                return (deletedConflict(nil), nil)
            default:
                return (.failed(base.errorText(response)), nil)
            }
        case .delete, .localDelete:
            // A local delete of a create that was sent may have a row on the server.
            let sentId = item.entry.root[LocalFlags.pendingCreate]?[DatasyncTable.idField]?.string
            guard let id = item.action == .delete ? item.serverId : sentId else { return (.deleted, nil) }
            let response = try send("DELETE", entityPath(id), body: nil, headers: item.action == .delete ? ifMatch(item) : DatasyncTable.headers)
            switch response.status {
            case 200...299, 404, 410: return (.deleted, nil)
            case 412:
                let server = try entity(response)
                if server?.root["deleted"]?.bool == true { return (.deleted, nil) }
                return (conflict("The server entity changed since it was synced (If-Match failed); it was not deleted", server), nil)
            default:
                return (.failed(base.errorText(response)), nil)
            }
        }
    }

    /// A create whose id's row is soft-deleted, under OVERWRITE.
    private func undeleteCreated(_ id: String, _ sent: [(String, JSON)]) throws -> (Outcome, JSONDocument?) {
        switch try undelete(id, sent) {
        case .back(let server): return (.created(id), server)
        // Purged between the two requests: the next run's POST makes it.
        case .gone: return (.failed(base.errorJSON("NOT_FOUND", "The entity \(id) was purged from the server while its create was sent")), nil)
        case .refused(let outcome): return (outcome, nil)
        }
    }

    /// An update whose row is gone for good (404), under OVERWRITE: made again with the same id.
    private func recreate(_ id: String, _ item: Item) throws -> (Outcome, JSONDocument?) {
        let (outcome, server) = try create(id, fields(item.entry.root, creating: true))
        if case .created = outcome { return (.updated, server) }
        return (outcome, server)
    }

    private enum Undelete {
        /// The row is live again with what was sent: the returned entity.
        case back(JSONDocument?)
        /// No row any more (hard-deleted meanwhile).
        case gone
        case refused(Outcome)
    }

    /// OVERWRITE over a row another client soft-deleted (its PUT answered 410): the protocol
    /// replaces a soft-deleted entity only when the request has `__includedeleted=true`, and the
    /// replace takes the body's `deleted`, so `"deleted": false` brings the row back with the
    /// local values. Repeatable: a retry after a lost answer replaces the now live row again.
    private func undelete(_ id: String, _ sent: [(String, JSON)]) throws -> Undelete {
        let put = try send("PUT", entityPath(id) + "?__includedeleted=true", body: body(id, sent, undelete: true), headers: DatasyncTable.headers)
        switch put.status {
        case 200...299:
            let server = try entity(put)
            // A server that kept the row deleted (it ignores `deleted` in a replace): not back.
            if server?.root["deleted"]?.bool == true { return .refused(deletedConflict(server)) }
            return .back(server)
        case 404: return .gone
        case 409, 410, 412: return .refused(deletedConflict(try entity(put)))
        default: return .refused(.failed(base.errorText(put)))
        }
    }

    /// POST with the client id; a 409 holding what was sent is this create's own earlier attempt.
    /// One holding what an earlier attempt sent (`earlier`) is that attempt's row, unchanged
    /// since: the entry's edits made after it go as a PUT on its version.
    private func create(_ id: String, _ sent: [(String, JSON)], earlier: [[(String, JSON)]] = []) throws -> (Outcome, JSONDocument?) {
        let response = try send("POST", table.path, body: body(id, sent), headers: DatasyncTable.headers)
        switch response.status {
        case 200...299: return (.created(id), try entity(response))
        case 409:
            let server = try entity(response)
            let live = server.map { $0.root["deleted"]?.bool != true } ?? false
            if let server, live, holds(server, sent) { return (.created(id), server) }
            if let server, !live {
                // The id's row was soft-deleted (this create's own row, deleted by another client
                // before the answer came, or an older one): OVERWRITE brings it back.
                guard force else { return (deletedConflict(server), nil) }
                return try undeleteCreated(id, sent)
            }
            let ours = server.map { s in earlier.contains { holds(s, $0) } } ?? false
            if live, force || ours {
                var headers = DatasyncTable.headers
                if !force, let version = server?.root["version"]?.string { headers.append("If-Match: \"\(version)\"") }
                let put = try send("PUT", entityPath(id), body: body(id, sent), headers: headers)
                if put.isSuccess { return (.created(id), try entity(put)) }
                if put.status == 410 { return force ? try undeleteCreated(id, sent) : (deletedConflict(nil), nil) }
                // Our own PUT whose answer was lost holds what we sent.
                if put.status == 412, let again = try entity(put), again.root["deleted"]?.bool != true, holds(again, sent) { return (.created(id), again) }
                if put.status == 412 { return (conflict("The server entity changed since this entry's create made it; the local change was not sent", try entity(put)), nil) }
                return (.failed(base.errorText(put)), nil)
            }
            return (conflict("An entity with id \(id) exists on the server with other values; the local create was not sent", server), nil)
        default:
            return (.failed(base.errorText(response)), nil)
        }
    }

    /// Every Datasync write is repeatable (client ids, If-Match), so all are retried on a lost
    /// answer or a 5xx within the run.
    private func send(_ method: String, _ path: String, body: [UInt8]?, headers: [String]) throws -> HTTPResponse {
        try ctx.rest.send(method, path, body: body, headers: headers, idempotent: true, cancel: ctx.cancel)
    }

    private func entity(_ response: HTTPResponse) throws -> JSONDocument? {
        guard !response.body.isEmpty, let doc = try? response.json(what: "datasync entity"), doc.root.isObject else { return nil }
        return doc
    }

    /// The server entity holds every value sent (numbers by value).
    private func holds(_ server: JSONDocument, _ sent: [(String, JSON)]) -> Bool {
        sent.allSatisfy { name, value in LostCreateFinder.same(server.root[name], value) }
    }

    /// The row is soft-deleted (or gone) on the server: the local change was not sent.
    private func deletedConflict(_ server: JSONDocument?) -> Outcome {
        conflict("The entity was deleted on the server; the local change was not sent", server, code: "ENTITY_IS_DELETED")
    }

    private func conflict(_ message: String, _ server: JSONDocument?, code: String = "CONFLICT") -> Outcome {
        let doc = JSONDocument.array()
        let item = JSONDocument.object()
        item.root.set("errorCode", owned: JSONMake.string(code))
        item.root.set("message", owned: JSONMake.string(message))
        if let server { item.root.set("serverRecord", owned: server.root.retained()) }
        doc.root.append(owned: item.root.retained())
        return .conflict(doc.root.dump())
    }

    // MARK: committing

    /// After applyIn, in its transaction: the returned entity on the entry. A clean entry takes
    /// all of it; an entry edited meanwhile (still dirty) only the system properties, so its
    /// next push names the version it now builds on.
    private func store(_ entity: JSONDocument, entryId: Int64, db: Connection, info: SoupInfo) throws {
        guard let current = try base.current(entryId, db: db, info: info) else { return }
        let root = current.root
        let dirty = LocalFlags.isSet(root[LocalFlags.local])
        for (name, value) in entity.root.members where !dirty || ["version", "updatedat", "createdat"].contains(name.lowercased()) {
            root.set(name, owned: value.retained())
        }
        try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
            var sink: TextBuffer? = nil
            try writer.upsert(root, index: 0, now: Clock.nowMillis(), into: &sink)
        }
    }
}
