import SyncStoreCore
/// `{"type":"briefcase","infos":[{"sobjectType","fieldlist","soupName","idFieldName"?,
///   "modificationDateFieldName"?}]}`: the ids a briefcase primes
/// (`connect/briefcase/priming-records`, paged by relayToken, incremental by
/// changedAfterTimestamp), then their fields per type through `POST composite/sobjects/{type}`.
package struct BriefcaseTarget: SyncDownTarget {
    package struct Info {
        package let sobjectType: String
        package let fieldlist: [String]
        package let soupName: String
        package let idFieldName: String
        package let modificationDateFieldName: String
    }

    package static let retrieveChunk = 2000
    package let infos: [Info]
    package var idFieldName: String { infos.first?.idFieldName ?? "Id" }
    package var modificationDateFieldName: String { infos.first?.modificationDateFieldName ?? "LastModifiedDate" }

    package init(_ json: JSON) throws {
        guard let list = json["infos"], list.isArray, list.count > 0 else {
            throw StoreError.argument("A briefcase target needs \"infos\": [{\"sobjectType\", \"fieldlist\", \"soupName\"}]")
        }
        infos = try list.elements.map { item in
            let common = try TargetCommon(item)
            var fields = try common.stringList("fieldlist") ?? []
            for f in [common.idFieldName, common.modificationDateFieldName] where !fields.contains(where: { $0.caseInsensitiveEquals(f) }) {
                fields.append(f)
            }
            return Info(sobjectType: try common.required("sobjectType"), fieldlist: fields, soupName: try common.required("soupName"),
                        idFieldName: common.idFieldName, modificationDateFieldName: common.modificationDateFieldName)
        }
    }

    /// One page of priming ids per type, its total, and the relay token for the next.
    private func priming(_ ctx: SyncContext, relayToken: String?, since: Int64?) throws -> ([String: [String]], Int64?, String?, JSONDocument) {
        var query: [(String, String)] = []
        if let relayToken { query.append(("relayToken", relayToken)) }
        // The server filters with '>'; one millisecond less keeps records at the boundary.
        if let since { query.append(("changedAfterTimestamp", String(since - 1))) }
        let path = "connect/briefcase/priming-records" + (query.isEmpty ? "" : "?" + RemoteURL.query(query))
        let doc = try ctx.rest.json("GET", path, cancel: ctx.cancel)
        var ids: [String: [String]] = [:]
        for (type, byRecordType) in doc.root["primingRecords"]?.members ?? [] {
            for (_, entries) in byRecordType.members {
                ids[type, default: []].append(contentsOf: entries.elements.compactMap { $0["id"]?.string })
            }
        }
        return (ids, doc.root["stats"]?["recordCountTotal"]?.int64, doc.root["relayToken"]?.string, doc)
    }

    private func page(_ ctx: SyncContext, relayToken: String?, since: Int64?) throws -> DownPage {
        let (ids, total, next, primingDoc) = try priming(ctx, relayToken: relayToken, since: since)
        var owners = [primingDoc]
        var groups: [RecordGroup] = []
        for info in infos {
            let typeIds = ids[info.sobjectType] ?? []
            var records: [JSON] = []
            var offset = 0
            while offset < typeIds.count {
                let chunk = Array(typeIds[offset..<min(typeIds.count, offset + BriefcaseTarget.retrieveChunk)])
                offset += chunk.count
                let body = JSONDocument.object()
                let idList = JSONDocument.array()
                for id in chunk { idList.root.append(owned: JSONMake.string(id)) }
                let fieldList = JSONDocument.array()
                for f in info.fieldlist { fieldList.root.append(owned: JSONMake.string(f)) }
                body.root.set("ids", owned: idList.root.retained())
                body.root.set("fields", owned: fieldList.root.retained())
                let doc = try ctx.rest.json("POST", "composite/sobjects/\(RemoteURL.encode(info.sobjectType))",
                                            body: Array(body.root.dump().utf8), cancel: ctx.cancel)
                owners.append(doc)
                // Deleted records come back as null.
                records.append(contentsOf: doc.root.elements.filter(\.isObject))
            }
            groups.append(RecordGroup(soupName: info.soupName, idFieldName: info.idFieldName,
                                      modificationDateFieldName: info.modificationDateFieldName, records: records))
        }
        return DownPage(owner: owners, groups: groups, totalSize: total, next: next)
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage { try page(ctx, relayToken: nil, since: since) }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        try self.page(ctx, relayToken: page.next, since: nil)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        var result: [String: Set<String>] = [:]
        for info in infos { result[info.soupName, default: []] = [] }
        var relay: String? = nil
        var locators = PageLocators()
        repeat {
            let (ids, _, next, _) = try priming(ctx, relayToken: relay, since: nil)
            for info in infos { result[info.soupName, default: []].formUnion(ids[info.sobjectType] ?? []) }
            relay = next
            try locators.check(relay)
        } while relay != nil
        return result
    }
}
