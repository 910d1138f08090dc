/// What one sync run needs from its surroundings.
struct SyncContext {
    let rest: RestClient
    let cancel: CancelFlag
    let store: SmartStore
    let soupName: String
    let syncId: Int64
}

/// Records fetched together, with where they go.
struct RecordGroup {
    let soupName: String
    let idFieldName: String
    let modificationDateFieldName: String
    let records: [JSON]
    /// The records as scanned text instead of trees (query pages; `records` is then empty).
    var scanned: ScannedPage? = nil

    var count: Int { scanned?.records.count ?? records.count }
}

/// One page of a sync down. `owner` keeps the parsed response (and so the records) alive.
struct DownPage {
    let owner: [JSONDocument]
    let groups: [RecordGroup]
    /// Total records the server announced (first page), nil when unknown.
    let totalSize: Int64?
    /// Continuation for the next page, nil on the last one.
    let next: String?

    var recordCount: Int { groups.reduce(0) { $0 + $1.count } }
}

/// A sync down target type (docs/sync.md#sync-down-targets).
protocol SyncDownTarget {
    var idFieldName: String { get }
    var modificationDateFieldName: String { get }
    /// The first page; `since` is the maxTimeStamp of the previous run (nil: fetch everything).
    func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage
    /// The page after `page` (called only when page.next is set).
    func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage
    /// Every id the server has in this target's scope, per soup, for cleanResyncGhosts; nil when
    /// the target cannot list them.
    func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]?
    /// True when the pages come in ascending modification-date order, so that after each page
    /// every record up to its newest date is stored and maxTimeStamp may advance page by page.
    /// Otherwise it advances only when a run completes (an interrupted run must not skip the
    /// older records of the pages it did not reach).
    var pagesInTimestampOrder: Bool { get }
}

extension SyncDownTarget {
    var pagesInTimestampOrder: Bool { false }
}

/// A target configured by the common keys: its id and modification-date fields come from them.
protocol CommonKeysTarget: SyncDownTarget {
    var common: TargetCommon { get }
}

extension CommonKeysTarget {
    var idFieldName: String { common.idFieldName }
    var modificationDateFieldName: String { common.modificationDateFieldName }

    /// One page of records into the sync's soup.
    func page(_ ctx: SyncContext, owner: JSONDocument, records: [JSON], totalSize: Int64?, next: String?) -> DownPage {
        DownPage(owner: [owner], groups: [RecordGroup(soupName: ctx.soupName, idFieldName: idFieldName,
                                                      modificationDateFieldName: modificationDateFieldName, records: records)],
                 totalSize: totalSize, next: next)
    }
}

/// Targets whose whole answer is one page.
protocol SinglePageTarget: CommonKeysTarget {}

extension SinglePageTarget {
    func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        throw StoreError(.internal, "This target has one page; nextPage must not be called")
    }

    /// A page of one record: the answer `doc` (an object) with `fields` set on it as strings.
    func recordPage(_ ctx: SyncContext, _ doc: JSONDocument, what: String, fields: [(String, String)]) throws -> DownPage {
        guard doc.root.isObject else { throw StoreError(.server, "The \(what) response is not an object") }
        for (key, value) in fields { doc.root.set(key, owned: JSONMake.string(value)) }
        return page(ctx, owner: doc, records: [doc.root], totalSize: 1, next: nil)
    }
}

/// Keys every target understands.
struct TargetCommon {
    let json: JSON
    let idFieldName: String
    let modificationDateFieldName: String

    init(_ json: JSON) throws {
        self.json = json
        idFieldName = try TargetCommon.optionalString(json, "idFieldName") ?? "Id"
        modificationDateFieldName = try TargetCommon.optionalString(json, "modificationDateFieldName") ?? "LastModifiedDate"
    }

    static func optionalString(_ json: JSON, _ key: String) throws -> String? {
        guard let v = json[key], !v.isNull else { return nil }
        guard let s = v.string, !s.isEmpty else { throw StoreError.argument("Target \"\(key)\" must be a non-empty string") }
        return s
    }

    func required(_ key: String) throws -> String {
        guard let s = try TargetCommon.optionalString(json, key) else {
            throw StoreError.argument("A \(json["type"]?.string ?? "") target needs \"\(key)\"")
        }
        return s
    }

    func stringList(_ key: String) throws -> [String]? {
        guard let v = json[key], !v.isNull else { return nil }
        return try SyncStoreCore.stringList(v, key)
    }
}

/// Parses a sync down target JSON into its implementation.
enum SyncDownTargets {
    static func make(_ json: JSON, soupName: String, customTargets: CustomTargetRegistry?) throws -> SyncDownTarget {
        guard json.isObject else { throw StoreError.argument("A sync down target must be a JSON object with \"type\"") }
        let type = json["type"]?.string ?? (json["query"] != nil ? "soql" : "")
        switch type {
        case "soql": return try SoqlTarget(json)
        case "sosl": return try SoslTarget(json)
        case "mru": return try MruTarget(json)
        case "refresh": return try RefreshTarget(json, soupName: soupName)
        case "parent_children": return try ParentChildrenTarget(json)
        case "briefcase": return try BriefcaseTarget(json)
        case "layout": return try LayoutTarget(json)
        case "metadata": return try MetadataTarget(json)
        default:
            if let custom = customTargets?.down(type) { return try custom.make(json) }
            throw StoreError.argument("Unknown sync down target type '\(type)': use soql, sosl, mru, refresh, parent_children, briefcase, layout, metadata, or register a custom target")
        }
    }
}

/// Paging through `query` answers: `{totalSize, done, records, nextRecordsUrl}`.
enum QueryPaging {
    /// Fetches one query page. Its records are scanned from the text with the plan of the
    /// soup's entry writer (no tree built) when the soup and the text allow it, else parsed.
    static func fetch(_ ctx: SyncContext, _ path: String, headers: [String] = [], common: TargetCommon,
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

    static func page(_ doc: JSONDocument, common: TargetCommon, soupName: String) throws -> DownPage {
        guard let records = doc.root["records"], records.isArray else {
            throw StoreError(.server, "The query response has no records array")
        }
        let done = doc.root["done"]?.bool ?? true
        let next = done ? nil : doc.root["nextRecordsUrl"]?.string
        let group = RecordGroup(soupName: soupName, idFieldName: common.idFieldName,
                                modificationDateFieldName: common.modificationDateFieldName, records: records.elements)
        return DownPage(owner: [doc], groups: [group], totalSize: doc.root["totalSize"]?.int64, next: next)
    }

    static func queryPath(_ soql: String) -> String { "query?q=\(RemoteURL.encode(soql))" }

    /// All ids a query returns, following every page.
    static func allIds(_ ctx: SyncContext, soql: String, idField: String, batchHeader: [String] = []) throws -> Set<String> {
        var ids = Set<String>()
        var path: String? = queryPath(soql)
        var locators = PageLocators()
        while let current = path {
            try locators.check(current)
            let doc = try ctx.rest.json("GET", current, headers: batchHeader, cancel: ctx.cancel)
            for record in doc.root["records"]?.elements ?? [] {
                if let id = record[idField]?.string { ids.insert(id) }
            }
            path = (doc.root["done"]?.bool ?? true) ? nil : doc.root["nextRecordsUrl"]?.string
        }
        return ids
    }
}
