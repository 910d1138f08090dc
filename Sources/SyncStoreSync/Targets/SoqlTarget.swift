import SyncStoreCore
/// `{"type":"soql","query":"SELECT ...","maxBatchSize"?:N}`: pages of a SOQL query, incremental
/// by the modification date (docs/sync.md#incremental-sync).
package struct SoqlTarget: CommonKeysTarget {
    package let common: TargetCommon
    package let rewriter: SoqlRewriter
    package let batchHeader: [String]

    package init(_ json: JSON) throws {
        common = try TargetCommon(json)
        rewriter = try SoqlRewriter(try common.required("query"))
        if let size = json["maxBatchSize"], !size.isNull {
            guard let n = size.int64, (200...2000).contains(n) else {
                throw StoreError.argument("maxBatchSize must be an integer from 200 to 2000")
            }
            batchHeader = ["Sforce-Query-Options: batchSize=\(n)"]
        } else {
            batchHeader = []
        }
    }

    package var pagesInTimestampOrder: Bool { rewriter.ordersAscending(by: modificationDateFieldName) }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        let soql = rewriter.syncQuery(idField: idFieldName, modificationField: modificationDateFieldName, since: since)
        return try QueryPaging.fetch(ctx, QueryPaging.queryPath(soql), headers: batchHeader, common: common)
    }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        guard let next = page.next else { throw StoreError(.internal, "nextPage called after the last page") }
        return try QueryPaging.fetch(ctx, next, headers: batchHeader, common: common)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        [ctx.soupName: try QueryPaging.allIds(ctx, soql: rewriter.idQuery(idField: idFieldName), idField: idFieldName, batchHeader: batchHeader)]
    }

    package func visitRemoteIds(_ ctx: SyncContext, _ visit: (String, [String]) throws -> Void) throws -> Bool {
        try visit(ctx.soupName, [])
        try QueryPaging.eachIdPage(ctx, soql: rewriter.idQuery(idField: idFieldName), idField: idFieldName,
                                   batchHeader: batchHeader) { try visit(ctx.soupName, $0) }
        return true
    }
}
