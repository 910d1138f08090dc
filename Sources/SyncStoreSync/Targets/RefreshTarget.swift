import SyncStoreCore
/// `{"type":"refresh","sobjectType":"Account","fieldlist":[...],"soupName"?}`: re-fetches the
/// records already in the soup, in chunks of at most 500 ids per SOQL `Id IN (...)`.
package struct RefreshTarget: CommonKeysTarget {
    package static let chunk = 500
    package let common: TargetCommon
    package let sobjectType: String
    package let fieldlist: [String]
    package let soupName: String

    package init(_ json: JSON, soupName: String) throws {
        common = try TargetCommon(json)
        sobjectType = try common.required("sobjectType")
        guard let list = try common.stringList("fieldlist"), !list.isEmpty else {
            throw StoreError.argument("A refresh target needs a non-empty \"fieldlist\"")
        }
        fieldlist = list
        self.soupName = try TargetCommon.optionalString(json, "soupName") ?? soupName
    }

    /// Local ids (server ids stored in the soup), ordered, so chunks are stable across pages.
    private func localIds(_ ctx: SyncContext) throws -> [String] {
        let info = try ctx.store.requireSoup(soupName)
        return try ctx.store.readers.withReader { db in
            let statement = try db.prepare("SELECT DISTINCT \(info.expression(for: idFieldName)) AS sid FROM \(info.table) WHERE sid IS NOT NULL ORDER BY sid")
            var ids: [String] = []
            while try statement.step() { ids.append(statement.text(0)) }
            return ids
        }
    }

    /// The page of chunk `offset`: the chunk's query, or `path`, the server's next page of it
    /// (a server may answer a chunk in several pages). `next` is "<offset>" for the next chunk
    /// or "<offset> <nextRecordsUrl>" for the rest of this one.
    private func fetch(_ ctx: SyncContext, ids: [String], offset: Int, path: String? = nil) throws -> DownPage {
        let slice = Array(ids[offset..<min(ids.count, offset + RefreshTarget.chunk)])
        var fields = fieldlist
        for f in [idFieldName, modificationDateFieldName] where !fields.contains(where: { $0.caseInsensitiveEquals(f) }) { fields.append(f) }
        let soql = "SELECT \(fields.joined(separator: ", ")) FROM \(sobjectType) WHERE Id IN (\(SoqlLiteral.list(slice)))"
        let page = try QueryPaging.fetch(ctx, path ?? QueryPaging.queryPath(soql), common: common, soupName: soupName)
        let nextOffset = offset + RefreshTarget.chunk
        let next = page.next.map { "\(offset) \($0)" } ?? (nextOffset < ids.count ? String(nextOffset) : nil)
        return DownPage(owner: page.owner, groups: page.groups, totalSize: Int64(ids.count), next: next)
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        let ids = try localIds(ctx)
        guard !ids.isEmpty else { return DownPage(owner: [], groups: [], totalSize: 0, next: nil) }
        return try fetch(ctx, ids: ids, offset: 0)
    }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        let parts = page.next?.split(separator: " ", maxSplits: 1) ?? []
        guard let first = parts.first, let offset = Int(first) else { throw StoreError(.internal, "nextPage called after the last page") }
        let ids = try localIds(ctx)
        guard offset < ids.count else { return DownPage(owner: [], groups: [], totalSize: Int64(ids.count), next: nil) }
        return try fetch(ctx, ids: ids, offset: offset, path: parts.count > 1 ? String(parts[1]) : nil)
    }

    /// Ghosts of a refresh target are local records the server no longer has.
    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        let ids = try localIds(ctx)
        var found = Set<String>()
        var offset = 0
        while offset < ids.count {
            let slice = Array(ids[offset..<min(ids.count, offset + RefreshTarget.chunk)])
            let soql = "SELECT Id FROM \(sobjectType) WHERE Id IN (\(SoqlLiteral.list(slice)))"
            found.formUnion(try QueryPaging.allIds(ctx, soql: soql, idField: "Id"))
            offset += RefreshTarget.chunk
        }
        return [soupName: found]
    }
}
