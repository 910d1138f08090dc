import SyncStoreCore
/// Paging through `query` answers: `{totalSize, done, records, nextRecordsUrl}`.
package enum QueryPaging {
    /// Fetches one query page. Its records are scanned from the text with the plan of the
    /// soup's entry writer (no tree built) when the soup and the text allow it, else parsed.
    package static func fetch(_ ctx: SyncContext, _ path: String, headers: [String] = [], common: TargetCommon,
                      soupName: String? = nil) throws -> DownPage {
        let soupName = soupName ?? ctx.soupName
        let body = try ctx.rest.body("GET", path, headers: headers, cancel: ctx.cancel)
        if let plan = try scanPlan(ctx, soupName: soupName, common: common), let scanned = ScannedPage.scan(body, plan: plan) {
            var group = RecordGroup(soupName: soupName, idFieldName: common.idFieldName,
                                    modificationDateFieldName: common.modificationDateFieldName, records: [])
            group.scanned = scanned
            return DownPage(owner: [], groups: [group], totalSize: scanned.totalSize,
                            next: scanned.done ? nil : scanned.nextRecordsUrl)
        }
        return try page(RestClient.parse(body, method: "GET", path: path), common: common, soupName: soupName)
    }

    private static func scanPlan(_ ctx: SyncContext, soupName: String, common: TargetCommon) throws -> ScanPlan? {
        EntryWriter.scanPlan(soup: try ctx.store.requireSoup(soupName), externalIdPath: common.idFieldName,
                             extraKeys: [common.modificationDateFieldName], reservedKeys: LocalFlags.storeKeys)
    }

    package static func page(_ doc: JSONDocument, common: TargetCommon, soupName: String) throws -> DownPage {
        guard let records = doc.root["records"], records.isArray else {
            throw StoreError(.server, "The query response has no records array")
        }
        let done = doc.root["done"]?.bool ?? true
        let next = done ? nil : doc.root["nextRecordsUrl"]?.string
        let group = RecordGroup(soupName: soupName, idFieldName: common.idFieldName,
                                modificationDateFieldName: common.modificationDateFieldName, records: records.elements)
        return DownPage(owner: [doc], groups: [group], totalSize: doc.root["totalSize"]?.int64, next: next)
    }

    package static func queryPath(_ soql: String) -> String { "query?q=\(RemoteURL.encode(soql))" }

    /// All ids a query returns, following every page.
    package static func allIds(_ ctx: SyncContext, soql: String, idField: String, batchHeader: [String] = []) throws -> Set<String> {
        var ids = Set<String>()
        try eachIdPage(ctx, soql: soql, idField: idField, batchHeader: batchHeader) { ids.formUnion($0) }
        return ids
    }

    /// The ids a query returns, a page at a time.
    package static func eachIdPage(_ ctx: SyncContext, soql: String, idField: String, batchHeader: [String] = [],
                           _ visit: ([String]) throws -> Void) throws {
        var path: String? = queryPath(soql)
        var locators = PageLocators()
        while let current = path {
            try locators.check(current)
            let doc = try ctx.rest.json("GET", current, headers: batchHeader, cancel: ctx.cancel)
            try visit((doc.root["records"]?.elements ?? []).compactMap { $0[idField]?.string })
            path = (doc.root["done"]?.bool ?? true) ? nil : doc.root["nextRecordsUrl"]?.string
        }
    }
}
