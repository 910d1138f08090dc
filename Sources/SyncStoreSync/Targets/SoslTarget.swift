import SyncStoreCore
/// `{"type":"sosl","query":"FIND {...} RETURNING ..."}`: one page from `search`.
package struct SoslTarget: SinglePageTarget {
    package let common: TargetCommon
    package let query: String

    package init(_ json: JSON) throws {
        common = try TargetCommon(json)
        query = try common.required("query")
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        let doc = try ctx.rest.json("GET", "search?q=\(RemoteURL.encode(query))", cancel: ctx.cancel)
        let records = doc.root.isArray ? doc.root : doc.root["searchRecords"]
        guard let records, records.isArray else { throw StoreError(.server, "The search response has no searchRecords") }
        return page(ctx, owner: doc, records: records.elements, totalSize: Int64(records.count), next: nil)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        let page = try firstPage(ctx, since: nil)
        return [ctx.soupName: Set(page.groups.flatMap { $0.records.compactMap { $0[idFieldName]?.string } })]
    }
}
