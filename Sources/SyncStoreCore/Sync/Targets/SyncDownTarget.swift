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
