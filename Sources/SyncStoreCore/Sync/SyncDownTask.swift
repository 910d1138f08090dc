/// One run of a sync down (semantics §8): pages are fetched, each written in one transaction
/// together with the sync state, while the next page is already being fetched.
struct SyncDownTask {
    let ctx: SyncContext
    let target: SyncDownTarget
    let options: SyncOptions
    let states: SyncStateStore
    let emit: (SyncState) -> Void

    /// Runs to the end; throws on failure or stop (STATE). `state` is updated as pages land.
    func run(_ state: inout SyncState, since: Int64?) throws {
        var page = try target.firstPage(ctx, since: since)
        state.totalSize = page.totalSize ?? -1
        var saved: Int64 = 0
        while true {
            try checkStopped()
            let current = page
            let prefetch = current.next != nil ? Prefetch { try target.nextPage(ctx, after: current) } : nil
            do {
                saved += Int64(current.recordCount)
                state.progress = progress(saved: saved, total: state.totalSize, last: prefetch == nil)
                try write(current, state: &state)
            } catch {
                // The prefetch must not outlive the run.
                ctx.cancel.cancel()
                _ = try? prefetch?.join()
                throw error
            }
            emit(state)
            guard let prefetch else { return }
            page = try prefetch.join()
        }
    }

    private func progress(saved: Int64, total: Int64, last: Bool) -> Int {
        if last { return 100 }
        guard total > 0 else { return 0 }
        return Int(min(99, saved * 100 / total))
    }

    private func checkStopped() throws {
        if ctx.cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
    }

    /// Writes one page and the state in a single transaction.
    private func write(_ page: DownPage, state: inout SyncState) throws {
        try checkStopped()
        var maxTimeStamp = state.maxTimeStamp
        for group in page.groups {
            for record in group.records {
                if let text = record[group.modificationDateFieldName]?.string, let ms = Timestamp.parse(text) {
                    maxTimeStamp = max(maxTimeStamp, ms)
                }
            }
        }
        var next = state
        next.maxTimeStamp = maxTimeStamp
        try ctx.store.write { db in
            let now = Clock.nowMillis()
            for group in page.groups where !group.records.isEmpty {
                let info = try ctx.store.requireSoup(group.soupName)
                try ctx.store.withEntryWriter(db, soup: info, externalIdPath: group.idFieldName,
                                              leaveIfChanged: options.mergeMode == .leaveIfChanged) { writer in
                    var sink: TextBuffer? = nil
                    let members = LocalFlags.cleanMembers(syncId: ctx.syncId)
                    for (i, record) in group.records.enumerated() where record.isObject {
                        // Stored as the server sent it, plus the flags, unless it already has keys the store sets.
                        var source: StoredText? = nil
                        if let bytes = group.source, let ranges = group.ranges, i < ranges.count,
                           !LocalFlags.storeKeys.contains(where: { record[$0] != nil }) {
                            source = StoredText(bytes: bytes, range: ranges[i], members: members)
                        }
                        LocalFlags.clear(record, syncId: ctx.syncId)
                        try writer.upsert(record, index: i, now: now, into: &sink, source: source)
                    }
                }
            }
            try states.save(next, db: db)
        }
        state = next
    }
}
