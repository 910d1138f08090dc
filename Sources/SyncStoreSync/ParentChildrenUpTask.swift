import SyncStoreSupport
import SyncStoreCore

/// Sync up of parents with their children through `POST composite` (docs/sync.md#sync-up-targets):
/// `{"type":"parent_children", "parent": {"sobjectType","soupName","idFieldName"?,
///   "modificationDateFieldName"?}, "children": {"sobjectType","soupName","parentIdFieldName",
///   "idFieldName"?}, "parentCreateFieldlist"?, "parentUpdateFieldlist"?,
///   "childrenCreateFieldlist"?, "childrenUpdateFieldlist"?}`.
/// Children point at their parent through parentIdFieldName holding the parent's id (a temporary
/// local id for a parent created offline). Each parent with itself or a child dirty goes in one
/// composite request: the parent's own subrequest first, then its children in sObject Collections
/// subrequests (creates, updates, deletes; 200 records each, 5 a request as Salesforce allows;
/// more children continue in further requests; the children of a collection the server refuses as
/// a whole go again one subrequest each); a created parent's children reference it as
/// `@{parent.id}`. Outcomes of a parent and its children, and the rewrite of temporary parent
/// ids in children, commit in one transaction.
/// Creates are marked before the request as in SyncUpTask, so after a lost answer a re-run
/// adopts the parent and children the first request made instead of creating them twice.
package struct ParentChildrenUpTask: SyncRun {
    /// Salesforce: at most 5 of a composite request's subrequests are sObject Collections or
    /// queries, each collection at most 200 records.
    package static let maxCollections = 5
    package static let maxCollectionRecords = 200
    package static let maxSubrequests = 25
    package typealias Subrequest = (method: String, url: String, referenceId: String, body: JSONDocument?)
    package let ctx: SyncContext
    package let options: SyncOptions
    package let states: SyncStateStore
    package let emit: (SyncState) -> Void
    package let parentTask: SyncUpTask
    package let childTask: SyncUpTask
    package let parentSoup: String
    package let childSoup: String
    package let parentIdFieldName: String

    package init(ctx: SyncContext, target: ParentChildrenUpTarget, options: SyncOptions, states: SyncStateStore, emit: @escaping (SyncState) -> Void) {
        parentIdFieldName = target.parentIdFieldName
        self.ctx = ctx
        self.options = options
        self.states = states
        self.emit = emit
        self.parentSoup = target.parentSoup
        self.childSoup = target.childSoup
        let parentCtx = SyncContext(rest: ctx.rest, cancel: ctx.cancel, store: ctx.store, soupName: parentSoup, syncId: ctx.syncId)
        let childCtx = SyncContext(rest: ctx.rest, cancel: ctx.cancel, store: ctx.store, soupName: childSoup, syncId: ctx.syncId)
        parentTask = SyncUpTask(ctx: parentCtx, target: target.parent, options: options, states: states, emit: emit)
        childTask = SyncUpTask(ctx: childCtx, target: target.children, options: options, states: states, emit: emit)
    }

    package func run(_ state: inout SyncState) throws {
        let parentInfo = try ctx.store.requireSoup(parentSoup)
        let childInfo = try ctx.store.requireSoup(childSoup)
        let parentIdField = parentTask.target.idFieldName
        // Parents to push: dirty ones, and those of dirty children.
        var parentIds = Set(try parentTask.dirtyIds(parentInfo))
        let dirtyChildren = try childTask.load(try childTask.dirtyIds(childInfo), info: childInfo)
        let linked = Set(dirtyChildren.compactMap { $0.entry.root[parentIdFieldName]?.string })
        if !linked.isEmpty {
            try ctx.store.readers.withReader { db in
                let statement = try db.prepare("SELECT id, \(parentInfo.expression(for: parentIdField)) FROM \(parentInfo.table)")
                while try statement.step() {
                    if linked.contains(statement.text(1)) { parentIds.insert(statement.int64(0)) }
                }
            }
        }
        let parents = try ctx.store.retrieve(soup: parentSoup, ids: parentIds.sorted())
        let parentDoc = try JSONDocument.parse(parents.string, what: "parents")
        state.totalSize = Int64(parentIds.count)
        var done = 0
        for parentEntry in parentDoc.root.elements {
            if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
            guard let entryId = parentEntry[SoupPath.entryId]?.int64 else { continue }
            let parentKey = parentEntry[parentIdField]?.string
            let children = dirtyChildren.filter { $0.entry.root[parentIdFieldName]?.string == parentKey && parentKey != nil }
            try push(parentEntryId: entryId, children: children, parentInfo: parentInfo, childInfo: childInfo, state: &state)
            done += 1
            state.progress = min(100, done * 100 / max(1, parentIds.count))
            emit(state)
        }
        state.progress = 100
    }

    private func push(parentEntryId: Int64, children: [SyncUpTask.Item], parentInfo: SoupInfo, childInfo: SoupInfo, state: inout SyncState) throws {
        var children = children
        var parentItems = try parentTask.load([parentEntryId], info: parentInfo)
        // A clean parent of dirty children is loaded for its id only.
        if parentItems.isEmpty {
            let text = try ctx.store.retrieve(soup: parentSoup, ids: [parentEntryId])
            let doc = try JSONDocument.parse(text.string, what: "parent")
            guard let entry = doc.root[0], let retained = entry.retained() else { return }
            let own = JSONDocument(owning: retained)
            parentItems = [SyncUpTask.Item(entryId: parentEntryId, entry: own, action: .update,
                                           type: parentTask.target.sobjectType ?? "", serverId: own.root[parentTask.target.idFieldName]?.string)]
        }
        let parentDirty = LocalFlags.isSet(parentItems[0].entry.root[LocalFlags.local])
        let temporaryId = parentItems[0].entry.root[parentTask.target.idFieldName]?.string
        var parentOutcomes: [SyncUpTask.Outcome] = [.untouched]
        // Lost answers of earlier runs: adopt what they made; mark what is about to be created.
        // A parent given its record's id at once (edited since sent) takes its children along
        // in that transaction: a run failing after it must not leave them naming an id no entry
        // holds, where no later run would find them.
        if parentDirty && (parentItems[0].action == .create || parentItems[0].action == .localDelete) {
            try parentTask.prepare(&parentItems, &parentOutcomes, info: parentInfo, renamed: { db, old, new in
                if let old, old != new { try relink(db, childInfo, from: old, to: new) }
            })
        }
        var parent = parentItems[0]
        var parentOutcome = parentOutcomes[0]
        var parentSent = !parentDirty || parent.action == .localDelete
        if case .created(let id) = parentOutcome {
            parent.serverId = id
            parentSent = true
        }
        let parentServerId: String? = {
            if case .created(let id) = parentOutcome { return id }
            return parent.action == .create ? nil : parent.serverId
        }()
        var childOutcomes = [SyncUpTask.Outcome](repeating: .untouched, count: children.count)
        try childTask.prepare(&children, &childOutcomes, info: childInfo, createFields: { child in
            // A child made by an earlier request names the parent by its server id.
            var fields = childTask.sentFields(child).filter { !$0.0.caseInsensitiveEquals(parentIdFieldName) }
            let holder = JSONDocument.object()
            if let parentServerId { holder.root.set(parentIdFieldName, owned: JSONMake.string(parentServerId)) }
            if let value = holder.root[parentIdFieldName] { fields.append((parentIdFieldName, value)) }
            return fields
        })
        let version = ctx.rest.current.apiVersion
        let base = "/services/data/\(version)/sobjects"
        let collections = "/services/data/\(version)/composite/sobjects"
        if parent.action == .localDelete { parentOutcome = .deleted }
        // Children go up in sObject Collections subrequests, one action each, at most 200 records
        // a subrequest and 5 such subrequests a composite request.
        var chunks: [(action: SyncUpTask.Action, slots: [Int])] = []
        for action in [SyncUpTask.Action.create, .update, .delete] {
            let slots = children.indices.filter { children[$0].action == action && childTask.pending(childOutcomes, $0) }
            for first in stride(from: 0, to: slots.count, by: ParentChildrenUpTask.maxCollectionRecords) {
                chunks.append((action, Array(slots[first..<min(slots.count, first + ParentChildrenUpTask.maxCollectionRecords)])))
            }
        }
        // Nothing on the server to delete: a create never sent.
        for i in children.indices where children[i].action == .localDelete && childTask.pending(childOutcomes, i) { childOutcomes[i] = .deleted }
        var nextChunk = 0
        // Children of a collection subrequest refused as a whole, sent again one subrequest each.
        var singles: [Int] = []
        var nextSingle = 0
        repeat {
            var requests: [Subrequest] = []
            if !parentSent, let request = recordRequest(parent, parentTask, ref: "parent", base: base, parentRef: nil) { requests.append(request) }
            let parentRef: String? = { if case .created(let id) = parentOutcome { return id }; return parent.action == .create && !parentSent ? "@{parent.id}" : parent.serverId }()
            var sent: [Int] = []   // chunks, as subrequests "children<chunk>"
            while nextChunk < chunks.count && sent.count < ParentChildrenUpTask.maxCollections {
                let (action, slots) = chunks[nextChunk]
                let ref = "children\(nextChunk)"
                switch action {
                case .create:
                    let records = slots.map { slot -> JSONDocument in
                        let record = childTask.body(children[slot], creating: true, withType: true, withId: false)
                        if let parentRef { record.root.set(parentIdFieldName, owned: JSONMake.string(parentRef)) }
                        return record
                    }
                    requests.append(("POST", collections, ref, collectionBody(records)))
                case .update:
                    requests.append(("PATCH", collections, ref,
                                     collectionBody(slots.map { childTask.body(children[$0], creating: false, withType: true, withId: true) })))
                case .delete, .localDelete:
                    let ids = slots.map { RemoteURL.encode(children[$0].serverId ?? "") }.joined(separator: ",")
                    requests.append(("DELETE", "\(collections)?ids=\(ids)&allOrNone=false", ref, nil))
                }
                sent.append(nextChunk)
                nextChunk += 1
            }
            var sentSingles: [Int] = []
            while nextSingle < singles.count && requests.count < ParentChildrenUpTask.maxSubrequests {
                let slot = singles[nextSingle]
                nextSingle += 1
                guard let request = recordRequest(children[slot], childTask, ref: "child\(slot)", base: base, parentRef: parentRef) else { continue }
                requests.append(request)
                sentSingles.append(slot)
            }
            if !requests.isEmpty {
                let results = try composite(requests)
                var parentFailed = false
                if !parentSent {
                    parentOutcome = outcome(results["parent"], action: parent.action)
                    parentSent = true
                    switch parentOutcome {
                    case .created(let id): parent.serverId = id
                    case .failed: parentFailed = parent.action == .create
                    default: break
                    }
                }
                for chunk in sent {
                    let result = results["children\(chunk)"]
                    // Refused as a whole (400: one record it cannot take, such as a value the
                    // server reads as a reference): each child gets its own outcome next request.
                    if !parentFailed, result?.0 == 400 {
                        singles += chunks[chunk].slots
                        continue
                    }
                    collectionOutcomes(result, chunks[chunk].action, chunks[chunk].slots, &childOutcomes)
                }
                for slot in sentSingles { childOutcomes[slot] = outcome(results["child\(slot)"], action: children[slot].action) }
                if parentFailed { break }
            }
        } while nextChunk < chunks.count || nextSingle < singles.count
        let newParentId: String? = { if case .created(let id) = parentOutcome { return id }; return parent.adopted }()
        let latest = ctx.rest.serverNow.map { $0 + 1_000 }
        let parentWritten = parentDirty ? parentTask.writtenRecords([parent], [parentOutcome]) : []
        let parentDates = parentWritten.isEmpty ? [:] : ((try? parentTask.modificationDates(parentWritten, latest: latest)) ?? [:])
        let childWritten = childTask.writtenRecords(children, childOutcomes)
        let childDates = childWritten.isEmpty ? [:] : ((try? childTask.modificationDates(childWritten, latest: latest)) ?? [:])
        var next = state
        if parentDirty { next.record([parent.entryId], [parentOutcome]) }
        next.record(children.map(\.entryId), childOutcomes)
        try ctx.store.write { db in
            if parentDirty { try parentTask.applyIn(db, [parent], [parentOutcome], info: parentInfo) }
            try childTask.applyIn(db, children, childOutcomes, info: childInfo)
            try parentTask.applyDates(db, parentDates, info: parentInfo)
            try childTask.applyDates(db, childDates, info: childInfo)
            // Children (dirty or not) that named the parent by its temporary id now name its server id.
            if let newParentId, let temporaryId, temporaryId != newParentId {
                try relink(db, childInfo, from: temporaryId, to: newParentId)
            }
            try states.save(next, db: db)
        }
        state = next
    }

    private func relink(_ db: Connection, _ info: SoupInfo, from old: String, to new: String) throws {
        let statement = try db.prepare("SELECT soup FROM \(info.table) WHERE \(info.expression(for: parentIdFieldName)) = ?")
        try statement.bind([.text(old)])
        var docs: [JSONDocument] = []
        while try statement.step() {
            let bytes = statement.textBytes(0)
            guard let base = bytes.baseAddress else { continue }
            docs.append(try JSONDocument.parse(bytes: base, length: bytes.count, what: "child"))
        }
        try ctx.store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
            var sink: TextBuffer? = nil
            for (i, doc) in docs.enumerated() {
                doc.root.set(parentIdFieldName, owned: JSONMake.string(new))
                try writer.upsert(doc.root, index: i, now: Clock.nowMillis(), into: &sink)
            }
        }
    }

    /// The subrequest that writes one record through `sobjects/{type}` (nil for a local delete);
    /// `parentRef`: the parent id a child's create names.
    private func recordRequest(_ item: SyncUpTask.Item, _ task: SyncUpTask, ref: String, base: String, parentRef: String?) -> Subrequest? {
        let url = "\(base)/\(RemoteURL.encode(item.type))"
        switch item.action {
        case .create:
            let body = task.body(item, creating: true, withType: false, withId: false)
            if let parentRef { body.root.set(parentIdFieldName, owned: JSONMake.string(parentRef)) }
            return ("POST", url, ref, body)
        case .update:
            return ("PATCH", "\(url)/\(RemoteURL.encode(item.serverId ?? ""))", ref, task.body(item, creating: false, withType: false, withId: false))
        case .delete:
            return ("DELETE", "\(url)/\(RemoteURL.encode(item.serverId ?? ""))", ref, nil)
        case .localDelete:
            return nil
        }
    }

    /// `{"allOrNone": false, "records": [...]}`: a collection subrequest's body.
    private func collectionBody(_ records: [JSONDocument]) -> JSONDocument {
        let body = JSONDocument.object()
        body.root.set("allOrNone", owned: JSONMake.bool(false))
        let list = JSONDocument.array()
        for record in records { list.root.append(owned: record.root.retained()) }
        body.root.set("records", owned: list.root.retained())
        return body
    }

    /// One `POST composite` (allOrNone false); status and body of each subrequest by referenceId.
    private func composite(_ requests: [Subrequest]) throws -> [String: (Int, JSONDocument?)] {
        let body = JSONDocument.object()
        body.root.set("allOrNone", owned: JSONMake.bool(false))
        let list = JSONDocument.array()
        for (method, url, ref, payload) in requests {
            let item = JSONDocument.object()
            item.root.set("method", owned: JSONMake.string(method))
            item.root.set("url", owned: JSONMake.string(url))
            item.root.set("referenceId", owned: JSONMake.string(ref))
            if let payload { item.root.set("body", owned: payload.root.retained()) }
            list.root.append(owned: item.root.retained())
        }
        body.root.set("compositeRequest", owned: list.root.retained())
        let doc = try ctx.rest.json("POST", "composite", body: Array(body.root.dump().utf8), cancel: ctx.cancel)
        var results: [String: (Int, JSONDocument?)] = [:]
        for result in doc.root["compositeResponse"]?.elements ?? [] {
            guard let ref = result["referenceId"]?.string else { continue }
            results[ref] = (Int(result["httpStatusCode"]?.int64 ?? 0), result["body"]?.retained().map { JSONDocument(owning: $0) })
        }
        return results
    }

    private func outcome(_ result: (Int, JSONDocument?)?, action: SyncUpTask.Action) -> SyncUpTask.Outcome {
        guard let (status, body) = result else {
            return .failed(parentTask.errorJSON("NO_RESULT", "The server gave no result for this record"))
        }
        if (200..<300).contains(status) {
            switch action {
            case .create:
                if let id = body?.root["id"]?.string { return .created(id) }
                return .failed(parentTask.errorJSON("NO_ID", "The server answered the create without an id"))
            case .update: return .updated
            case .delete, .localDelete: return .deleted
            }
        }
        if status == 404 && action == .delete { return .deleted }
        return .failed(body?.root.dump() ?? "null")
    }

    /// The children of one collection subrequest take their outcomes from its per-record results,
    /// by position. An answer that is not one result per record (the subrequest failed as a
    /// whole, such as a create that names a parent whose create failed) is every child's error.
    private func collectionOutcomes(_ result: (Int, JSONDocument?)?, _ action: SyncUpTask.Action, _ slots: [Int],
                                    _ outcomes: inout [SyncUpTask.Outcome]) {
        let error: String
        if let (status, body) = result {
            if (200..<300).contains(status), let body, body.root.isArray, body.root.count == slots.count {
                for (position, slot) in slots.enumerated() {
                    outcomes[slot] = action == .create || action == .update
                        ? childTask.collectionOutcome(body, position, created: action == .create)
                        : childTask.deleteOutcome(body, position)
                }
                return
            }
            error = (200..<300).contains(status)
                ? childTask.errorJSON("NO_RESULT", "The server answered \(body?.root.count ?? 0) results for \(slots.count) records")
                : body?.root.dump() ?? "null"
        } else {
            error = childTask.errorJSON("NO_RESULT", "The server gave no result for these records")
        }
        for slot in slots { outcomes[slot] = .failed(error) }
    }
}
