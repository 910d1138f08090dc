import SyncStoreCore
/// A sync down target type (docs/sync.md#sync-down-targets).
package protocol SyncDownTarget {
    var idFieldName: String { get }
    var modificationDateFieldName: String { get }
    /// The first page; `since` is the maxTimeStamp of the previous run (nil: fetch everything).
    func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage
    /// The page after `page` (called only when page.next is set).
    func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage
    /// Every id the server has in this target's scope, per soup, for cleanResyncGhosts; nil when
    /// the target cannot list them.
    func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]?
    /// The same ids page by page: `visit(soup, ids)` per page, each soup in scope at least once
    /// (maybe with no ids), so a caller need not hold them all. False when the target cannot
    /// list them. By default, `remoteIds` handed over in one piece per soup.
    func visitRemoteIds(_ ctx: SyncContext, _ visit: (String, [String]) throws -> Void) throws -> Bool
    /// True when the pages come in ascending modification-date order, so that after each page
    /// every record up to its newest date is stored and maxTimeStamp may advance page by page.
    /// Otherwise it advances only when a run completes (an interrupted run must not skip the
    /// older records of the pages it did not reach).
    var pagesInTimestampOrder: Bool { get }
    /// The highest maxTimeStamp a run may set, whatever dates its records carry: a target whose
    /// records may hold changes newer than some it has not fetched says so here.
    var maxTimeStampCeiling: Int64 { get }
}

extension SyncDownTarget {
    package var pagesInTimestampOrder: Bool { false }
    package var maxTimeStampCeiling: Int64 { Int64.max }

    package func visitRemoteIds(_ ctx: SyncContext, _ visit: (String, [String]) throws -> Void) throws -> Bool {
        guard let all = try remoteIds(ctx) else { return false }
        for (soup, ids) in all { try visit(soup, Array(ids)) }
        return true
    }
}
