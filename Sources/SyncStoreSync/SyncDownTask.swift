import SyncStoreSupport
import SyncStoreCore

/// One run of a sync down (docs/sync.md#sync-down): pages are fetched, each written in one transaction
/// together with the sync state, while the next page is already being fetched. maxTimeStamp
/// only ever names a point below which every record is stored: page by page when the target's
/// pages come in modification-date order, else once the last page is written. A page locator
/// the server sends twice, or a long run of empty pages, ends the run FAILED instead of looping.
package struct SyncDownTask: SyncRun {
    package let ctx: SyncContext
    package let target: SyncDownTarget
    package let options: SyncOptions
    package let states: SyncStateStore
    package let emit: (SyncState) -> Void

    /// Runs incrementally from the previous run's maxTimeStamp, if any.
    package func run(_ state: inout SyncState) throws {
        try run(&state, since: state.maxTimeStamp > 0 ? state.maxTimeStamp : nil)
    }

    /// Runs to the end; throws on failure or stop (STATE). `state` is updated as pages land.
    package func run(_ state: inout SyncState, since: Int64?) throws {
        var lostCreates: LostCreates? = nil
        if target is CommonKeysTarget, !(target is CustomDownTarget),
           !CreateMarkLedger.isKnownClean(ctx.store, soup: ctx.soupName) {
            let upTarget = SyncUpTarget.keys(idFieldName: target.idFieldName, modificationDateFieldName: target.modificationDateFieldName)
            let task = SyncUpTask(ctx: ctx, target: upTarget, options: options, states: states, emit: { _ in })
            let info = try ctx.store.requireSoup(ctx.soupName)
            let generation = CreateMarkLedger.beginScan(ctx.store)
            let pending = try task.adoptLostCreates(info: info)
            if pending.isEmpty, let generation {
                try CreateMarkLedger.scannedClean(ctx.store, soup: ctx.soupName, generation: generation)
            }
            else { lostCreates = LostCreates(task: task, info: info, pending: pending) }
        }
        let first = try target.firstPage(ctx, since: since)
        state.totalSize = first.totalSize ?? -1
        var saved: Int64 = 0
        var newest = state.maxTimeStamp
        var locators = PageLocators()
        var emptyPages = 0
        let target = self.target, ctx = self.ctx
        let feed = PageFeed(first: first, ahead: fetchesAhead, cancel: ctx.cancel) { current in
            try target.nextPage(ctx, after: current)
        }
        defer { feed.close() } // the fetch thread must not outlive the run
        while true {
            try checkStopped()
            let pages = try feed.take(maxRecords: SyncDownTask.maxRecordsPerTransaction)
            guard let lastPage = pages.last else { return }
            var pageProgress: [Int] = []
            for page in pages {
                try locators.check(page.next)
                emptyPages = page.recordCount == 0 && page.next != nil ? emptyPages + 1 : 0
                if emptyPages > SyncDownTask.maxEmptyPages {
                    throw StoreError(.server, "The server sent \(emptyPages) pages in a row with no records but a next page; paging stopped so the sync cannot loop forever. Run the sync again later")
                }
                saved += Int64(page.recordCount)
                pageProgress.append(progress(saved: saved, total: state.totalSize, last: page.next == nil))
            }
            let last = lastPage.next == nil
            state.progress = pageProgress[pageProgress.count - 1]
            try write(pages, state: &state, newest: &newest, last: last, lostCreates: &lostCreates)
            // One event per page, as when each page had its own transaction: all are stored now.
            for earlier in pageProgress.dropLast() {
                var event = state
                event.progress = earlier
                emit(event)
            }
            emit(state)
            if last { return }
        }
    }

    /// Whether the next page is fetched on a thread of its own while the current one is written.
    /// Not for custom targets: their fetch is host code, which the header promises runs on the
    /// store's sync worker thread (where its guards recognise it), one callback at a time.
    private var fetchesAhead: Bool { !(target is CustomDownTarget) }

    package static let maxEmptyPages = 100
    /// The most records one transaction takes from pages fetched ahead (a single larger page is
    /// still written whole).
    package static let maxRecordsPerTransaction = 10_000

    private func progress(saved: Int64, total: Int64, last: Bool) -> Int {
        if last { return 100 }
        guard total > 0 else { return 0 }
        return Int(min(99, saved * 100 / total))
    }

    private func checkStopped() throws {
        if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
    }

    /// Writes pages and the state in a single transaction. `newest` is the latest
    /// modification date seen in this run; the state's maxTimeStamp takes it when that is safe.
    private func write(_ pages: [DownPage], state: inout SyncState, newest: inout Int64, last: Bool,
                       lostCreates: inout LostCreates?) throws {
        try checkStopped()
        var next = state
        var seen = newest
        var stillPending = lostCreates?.pending
        let members = LocalFlags.cleanMembers(syncId: ctx.syncId)
        try ctx.store.write { db in
            let now = Clock.nowMillis()
            for page in pages { try write(page, db: db, now: now, members: members, maxTimeStamp: &seen,
                                          lostCreates: lostCreates, stillPending: &stillPending) }
            if last || target.pagesInTimestampOrder {
                next.maxTimeStamp = max(next.maxTimeStamp, min(seen, target.maxTimeStampCeiling))
            }
            try states.save(next, db: db)
        }
        state = next
        newest = seen
        if let lost = lostCreates, let stillPending {
            lostCreates = stillPending.isEmpty ? nil : LostCreates(task: lost.task, info: lost.info, pending: stillPending)
        }
    }

    /// One page's groups, inside the caller's transaction.
    private func write(_ page: DownPage, db: Connection, now: Int64, members: AddedMembers, maxTimeStamp seen: inout Int64,
                       lostCreates: LostCreates?, stillPending: inout [SyncUpTask.Item]?) throws {
        if let lost = lostCreates {
            for group in page.groups where group.count > 0 && group.soupName == lost.info.name {
                let trees = try SyncDownTask.trees(group)
                stillPending = try lost.task.adopt(records: trees.records, idFieldName: group.idFieldName,
                                                   pending: stillPending ?? [], db: db, info: lost.info)
            }
        }
        for group in page.groups where !group.removedIds.isEmpty {
            try DatasyncTable.remove(group.removedIds, idFieldName: group.idFieldName, db: db, store: ctx.store, info: try ctx.store.requireSoup(group.soupName), mergeMode: options.mergeMode)
        }
        for group in page.groups where group.count > 0 {
            let info = try ctx.store.requireSoup(group.soupName)
            try ctx.store.withEntryWriter(db, soup: info, externalIdPath: group.idFieldName,
                                          leaveIfChanged: options.mergeMode == .leaveIfChanged) { writer in
                if !(target is CustomDownTarget) { writer.ruleErrorCode = .server }
                if let scanned = group.scanned {
                    try write(scanned, group: group, writer: writer, members: members, now: now,
                              maxTimeStamp: &seen)
                } else {
                    for (i, record) in group.records.enumerated() where record.isObject {
                        try write(record, index: i, group: group, writer: writer, now: now, maxTimeStamp: &seen)
                    }
                }
            }
        }
    }

    /// A group's records as trees (scanned pages are parsed: only done while creates are lost).
    private static func trees(_ group: RecordGroup) throws -> (owner: [JSONDocument], records: [JSON]) {
        guard let page = group.scanned else { return ([], group.records) }
        let docs = try page.records.indices.map { try tree(page, record: $0) }
        return (docs, docs.map { $0.root })
    }

    /// Record `i` of a scanned page, parsed.
    private static func tree(_ page: ScannedPage, record i: Int) throws -> JSONDocument {
        let record = page.records[i]
        return try page.bytes.withUnsafeBytes { raw -> JSONDocument in
            guard let base = raw.baseAddress else { throw StoreError(.internal, "A scanned page has no text") }
            do {
                return try JSONDocument.parse(bytes: base + Int(record.start), length: Int(record.end - record.start), what: "server record")
            } catch let e as StoreError {
                throw StoreError(.server, "\(page.describe(record: i)) of a query page: \(e.message)")
            }
        }
    }

    /// A record as a tree: the flags are set on it and it is serialized.
    private func write(_ record: JSON, index: Int, group: RecordGroup, writer: EntryWriter, now: Int64,
                       maxTimeStamp: inout Int64) throws {
        if let text = record[group.modificationDateFieldName]?.string, let ms = Timestamp.parse(text) {
            maxTimeStamp = max(maxTimeStamp, ms)
        }
        LocalFlags.clear(record, syncId: ctx.syncId)
        var none: TextBuffer? = nil
        try writer.upsert(record, index: index, now: now, into: &none)
    }

    /// Scanned records are stored from their text; the few the scanner leaves to a tree, and
    /// all of them when the soup's indexes changed since the page was scanned, are parsed.
    private func write(_ page: ScannedPage, group: RecordGroup, writer: EntryWriter, members: AddedMembers, now: Int64,
                       maxTimeStamp: inout Int64) throws {
        let fast = writer.canStore(page)
        let modifiedSlot = writer.firstExtraSlot
        for (i, record) in page.records.enumerated() {
            if fast && !record.needsTree {
                let modified = page.value(record: i, slot: modifiedSlot)
                if let ms = page.withText(modified, { Timestamp.parse(bytes: $0) }) ?? nil {
                    maxTimeStamp = max(maxTimeStamp, ms)
                }
                try writer.upsert(scanned: page, record: i, added: members, now: now)
            } else {
                let doc = try SyncDownTask.tree(page, record: i)
                try write(doc.root, index: i, group: group, writer: writer, now: now, maxTimeStamp: &maxTimeStamp)
            }
        }
    }
}

/// Entries of the synced soup whose creates were sent without an answer and whose records were
/// not found when the sync down began: a record of the run that one of them made is written
/// into it instead of into a second entry.
package struct LostCreates {
    package let task: SyncUpTask
    package let info: SoupInfo
    package let pending: [SyncUpTask.Item]
}
