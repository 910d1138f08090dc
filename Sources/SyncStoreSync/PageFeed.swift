import Glibc
import SyncStoreCore

/// The pages of one sync down run, in order. With `ahead`, a thread of its own fetches up to
/// `maxQueued` pages ahead of the writer, and `take()` hands the writer every page that is
/// ready, so a writer slower than the server writes several pages in one transaction (each
/// transaction rewrites the index pages it touches once, so fewer, larger transactions write
/// fewer pages; an encrypted store pays for every page written). Without `ahead` (custom
/// targets, whose fetch is host code that must run on the sync's own thread) each `take()`
/// fetches the next page on the caller's thread.
/// Used by one thread (the run's); `close()` stops and joins the fetch thread.
package final class PageFeed: @unchecked Sendable {
    package typealias Fetch = (DownPage) throws -> DownPage

    private let fetch: Fetch
    private let ahead: Bool
    private let maxQueued: Int
    private let cancel: CancelFlag

    private let condition = ConditionLock()
    // Guarded by `condition`.
    private var queue: [DownPage] = []
    private var failure: Error?
    private var finished = false
    private var closed = false

    private var thread: pthread_t?
    /// Inline mode: the last page handed out (its successor is fetched by the next take).
    private var handedOut: DownPage?

    package init(first: DownPage, ahead: Bool, maxQueued: Int = 4, cancel: CancelFlag, fetch: @escaping Fetch) {
        self.fetch = fetch
        self.ahead = ahead
        self.maxQueued = max(1, maxQueued)
        self.cancel = cancel
        queue = [first]
        finished = first.next == nil
        if ahead && !finished { thread = startThread { [self] in produce(after: first) } }
    }

    deinit { close() }

    /// The next pages in order: at least one, at most `maxRecords` records unless the first page
    /// alone holds more. Blocks until a page is ready; throws the fetch's failure once every
    /// page fetched before it has been taken. After the page with no `next`, returns [].
    package func take(maxRecords: Int) throws -> [DownPage] {
        if !ahead || thread == nil { return try takeInline() }
        return try condition.withLock {
            while queue.isEmpty && failure == nil && !finished && !closed { _ = condition.wait() }
            if queue.isEmpty {
                if let failure { throw failure }
                return []
            }
            var pages = [queue.removeFirst()]
            var records = pages[0].recordCount
            while let next = queue.first, records + next.recordCount <= maxRecords {
                records += next.recordCount
                pages.append(queue.removeFirst())
            }
            condition.broadcast()
            return pages
        }
    }

    /// Stops fetching and joins the fetch thread. A fetch still in flight is abandoned through
    /// the run's cancel flag (only then: a run that ends normally is not marked stopped).
    /// Idempotent.
    package func close() {
        condition.withLock {
            closed = true
            if thread != nil && !finished && failure == nil { cancel.cancel() }
            condition.broadcast()
        }
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    private func takeInline() throws -> [DownPage] {
        if let previous = handedOut {
            guard previous.next != nil else { return [] }
            if cancel.isCancelled { throw StoreError(.state, "The sync was stopped") }
            let page = try fetch(previous)
            handedOut = page
            return [page]
        }
        let pages = condition.withLock { () -> [DownPage] in
            let pages = queue
            queue.removeAll()
            return pages
        }
        handedOut = pages.last
        return pages
    }

    private func produce(after first: DownPage) {
        var current = first
        while true {
            let stop = condition.withLock { () -> Bool in
                while queue.count >= maxQueued && !closed { _ = condition.wait() }
                return closed
            }
            if stop || cancel.isCancelled { break }
            do {
                let next = try fetch(current)
                let done = condition.withLock { () -> Bool in
                    queue.append(next)
                    if next.next == nil { finished = true }
                    condition.broadcast()
                    return finished || closed
                }
                if done { return }
                current = next
            } catch {
                condition.withLock {
                    failure = error
                    condition.broadcast()
                }
                return
            }
        }
        condition.withLock {
            if failure == nil && !finished { failure = StoreError(.state, "The sync was stopped") }
            condition.broadcast()
        }
    }
}
