import SyncStoreCore
/// Host-implemented target types (for backends that are not Salesforce). The host supplies
/// closures; the C ABI adapts C callbacks to them. They run on the store's sync worker.
package struct CustomTargetCallbacks: Sendable {
    /// (target JSON, since ms or -1, continuation or nil) -> page JSON
    /// `{"records":[...], "totalSize"?: n, "next"?: "continuation"}`.
    package var fetchPage: (@Sendable (String, Int64, String?) throws -> String)?
    /// (target JSON) -> JSON array of every remote id, for cleanResyncGhosts.
    package var remoteIds: (@Sendable (String) throws -> String)?
    /// (target JSON, action "create"|"update"|"delete", record JSON) -> result JSON
    /// `{"id": "server id"}` (create), `{}` otherwise. Throwing a StoreError whose code is
    /// .server records it on the record and goes on; other codes fail the sync.
    package var pushRecord: (@Sendable (String, String, String) throws -> String)?

    package init(fetchPage: (@Sendable (String, Int64, String?) throws -> String)? = nil,
                remoteIds: (@Sendable (String) throws -> String)? = nil,
                pushRecord: (@Sendable (String, String, String) throws -> String)? = nil) {
        self.fetchPage = fetchPage
        self.remoteIds = remoteIds
        self.pushRecord = pushRecord
    }
}

/// Custom target types registered on one store.
package final class CustomTargetRegistry: @unchecked Sendable {
    private let lock = Lock()
    private var types: [String: CustomTargetCallbacks] = [:]

    package static let builtIn: Set<String> = ["soql", "sosl", "mru", "refresh", "parent_children", "briefcase", "layout", "metadata", "datasync", "twophase", "single", "collection"]

    package func register(_ type: String, _ callbacks: CustomTargetCallbacks) throws {
        guard !type.isEmpty, !CustomTargetRegistry.builtIn.contains(type) else {
            throw StoreError.argument("Custom target type '\(type)' is empty or names a built-in target")
        }
        lock.withLock { types[type] = callbacks }
    }

    package func callbacks(_ type: String) -> CustomTargetCallbacks? { lock.withLock { types[type] } }

    /// The callbacks of a custom sync down type (nil: not registered, or no fetch callback).
    package func down(_ type: String) -> CustomTargetCallbacks? {
        guard let callbacks = callbacks(type), callbacks.fetchPage != nil else { return nil }
        return callbacks
    }
}

/// A sync down target whose pages come from host callbacks.
package struct CustomDownTarget: CommonKeysTarget {
    package let common: TargetCommon
    package let targetJSON: String
    package let callbacks: CustomTargetCallbacks

    package init(common: TargetCommon, targetJSON: String, callbacks: CustomTargetCallbacks) {
        self.common = common
        self.targetJSON = targetJSON
        self.callbacks = callbacks
    }

    private func page(_ ctx: SyncContext, since: Int64?, continuation: String?) throws -> DownPage {
        guard let fetch = callbacks.fetchPage else { throw StoreError.argument("The custom target has no fetch callback") }
        let text = try fetch(targetJSON, since ?? -1, continuation)
        // Depth is checked per record when stored, so the message can name the record.
        let doc = try JSONDocument.parse(text, what: "custom target page (fetch_page)", limitDepth: false)
        guard let records = doc.root["records"], records.isArray else {
            throw StoreError.argument("A custom target page must be {\"records\": [...], \"totalSize\"?, \"next\"?}")
        }
        return page(ctx, owner: doc, records: records.elements, totalSize: doc.root["totalSize"]?.int64, next: doc.root["next"]?.string)
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage { try page(ctx, since: since, continuation: nil) }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        try self.page(ctx, since: nil, continuation: page.next)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        guard let list = callbacks.remoteIds else { return nil }
        let doc = try JSONDocument.parse(try list(targetJSON), what: "custom target id list (remote_ids)")
        return [ctx.soupName: Set(try stringList(doc.root, "remote ids"))]
    }
}
