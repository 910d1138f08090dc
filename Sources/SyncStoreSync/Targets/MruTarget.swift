import SyncStoreCore
/// `{"type":"mru","sobjectType":"Account","fieldlist":[...]}`: recently used records
/// (`sobjects/{type}` recentItems), then their fields with one SOQL `Id IN (...)`.
package struct MruTarget: CommonKeysTarget {
    package let common: TargetCommon
    package let sobjectType: String
    package let fieldlist: [String]

    package init(_ json: JSON) throws {
        common = try TargetCommon(json)
        sobjectType = try common.required("sobjectType")
        guard let list = try common.stringList("fieldlist"), !list.isEmpty else {
            throw StoreError.argument("An mru target needs a non-empty \"fieldlist\"")
        }
        fieldlist = list
    }

    private func recentIds(_ ctx: SyncContext) throws -> [String] {
        let doc = try ctx.rest.json("GET", "sobjects/\(RemoteURL.encode(sobjectType))", cancel: ctx.cancel)
        return (doc.root["recentItems"]?.elements ?? []).compactMap { $0["Id"]?.string }
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        let ids = try recentIds(ctx)
        guard !ids.isEmpty else {
            return DownPage(owner: [], groups: [], totalSize: 0, next: nil)
        }
        var fields = fieldlist
        for f in [idFieldName, modificationDateFieldName] where !fields.contains(where: { $0.caseInsensitiveEquals(f) }) { fields.append(f) }
        let soql = "SELECT \(fields.joined(separator: ", ")) FROM \(sobjectType) WHERE Id IN (\(SoqlLiteral.list(ids)))"
        return try QueryPaging.fetch(ctx, QueryPaging.queryPath(soql), common: common)
    }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        guard let next = page.next else { throw StoreError(.internal, "nextPage called after the last page") }
        return try QueryPaging.fetch(ctx, next, common: common)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        [ctx.soupName: Set(try recentIds(ctx))]
    }
}
