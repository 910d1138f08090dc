import SyncStoreSupport

// The entry dates' indexes (docs/queries.md#entry-dates). SmartStore makes a soup's table with
// its `created` and `lastModified` columns indexed; here each is indexed the first time a query
// filters or orders on it, so a soup that is never queried by date does not keep two more
// indexes on every write (about a fifth of a host's upsert, measured against SQLite alone).
extension SmartStore {
    /// Indexes the dates among `paths` (`_soupCreatedDate`, `_soupLastModifiedDate`; other paths
    /// are ignored) on `info`'s table (`CREATE INDEX IF NOT EXISTS`: a store made by an earlier
    /// version has them). Never waits for a write, of this process or another: the query then
    /// runs without the index and the next one tries again. A read-only store, or a soup removed
    /// meanwhile, is read without it.
    func indexDates(_ paths: [String?], of info: SoupInfo) {
        var columns: [String] = []
        for case let path? in paths {
            if let column = SoupCatalog.dateColumn(path), !columns.contains(column) { columns.append(column) }
        }
        guard !columns.isEmpty, !readOnly else { return }
        let missing = catalogLock.withLock {
            columns.filter { !indexedDates.contains(SoupCatalog.dateIndexName(info.table, $0)) }
        }
        guard !missing.isEmpty else { return }
        _ = try? writeIfIdle({ db in
            for column in missing { try SoupCatalog.createDateIndex(db, table: info.table, column: column) }
        }, committed: {
            self.catalogLock.withLock {
                for column in missing { self.indexedDates.insert(SoupCatalog.dateIndexName(info.table, column)) }
            }
        })
    }

    /// `SoupQueryBuilder.plan` after indexing the dates the spec filters or orders on.
    func planIndexingDates(_ spec: QuerySpec, soup info: SoupInfo) throws -> QueryPlan {
        indexDates(spec.filterAndOrderPaths, of: info)
        return try SoupQueryBuilder.plan(spec, soup: info)
    }
}
