import SyncStoreCore

/// The records change events named, for one SOQL sync down (docs/sync.md#change-events): the
/// created and updated ones fetched by id, the deleted ones removed, in one run of the sync
/// that writes them as its pages are written (merge mode, maxTimeStamp). A query of every
/// record of one object with plain fields fetches through sObject Collections retrieve, 2,000
/// ids a request; any other query fetches through itself restricted to the ids, 200 a request,
/// so a record outside its filter is not brought in. Its keys are the base target's, so a run
/// adopts records whose creates this store sent without an answer, as any sync down does.
package struct ChangedRecordsTarget: CommonKeysTarget {
    package let base: SoqlTarget
    package let fetch: [String]
    package let remove: [String]
    /// The commit time of the newest event taken for these changes (nil: unknown). A record
    /// fetched now carries its newest change, maybe one whose event is still on its way (or
    /// lost with the stream's position): maxTimeStamp stops here so a catch-up's reSync still
    /// finds the changes made before that one. Unknown, it does not move.
    package let seenThrough: Int64?
    /// The object for Collections retrieve, nil when the query must be run.
    private let collectionObject: String?
    private let chunks: [ArraySlice<String>]

    package static let idsPerRetrieve = 2000
    package static let idsPerQuery = 200

    package init(base: SoqlTarget, fetch: [String], remove: [String], seenThrough: Int64?) {
        self.base = base
        self.fetch = fetch
        self.remove = remove
        self.seenThrough = seenThrough
        let plain = base.rewriter.fields.allSatisfy { field in
            field.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 95 }
        }
        collectionObject = plain ? base.rewriter.wholeObject : nil
        let size = collectionObject == nil ? Self.idsPerQuery : Self.idsPerRetrieve
        chunks = stride(from: 0, to: fetch.count, by: size).map { fetch[$0..<min($0 + size, fetch.count)] }
    }

    package var common: TargetCommon { base.common }

    package var maxTimeStampCeiling: Int64 { seenThrough ?? Int64.min }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        var page = chunks.isEmpty ? DownPage(owner: [], groups: [], totalSize: 0, next: nil) : try chunk(0, ctx)
        if !remove.isEmpty {
            var removed = RecordGroup(soupName: ctx.soupName, idFieldName: idFieldName,
                                      modificationDateFieldName: modificationDateFieldName, records: [])
            removed.removedIds = remove
            page = DownPage(owner: page.owner, groups: page.groups + [removed], totalSize: Int64(fetch.count + remove.count), next: page.next)
        }
        return page
    }

    /// `next` is "chunk:K" (the K-th set of ids) or "more:K:<locator>" (a further page of chunk K-1's query).
    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        guard let next = page.next else { throw StoreError(.internal, "nextPage called after the last page") }
        let parts = next.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count >= 2, let k = Int(parts[1]) else { throw StoreError(.internal, "A bad page continuation: \(next)") }
        if parts[0] == "more", parts.count == 3 {
            let fetched = try QueryPaging.fetch(ctx, parts[2], headers: base.batchHeader, common: base.common)
            return continued(fetched, nextChunk: k)
        }
        return try chunk(k, ctx)
    }

    private func chunk(_ k: Int, _ ctx: SyncContext) throws -> DownPage {
        let ids = Array(chunks[k])
        if let object = collectionObject {
            var fields = base.rewriter.fields
            for required in [idFieldName, modificationDateFieldName] where !fields.contains(where: { $0.caseInsensitiveEquals(required) }) {
                fields.append(required)
            }
            let request = JSONDocument.object()
            let idList = JSONDocument.array(), fieldList = JSONDocument.array()
            for id in ids { idList.root.append(owned: JSONMake.string(id)) }
            for field in fields { fieldList.root.append(owned: JSONMake.string(field)) }
            request.root.set("ids", owned: idList.root.retained())
            request.root.set("fields", owned: fieldList.root.retained())
            // A read sent as POST: safe to send again.
            let doc = try ctx.rest.json("POST", "composite/sobjects/\(object)", body: Array(request.root.dump().utf8),
                                        idempotent: true, cancel: ctx.cancel)
            guard doc.root.isArray else { throw StoreError(.server, "The Collections retrieve answer is not an array") }
            // null: deleted since the event, or not visible to this user.
            let group = RecordGroup(soupName: ctx.soupName, idFieldName: idFieldName, modificationDateFieldName: modificationDateFieldName,
                                    records: doc.root.elements.filter(\.isObject))
            return DownPage(owner: [doc], groups: [group], totalSize: Int64(fetch.count + remove.count),
                            next: k + 1 < chunks.count ? "chunk:\(k + 1)" : nil)
        }
        let soql = base.rewriter.recordsQuery(ids: ids, idField: idFieldName, modificationField: modificationDateFieldName)
        let fetched = try QueryPaging.fetch(ctx, QueryPaging.queryPath(soql), headers: base.batchHeader, common: base.common)
        return continued(fetched, nextChunk: k + 1)
    }

    private func continued(_ page: DownPage, nextChunk: Int) -> DownPage {
        let next = page.next.map { "more:\(nextChunk):\($0)" } ?? (nextChunk < chunks.count ? "chunk:\(nextChunk)" : nil)
        return DownPage(owner: page.owner, groups: page.groups, totalSize: Int64(fetch.count + remove.count), next: next)
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? { nil }
}
