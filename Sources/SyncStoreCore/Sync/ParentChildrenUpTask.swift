import SyncStoreSupport

/// Sync up of parents with their children through `POST composite` (docs/sync.md#sync-up-targets):
/// `{"type":"parent_children", "parent": {"sobjectType","soupName","idFieldName"?,
///   "modificationDateFieldName"?}, "children": {"sobjectType","soupName","parentIdFieldName",
///   "idFieldName"?}, "parentCreateFieldlist"?, "parentUpdateFieldlist"?,
///   "childrenCreateFieldlist"?, "childrenUpdateFieldlist"?}`.
/// Children point at their parent through parentIdFieldName holding the parent's id (a temporary
/// local id for a parent created offline). Each parent with itself or a child dirty goes in one
/// composite request (at most 25 subrequests; more children continue in further requests); a
/// created parent's children reference it as `@{parent.id}`. Outcomes of a parent and its
/// children, and the rewrite of temporary parent ids in children, commit in one transaction.
/// Creates are marked before the request as in SyncUpTask, so after a lost answer a re-run
/// adopts the parent and children the first request made instead of creating them twice.
struct ParentChildrenUpTask {
    static let maxSubrequests = 25
    let ctx: SyncContext
    let options: SyncOptions
    let states: SyncStateStore
    let emit: (SyncState) -> Void
    let parentTask: SyncUpTask
    let childTask: SyncUpTask
    let parentSoup: String
    let childSoup: String
    let parentIdFieldName: String

    init(ctx: SyncContext, targetJSON: String, options: SyncOptions, states: SyncStateStore, emit: @escaping (SyncState) -> Void) throws {
        let target = try ParentChildrenUpTarget(targetJSON)
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

    static func isParentChildren(_ targetJSON: String) -> Bool {
        (try? JSONDocument.parse(targetJSON))?.root["type"]?.string == "parent_children"
    }

    func run(_ state: inout SyncState) throws {
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
        if parentDirty && (parentItems[0].action == .create || parentItems[0].action == .localDelete) {
            try parentTask.prepare(&parentItems, &parentOutcomes, info: parentInfo)
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
        var start = 0
        if parent.action == .localDelete { parentOutcome = .deleted }
        repeat {
            var requests: [(String, String, String, JSONDocument?)] = []   // method, url, referenceId, body
            if !parentSent {
                switch parent.action {
                case .create:
                    requests.append(("POST", "\(base)/\(RemoteURL.encode(parent.type))", "parent", parentTask.body(parent, creating: true, withType: false, withId: false)))
                case .update:
                    requests.append(("PATCH", "\(base)/\(RemoteURL.encode(parent.type))/\(RemoteURL.encode(parent.serverId ?? ""))", "parent",
                                     parentTask.body(parent, creating: false, withType: false, withId: false)))
                case .delete:
                    requests.append(("DELETE", "\(base)/\(RemoteURL.encode(parent.type))/\(RemoteURL.encode(parent.serverId ?? ""))", "parent", nil))
                case .localDelete:
                    break
                }
            }
            let parentRef: String? = { if case .created(let id) = parentOutcome { return id }; return parent.action == .create && !parentSent ? "@{parent.id}" : parent.serverId }()
            var childSlots: [Int] = []
            while start < children.count && requests.count < ParentChildrenUpTask.maxSubrequests {
                let child = children[start]
                let ref = "child\(start)"
                guard childTask.pending(childOutcomes, start) else {
                    start += 1
                    continue
                }
                switch child.action {
                case .create:
                    let body = childTask.body(child, creating: true, withType: false, withId: false)
                    if let parentRef { body.root.set(parentIdFieldName, owned: JSONMake.string(parentRef)) }
                    requests.append(("POST", "\(base)/\(RemoteURL.encode(child.type))", ref, body))
                case .update:
                    requests.append(("PATCH", "\(base)/\(RemoteURL.encode(child.type))/\(RemoteURL.encode(child.serverId ?? ""))", ref,
                                     childTask.body(child, creating: false, withType: false, withId: false)))
                case .delete:
                    requests.append(("DELETE", "\(base)/\(RemoteURL.encode(child.type))/\(RemoteURL.encode(child.serverId ?? ""))", ref, nil))
                case .localDelete:
                    childOutcomes[start] = .deleted
                    start += 1
                    continue
                }
                childSlots.append(start)
                start += 1
            }
            if !requests.isEmpty {
                let results = try composite(requests)
                if !parentSent {
                    parentOutcome = outcome(results["parent"], action: parent.action)
                    parentSent = true
                    if case .created(let id) = parentOutcome { parent.serverId = id }
                }
                for slot in childSlots { childOutcomes[slot] = outcome(results["child\(slot)"], action: children[slot].action) }
                if case .failed = parentOutcome, parent.action == .create { break }
            }
        } while start < children.count
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

    /// One `POST composite` (allOrNone false); results by referenceId.
    private func composite(_ requests: [(String, String, String, JSONDocument?)]) throws -> [String: (Int, String)] {
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
        var results: [String: (Int, String)] = [:]
        for result in doc.root["compositeResponse"]?.elements ?? [] {
            guard let ref = result["referenceId"]?.string else { continue }
            results[ref] = (Int(result["httpStatusCode"]?.int64 ?? 0), result["body"]?.dump() ?? "null")
        }
        return results
    }

    private func outcome(_ result: (Int, String)?, action: SyncUpTask.Action) -> SyncUpTask.Outcome {
        guard let (status, body) = result else {
            return .failed(parentTask.errorJSON("NO_RESULT", "The server gave no result for this record"))
        }
        if (200..<300).contains(status) {
            switch action {
            case .create:
                if let doc = try? JSONDocument.parse(body), let id = doc.root["id"]?.string { return .created(id) }
                return .failed(parentTask.errorJSON("NO_ID", "The server answered the create without an id"))
            case .update: return .updated
            case .delete, .localDelete: return .deleted
            }
        }
        if status == 404 && action == .delete { return .deleted }
        return .failed(body)
    }
}
