import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

// Queries and cursors: query specs, Smart SQL, pages (docs/queries.md).
extension SmartStore {
    // MARK: queries

    package func querySoup(_ name: String, specJSON: String, owner: Int = 0) throws -> TextBuffer {
        try querySoup(name, spec: try QuerySpec.parse(text: specJSON), owner: owner)
    }

    package func querySoup(_ name: String, spec: QuerySpec, owner: Int = 0) throws -> TextBuffer {
        guard spec.queryType != .smart else {
            throw StoreError.argument("querySoup does not take smart query specs; use runSmartQuery")
        }
        let version = catalogLock.withLock { catalogVersion }
        return try reading(name) { info in
            try openCursor(try planIndexingDates(spec, soup: info), source: .soup(name: name, spec: spec),
                           catalogVersion: version, pageSize: spec.pageSize, owner: owner)
        }
    }

    package func runSmartQuery(specJSON: String, owner: Int = 0) throws -> TextBuffer {
        let spec = try QuerySpec.parse(text: specJSON)
        guard spec.queryType == .smart, let sql = spec.smartSql else {
            throw StoreError.argument("runSmartQuery takes only smart query specs ({\"queryType\": \"smart\", \"smartSql\": ...})")
        }
        return try retryingOnCatalogChange {
            let version = catalogLock.withLock { catalogVersion }
            return try openCursor(try smartPlan(sql, timeLimitMs: spec.timeoutMs), source: .smart(sql: sql, timeLimitMs: spec.timeoutMs),
                                  catalogVersion: version, pageSize: spec.pageSize, owner: owner)
        }
    }

    /// One page of a query spec's results (any query type; `soup` is ignored for smart specs)
    /// as a JSON array, with no cursor and no count: a lookup costs one statement.
    package func queryPage(soup name: String?, specJSON: String, page: Int64) throws -> TextBuffer {
        try queryPage(soup: name, spec: try QuerySpec.parse(text: specJSON), page: page)
    }

    package func queryPage(soup name: String?, spec: QuerySpec, page: Int64) throws -> TextBuffer {
        try checkPage(page)
        if let empty = pastEveryRow(page, pageSize: spec.pageSize) { return empty }
        if spec.queryType == .smart {
            guard let sql = spec.smartSql else { throw StoreError.argument("A smart query spec needs \"smartSql\"") }
            return try retryingOnCatalogChange {
                let plan = try smartPlan(sql, timeLimitMs: spec.timeoutMs)
                return try readers.withReader { db in try readPage(plan, pageSize: spec.pageSize, page: page, on: db) }
            }
        }
        guard let name else { throw StoreError.argument("A non-smart query spec needs the soup name") }
        return try reading(name) { info in
            let plan = try planIndexingDates(spec, soup: info)
            return try readers.withReader { db in try readPage(plan, pageSize: spec.pageSize, page: page, on: db) }
        }
    }

    /// `queryPage` for a spec's bytes from a host (not yet known to be valid UTF-8). A flat
    /// spec with a template this soup has seen (SpecTemplate: the same text but for its key
    /// values) is bound to the plan made then. nil when the bytes are not a flat spec of a soup
    /// query: the caller parses them as text.
    package func queryPage(soup name: String?, specUTF8 utf8: UnsafeBufferPointer<UInt8>, page: Int64) throws -> TextBuffer? {
        try checkPage(page)
        guard let name else { return nil }
        return try SpecTemplate.read(utf8) { template in
            try reading(name) { info -> TextBuffer? in
                let lookup: CachedLookup
                if let known = info.lookups.value(isLast: { template.isText($0) }, key: { Array(template.text) }) {
                    lookup = known
                    if lookup.readsDates { indexDates(lookup.spec.filterAndOrderPaths, of: info) }
                } else {
                    guard let spec = try QuerySpec.parse(flat: utf8), spec.queryType != .smart else { return nil }
                    lookup = try CachedLookup(spec: spec, plan: try planIndexingDates(spec, soup: info), soup: info)
                    info.lookups.store(lookup, for: Array(template.text))
                }
                if let empty = pastEveryRow(page, pageSize: lookup.spec.pageSize) { return empty }
                let bindings = try SoupQueryBuilder.bindings(lookup, keys: template)
                return try readers.withReader { db in
                    try readPage(lookup.plan, bindings: bindings, pageSize: lookup.spec.pageSize, page: page, on: db)
                }
            }
        }
    }

    private func checkPage(_ page: Int64) throws {
        guard page >= 0 else { throw StoreError.argument("page_index must be 0 or more (got \(page))") }
    }

    /// "[]" for a page past any possible row (its offset would not fit in 64 bits).
    private func pastEveryRow(_ page: Int64, pageSize: Int) -> TextBuffer? {
        guard page.multipliedReportingOverflow(by: Int64(pageSize)).overflow else { return nil }
        var empty = TextBuffer(capacity: 2)
        empty.append("[]")
        return empty
    }

    /// Translates and vets Smart SQL: one read-only SELECT, nothing else.
    package func smartPlan(_ smartSql: String, timeLimitMs: Int64) throws -> QueryPlan {
        // The entry dates the query names, per soup: one index build (one write) for each soup.
        var dates: [(soup: SoupInfo, paths: [String?])] = []
        let translated = try SmartSqlTranslator(lookup: { self.soup($0) }, sawPath: { soup, path in
            guard SoupCatalog.dateColumn(path) != nil else { return }
            if let k = dates.firstIndex(where: { $0.soup.table == soup.table }) { dates[k].paths.append(path) } else { dates.append((soup, [path])) }
        }).translate(smartSql)
        for (soup, paths) in dates { indexDates(paths, of: soup) }
        let body = try readers.withReader { db in try SmartSqlGuard.vet(translated, on: db) }
        return QueryPlan(pageSQL: "SELECT * FROM (\n\(body)\n) LIMIT ? OFFSET ?",
                         countSQL: "SELECT count(*) FROM (\n\(body)\n)",
                         bindings: [], rows: .values, isSmart: true, timeLimitMs: timeLimitMs)
    }

    func openCursor(_ plan: QueryPlan, source: CursorSource, catalogVersion: Int, pageSize: Int, owner: Int) throws -> TextBuffer {
        let (total, page) = try readers.withReader { db -> (Int64, TextBuffer) in
            let count = try statement(plan.countSQL, smart: plan.isSmart, on: db)
            defer { count.reset() }
            try count.bind(plan.bindings)
            let total = try plan.limited(on: db) { try count.step() ? count.int64(0) : 0 }
            return (total, try readPage(plan, pageSize: pageSize, page: 0, on: db))
        }
        let cursor = cursors.open(plan: plan, source: source, catalogVersion: catalogVersion, pageSize: pageSize,
                                  totalEntries: total, owner: owner)
        return cursor.json(page: 0, entries: page)
    }

    /// A cursor's page, read with its plan; a cursor planned before the soups' indexes changed
    /// (an alterSoup dropped a column its plan uses) is planned again first, as a new query
    /// would be. totalEntries stays the count taken at open.
    package func moveCursor(_ id: Int64, toPage page: Int64) throws -> TextBuffer {
        guard let opened = cursors.get(id) else {
            throw StoreError.notFound("Cursor \(id) is not open (closed, or never opened on this store)")
        }
        let index = opened.clamp(page)
        return try retryingOnCatalogChange {
            let plan = try currentPlan(id)
            do {
                let entries = try readers.withReader { db in
                    try readPage(plan, pageSize: opened.pageSize, page: index, on: db)
                }
                return opened.json(page: index, entries: entries)
            } catch {
                // Another process may have altered or removed the soup: a catalog read from the
                // file moves the version, and the read is planned again.
                adoptCatalogFromFile()
                throw error
            }
        }
    }

    /// The cursor's plan for the catalog as it is now (planned again when it changed).
    func currentPlan(_ id: Int64) throws -> QueryPlan {
        guard let cursor = cursors.get(id) else {
            throw StoreError.notFound("Cursor \(id) is not open (closed, or never opened on this store)")
        }
        let version = catalogLock.withLock { catalogVersion }
        guard version != cursor.catalogVersion else { return cursor.plan }
        let plan: QueryPlan
        switch cursor.source {
        case .soup(let name, let spec):
            // A soup removed (or removed and registered again: another table) is not the one
            // the cursor counted.
            guard let info = soup(name), info.table == cursor.plan.soupTable else {
                throw StoreError.notFound("The soup cursor \(id) was reading has been removed; close the cursor and query again")
            }
            plan = try planIndexingDates(spec, soup: info)
        case .smart(let sql, let timeLimitMs):
            plan = try smartPlan(sql, timeLimitMs: timeLimitMs)
        }
        cursors.replan(id, plan, catalogVersion: version)
        return plan
    }

    package func closeCursor(_ id: Int64) { cursors.close(id) }
    package func closeCursors(owner: Int) { cursors.closeAll(owner: owner) }

    func statement(_ sql: String, smart: Bool, on db: Connection) throws -> Statement {
        smart ? try SmartSqlGuard.prepare(sql, on: db) : try db.cached(sql)
    }

    /// `bindings`: what to bind instead of the plan's own (a cached lookup's new keys).
    func readPage(_ plan: QueryPlan, bindings: [SQLValue]? = nil, pageSize: Int, page: Int64, on db: Connection) throws -> TextBuffer {
        let statement = try statement(plan.pageSQL, smart: plan.isSmart, on: db)
        let bindings = bindings ?? plan.bindings
        // Stepped to its end, the statement has let go of its read transaction; only a failure
        // midway needs the reset (the cache resets it again before its next use).
        do {
            try statement.bind(bindings)
            let next = Int32(bindings.count + 1)
            try statement.bind(.int(Int64(pageSize)), at: next)
            try statement.bind(.int(page * Int64(pageSize)), at: next + 1)
            // Room for one entry of a few hundred bytes: most lookups' pages hold one, and a
            // small first block comes from malloc's per-thread cache.
            var out = TextBuffer(capacity: 512)
            try plan.limited(on: db) { try ResultWriter.writeRows(statement, rows: plan.rows, into: &out) }
            return out
        } catch {
            statement.reset()
            throw error
        }
    }
}
