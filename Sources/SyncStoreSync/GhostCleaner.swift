import Glibc
import SyncStoreSupport
import SyncStoreCore

/// cleanResyncGhosts (docs/sync.md#ghosts): local records this sync wrote (`__sync_id__`), not dirty,
/// whose ids the server no longer lists for the target, are deleted in one transaction.
/// The server's ids are streamed page by page into a scratch database beside the store (on disk,
/// encrypted with the store's key when the store is), so memory stays flat however many there
/// are; a thread of the scratch's own inserts each page while the next is fetched. The ghosts
/// are then found with one query per soup and deleted after checking, inside the deleting
/// transaction, that each is still clean and still this sync's.
package struct GhostCleaner {
    package let ctx: SyncContext
    package let state: SyncState
    package let customTargets: CustomTargetRegistry

    package func run() throws -> Int {
        guard case .down(let kind) = try state.target.parsed.get(),
              let target = try SyncDownTargets.target(kind, customTargets: customTargets) else {
            throw StoreError.argument("cleanResyncGhosts applies to sync down syncs only, and not to twophase ones")
        }
        // A query of every record of one object, its soup indexed on the id: the server's list
        // of deleted records since the last cleaning is the list of ghosts.
        let window = DeletedRecordsWindow(ctx: ctx, syncId: state.id)
        let wholeObject = (target as? SoqlTarget)?.rewriter.wholeObject
        let indexed = try ctx.store.requireSoup(state.soupName).index(for: target.idFieldName) != nil
        if let sobject = wholeObject, indexed, let since = try window.mark(),
           let deleted = try window.deletedIds(of: sobject, since: since) {
            // A record deleted and undeleted since the mark is listed, yet exists.
            let back = deleted.ids.isEmpty ? [] : try window.stillThere(deleted.ids, of: sobject)
            return try removeDeleted(deleted.ids.filter { !back.contains($0) }, idFieldName: target.idFieldName,
                                     window: window, coveredUntil: deleted.coveredUntil, unowned: true)
        }
        let listingStarted = Clock.nowMillis()
        let scratch = try GhostScratch(file: ctx.store.file)
        defer { scratch.remove() }
        guard try target.visitRemoteIds(ctx, { soup, ids in
            if ctx.cancel.isCancelled { throw StoreError(.state, "The ghost cleaning was stopped") }
            try scratch.add(soup: soup, ids: ids)
        }) else {
            throw StoreError.argument("This sync's target cannot list remote ids, so ghosts cannot be found")
        }
        try scratch.finishAdding()
        var found: [(SoupInfo, [Int64])] = []
        for soupName in scratch.soups {
            let info = try ctx.store.requireSoup(soupName)
            found.append((info, try scratch.ghosts(of: info, idFieldName: target.idFieldName, syncId: state.id,
                                                   unowned: wholeObject != nil)))
        }
        // What the listing covered, on the server's clock (unknown when it sent no Date header).
        let listedFrom = ctx.rest.serverNow.map { listingStarted + $0 - Clock.nowMillis() }
        var removed = 0
        try ctx.store.write { db in
            for (info, candidates) in found where !candidates.isEmpty {
                let ghosts = try stillGhosts(candidates, info: info, idFieldName: target.idFieldName, unowned: wholeObject != nil, db: db)
                try ctx.store.deleteRows(db, info, ids: ghosts)
                removed += ghosts.count
            }
            if wholeObject != nil, indexed, let listedFrom {
                try window.setMark(listedFrom - DeletedRecordsWindow.overlap, db: db)
            }
        }
        return removed
    }

    /// Deletes this sync's clean entries whose ids the server listed as deleted, and moves the
    /// mark on, in one transaction.
    /// Whether an entry is this sync's: it wrote it, or (`unowned`, a query of every record of
    /// the object) no sync down did and it names a server record: one this store created and
    /// pushed, whose record is in the query's scope as every record of the object is.
    static func member(_ idExpr: String, soupColumn: String = "soup", unowned: Bool) -> String {
        let owner = SoupPath.jsonExtract(LocalFlags.syncId, soupColumn: soupColumn)
        return unowned ? "(\(owner) = ? OR (\(owner) IS NULL AND \(idExpr) IS NOT NULL))" : "\(owner) = ?"
    }

    private func removeDeleted(_ ids: [String], idFieldName: String, window: DeletedRecordsWindow, coveredUntil: Int64,
                               unowned: Bool) throws -> Int {
        if ctx.cancel.isCancelled { throw StoreError(.state, "The ghost cleaning was stopped") }
        let info = try ctx.store.requireSoup(state.soupName)
        var removed = 0
        try ctx.store.write { db in
            let idExpr = info.expression(for: idFieldName)
            let find = try db.prepare("""
                SELECT id FROM \(info.table) WHERE \(idExpr) = ? \
                AND \(GhostCleaner.member(idExpr, unowned: unowned)) AND NOT \(LocalFlags.dirtyCondition)
                """)
            var ghosts: [Int64] = []
            for id in Set(ids) {
                find.reset()
                try find.bind([.text(id), .int(state.id)])
                while try find.step() { ghosts.append(find.int64(0)) }
            }
            find.reset()
            try ctx.store.deleteRows(db, info, ids: ghosts)
            removed = ghosts.count
            try window.setMark(coveredUntil - DeletedRecordsWindow.overlap, db: db)
        }
        return removed
    }

    /// The candidates that are, inside the deleting transaction, still clean and this sync's.
    private func stillGhosts(_ candidates: [Int64], info: SoupInfo, idFieldName: String, unowned: Bool, db: Connection) throws -> [Int64] {
        let check = try db.cached("""
            SELECT 1 FROM \(info.table) WHERE id = ? AND \(GhostCleaner.member(info.expression(for: idFieldName), unowned: unowned)) \
            AND NOT \(LocalFlags.dirtyCondition)
            """)
        var ghosts: [Int64] = []
        // Reset after each use: a cached statement left on a row keeps the connection's read
        // transaction open after the commit (a change of key then cannot leave WAL mode).
        defer { check.reset() }
        for id in candidates {
            check.reset()
            try check.bind([.int(id), .int(state.id)])
            if try check.step() { ghosts.append(id) }
        }
        return ghosts
    }
}

/// A scratch database beside the store (`<store file>-ghosts`) holding the server's ids, attached
/// to a connection of its own to the store; removed when the cleaning ends (and replaced if a
/// crash left one). Pages of ids are inserted on a thread of their own, at most
/// `maxQueued` pages behind the fetch, so the fetch does not wait for the inserts.
package final class GhostScratch: @unchecked Sendable {
    package static let suffix = "-ghosts"
    package static let maxQueued = 4
    private let connection: Connection
    private let path: String
    private var insert: Statement?
    package private(set) var soups: [String] = []

    private let condition = ConditionLock()
    // Guarded by `condition`.
    private var queue: [(soup: String, ids: [String])] = []
    private var failure: Error?
    private var closing = false
    private var inserter: pthread_t?
    private var inserterStarted = false

    package init(file: DatabaseFile) throws {
        path = file.path + GhostScratch.suffix
        unlink(path)
        connection = try Connection(file: file, readOnly: false)
        do {
            try connection.execute("ATTACH DATABASE '\(file.uri(at: path).replacingAll("'", with: "''"))' AS ghosts")
            if file.isEncrypted { connection.reserveCipherBytes(schema: "ghosts") }
            // Scratch: a crash leaves it to be replaced, so no journal and no syncs.
            try connection.execute("PRAGMA ghosts.journal_mode=OFF")
            try connection.execute("PRAGMA ghosts.synchronous=OFF")
            try connection.execute("CREATE TABLE ghosts.remote_ids (soup_name TEXT, remote_id TEXT, PRIMARY KEY (soup_name, remote_id)) WITHOUT ROWID")
        } catch {
            remove()
            throw error
        }
    }

    /// Queues one page of `soup`'s ids; waits while `maxQueued` pages are queued. Throws what
    /// made an earlier page's insert fail.
    package func add(soup: String, ids: [String]) throws {
        if !soups.contains(soup) { soups.append(soup) }
        guard !ids.isEmpty else { return }
        if !inserterStarted {
            inserterStarted = true
            inserter = startThread { [self] in drain() }
        }
        guard inserter != nil else { return try insertPage(soup: soup, ids: ids) } // no thread: inline
        try condition.withLock {
            while queue.count >= GhostScratch.maxQueued && failure == nil { _ = condition.wait() }
            if let failure { throw failure }
            queue.append((soup, ids))
            condition.broadcast()
        }
    }

    /// Waits until every queued page is inserted; throws what made an insert fail.
    package func finishAdding() throws {
        stopInserter(discarding: false)
        if let failure = condition.withLock({ failure }) { throw failure }
    }

    private func stopInserter(discarding: Bool) {
        condition.withLock {
            if discarding { queue.removeAll() }
            closing = true
            condition.broadcast()
        }
        if let inserter {
            pthread_join(inserter, nil)
            self.inserter = nil
        }
    }

    private func drain() {
        while true {
            let next = condition.withLock { () -> (soup: String, ids: [String])? in
                while queue.isEmpty && !closing { _ = condition.wait() }
                guard !queue.isEmpty else { return nil } // closing, and nothing left
                let page = queue.removeFirst()
                condition.broadcast()
                return page
            }
            guard let next else { return }
            do {
                try insertPage(soup: next.soup, ids: next.ids)
            } catch {
                condition.withLock {
                    failure = error
                    queue.removeAll()
                    condition.broadcast()
                }
                return
            }
        }
    }

    private func insertPage(soup: String, ids: [String]) throws {
        let insert = try self.insert ?? connection.prepare("INSERT OR IGNORE INTO ghosts.remote_ids VALUES (?, ?)")
        self.insert = insert
        try connection.execute("BEGIN")
        do {
            for id in ids {
                insert.reset()
                try insert.bind([.text(soup), .text(id)])
                try insert.run()
            }
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Entries of `info` this sync wrote, not dirty, whose id the server did not list. The
    /// entries whose id the server did not list come first, from the id alone (the soup's index
    /// on it, when it has one): only those few have their JSON read.
    package func ghosts(of info: SoupInfo, idFieldName: String, syncId: Int64, unowned: Bool) throws -> [Int64] {
        let idExpr = info.expression(for: idFieldName, qualifier: "e")
        let statement = try connection.prepare("""
            WITH unlisted AS MATERIALIZED (
                SELECT e.id FROM main.\(info.table) AS e
                WHERE \(idExpr) IS NULL OR NOT EXISTS (SELECT 1 FROM ghosts.remote_ids AS r
                                                    WHERE r.soup_name = ? AND r.remote_id = CAST(\(idExpr) AS TEXT)))
            SELECT e.id FROM unlisted JOIN main.\(info.table) AS e USING (id)
            WHERE \(GhostCleaner.member(idExpr, soupColumn: "e.soup", unowned: unowned)) \
            AND NOT \(LocalFlags.dirtyCondition(soupColumn: "e.soup"))
            """)
        try statement.bind([.text(info.name), .int(syncId)])
        var ids: [Int64] = []
        while try statement.step() { ids.append(statement.int64(0)) }
        return ids
    }

    package func remove() {
        stopInserter(discarding: true)
        insert = nil
        _ = try? connection.execute("DETACH DATABASE ghosts")
        connection.close()
        unlink(path)
        unlink(path + "-journal")
    }
}
