import SyncStoreSupport
import SyncStoreCore

/// What the Datasync targets share (docs/sync.md#datasync): `{"type": "datasync", "table":
/// "todo", "filter"?: "<OData $filter>"}`. Entities are keyed by `id` and ordered by
/// `updatedAt`, the protocol's system properties, so those are the id and modification-date
/// fields (the target does not take `idFieldName` / `modificationDateFieldName`).
package struct DatasyncTable {
    package let table: String
    package let filter: String?
    package static let idField = "id"
    package static let stampField = "updatedAt"
    /// What the server maintains: never sent as data.
    package static let systemFields: Set<String> = ["id", "updatedat", "createdat", "version", "deleted"]
    /// Every Datasync request names the protocol version it speaks.
    package static let headers = ["ZUMO-API-VERSION: 3.0.0"]

    package init(_ json: JSON) throws {
        guard let table = try TargetCommon.optionalString(json, "table") else {
            throw StoreError.argument("A datasync target needs \"table\" (the name in /tables/{table})")
        }
        for key in ["idFieldName", "modificationDateFieldName"] {
            if let v = json[key], !v.isNull, v.string != (key == "idFieldName" ? DatasyncTable.idField : DatasyncTable.stampField) {
                throw StoreError.argument("A datasync target keys entities by \"id\" and orders them by \"updatedAt\": leave out \"\(key)\"")
            }
        }
        self.table = table
        filter = try TargetCommon.optionalString(json, "filter")
    }

    package var path: String { "/tables/\(RemoteURL.encode(table))" }

    /// An OData string literal.
    package static func quoted(_ s: String) -> String {
        var out = "'"
        for c in s { out += c == "'" ? "''" : String(c) }
        return out + "'"
    }

    /// A list request for `position` and the target's filter, everything deleted included.
    package func listPath(_ position: String?) -> String {
        let own = [position, filter.map { "(\($0))" }].compactMap { $0 }
        var query = ["$orderby=updatedAt,id", "$count=true", "__includedeleted=true"]
        if !own.isEmpty { query.insert("$filter=" + RemoteURL.encode(own.joined(separator: " and ")), at: 0) }
        return path + "?" + query.joined(separator: "&")
    }

    /// Entities from `since` on, the boundary millisecond again: rows written in that
    /// millisecond after the previous run read it are not missed (rewriting the others by id
    /// is harmless).
    package static func since(_ ms: Int64) -> String { "(updatedAt ge \(Timestamp.format(ms)))" }

    /// Entities after the (updatedAt, id) position in the list's order: exact, whatever changes
    /// meanwhile (a changed entity moves past the position, so it is read later in the run).
    package static func after(stamp: String, id: String) -> String {
        "(updatedAt gt \(stamp) or (updatedAt eq \(stamp) and id gt \(quoted(id))))"
    }

    /// One list answer `{items, count?, nextLink?}`; `next` is the request after its last item
    /// while the server says more follow.
    package func page(_ ctx: SyncContext, _ path: String) throws -> (doc: JSONDocument, live: [JSON], deleted: [String], count: Int64?, next: String?) {
        let doc = try RestClient.parse(try ctx.rest.body("GET", path, headers: DatasyncTable.headers, cancel: ctx.cancel), method: "GET", path: path)
        guard let items = doc.root["items"], items.isArray else {
            throw StoreError(.server, "GET \(RemoteURL.redacted(path)): the answer has no \"items\" array (is this a Datasync table endpoint?)")
        }
        var live: [JSON] = [], deleted: [String] = []
        var last: (String, String)? = nil
        for item in items.elements where item.isObject {
            guard let id = item[DatasyncTable.idField]?.string, let stamp = item[DatasyncTable.stampField]?.string,
                  let ms = Timestamp.parse(stamp) else {
                throw StoreError(.server, "GET \(RemoteURL.redacted(path)): an item has no string \"id\" or no ISO-8601 \"updatedAt\"")
            }
            last = (Timestamp.format(ms), id)
            if item["deleted"]?.bool == true { deleted.append(id) } else { live.append(item) }
        }
        var next: String? = nil
        if let link = doc.root["nextLink"]?.string, !link.isEmpty {
            // Our own request from the position, not the server's $skip link: an entity changed
            // during the run moves to the end and would shift every later page by one.
            next = last.map { listPath(DatasyncTable.after(stamp: $0.0, id: $0.1)) } ?? link
        }
        return (doc, live, deleted, doc.root["count"]?.int64, next)
    }

    /// Records the server deleted (soft-deleted entities, deleted records' change events): their
    /// local entries go, except dirty ones under LEAVE_IF_CHANGED. Runs inside the page's transaction.
    package static func remove(_ ids: [String], idFieldName: String = idField, db: Connection, store: SmartStore, info: SoupInfo,
                               mergeMode: SyncOptions.MergeMode) throws {
        var rows: [Int64] = []
        for id in ids {
            for holder in try LostCreateFinder.holders(id, idFieldName: idFieldName, info: info, db: db)
            where !holder.dirty || mergeMode == .overwrite { rows.append(holder.entryId) }
        }
        try store.deleteRows(db, info, ids: rows)
    }
}

/// `{"type": "datasync", "table", "filter"?}`: the table's entities in (updatedAt, id) order,
/// incremental by updatedAt; deleted entities remove local entries.
package struct DatasyncTarget: SyncDownTarget {
    package let config: DatasyncTable

    package init(_ json: JSON) throws { config = try DatasyncTable(json) }

    package var idFieldName: String { DatasyncTable.idField }
    package var modificationDateFieldName: String { DatasyncTable.stampField }
    package var pagesInTimestampOrder: Bool { true }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        try fetch(ctx, config.listPath(since.map(DatasyncTable.since)))
    }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        guard let next = page.next else { throw StoreError(.internal, "nextPage called after the last page") }
        return try fetch(ctx, next)
    }

    private func fetch(_ ctx: SyncContext, _ path: String) throws -> DownPage {
        let page = try config.page(ctx, path)
        var group = RecordGroup(soupName: ctx.soupName, idFieldName: idFieldName, modificationDateFieldName: modificationDateFieldName, records: page.live)
        group.removedIds = page.deleted
        return DownPage(owner: [page.doc], groups: [group], totalSize: page.count, next: page.next)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        var ids = Set<String>()
        var path: String? = config.listPath(nil)
        var locators = PageLocators()
        while let current = path {
            try locators.check(current)
            let page = try config.page(ctx, current)
            for record in page.live { if let id = record[DatasyncTable.idField]?.string { ids.insert(id) } }
            path = page.next
        }
        return [ctx.soupName: ids]
    }
}
