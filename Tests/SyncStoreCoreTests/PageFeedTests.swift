// docs/sync.md#sync-down — pages fetched ahead are written several to a transaction, in order,
// with at most a bounded number waiting; a fetch failure reaches the writer after the pages
// fetched before it; closing abandons the fetch thread.
import Glibc
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

final class PageFeedTests: XCTestCase {
    /// Page `n` of `total`, holding `records` records; its locator names the next page.
    private func page(_ n: Int, of total: Int, records: Int) throws -> DownPage {
        let doc = try JSONDocument.parse("[" + (0..<records).map { #"{"Id":"\#(n)-\#($0)"}"# }.joined(separator: ",") + "]")
        let group = RecordGroup(soupName: "s", idFieldName: "Id", modificationDateFieldName: "m", records: doc.root.elements)
        return DownPage(owner: [doc], groups: [group], totalSize: nil, next: n + 1 < total ? String(n + 1) : nil)
    }

    private func pageNumber(_ page: DownPage) -> Int {
        guard let id = page.groups.first?.records.first?["Id"]?.string, let dash = id.firstIndex(of: "-") else { return -1 }
        return Int(id[..<dash]) ?? -1
    }

    func testASlowWriterTakesSeveralPagesAtOnceInOrderAndNoneIsLost() throws {
        let total = 40
        let feed = PageFeed(first: try page(0, of: total, records: 10), ahead: true, maxQueued: 4, cancel: CancelFlag()) { [self] previous in
            try page(Int(previous.next ?? "") ?? -1, of: total, records: 10)
        }
        defer { feed.close() }
        var seen: [Int] = []
        var largest = 0
        while true {
            let pages = try feed.take(maxRecords: 30)
            if pages.isEmpty { break }
            XCTAssertLessThanOrEqual(pages.reduce(0) { $0 + $1.recordCount }, 30)
            largest = max(largest, pages.count)
            seen += pages.map(pageNumber)
            usleep(10_000) // a writer slower than the fetches
        }
        XCTAssertEqual(seen, Array(0..<total))
        XCTAssertGreaterThan(largest, 1, "a slow writer takes the pages that are ready at once")
    }

    func testAPageLargerThanTheLimitIsStillTakenWhole() throws {
        let feed = PageFeed(first: try page(0, of: 3, records: 50), ahead: true, cancel: CancelFlag()) { [self] previous in
            try page(Int(previous.next ?? "") ?? -1, of: 3, records: 50)
        }
        defer { feed.close() }
        var counts: [Int] = []
        while case let pages = try feed.take(maxRecords: 20), !pages.isEmpty { counts.append(pages.count) }
        XCTAssertEqual(counts, [1, 1, 1])
    }

    func testAFetchFailureArrivesAfterThePagesBeforeIt() throws {
        let feed = PageFeed(first: try page(0, of: 10, records: 1), ahead: true, cancel: CancelFlag()) { [self] previous in
            let n = Int(previous.next ?? "") ?? -1
            if n == 3 { throw StoreError(.network, "page 3 failed") }
            return try page(n, of: 10, records: 1)
        }
        defer { feed.close() }
        var seen: [Int] = []
        XCTAssertThrowsError(try { while true { seen += try feed.take(maxRecords: 100).map(pageNumber) } }()) { error in
            XCTAssertEqual((error as? StoreError)?.message, "page 3 failed")
        }
        XCTAssertEqual(seen, [0, 1, 2])
    }

    func testClosingEarlyStopsTheFetchThreadAndCancelsItsFetch() throws {
        let cancel = CancelFlag()
        let fetches = FetchCounter()
        let feed = PageFeed(first: try page(0, of: 1000, records: 1), ahead: true, maxQueued: 2, cancel: cancel) { [self] previous in
            fetches.add()
            return try page(Int(previous.next ?? "") ?? -1, of: 1000, records: 1)
        }
        XCTAssertEqual(try feed.take(maxRecords: 1).count, 1)
        usleep(20_000)
        feed.close()
        let after = fetches.value
        XCTAssertLessThanOrEqual(after, 4, "the fetch thread runs at most maxQueued pages ahead")
        XCTAssertTrue(cancel.isCancelled, "closing a feed that was still fetching cancels the run's fetch")
        usleep(20_000)
        XCTAssertEqual(fetches.value, after, "no fetch after close")
    }

    func testAFeedThatEndsNormallyLeavesTheRunUncancelled() throws {
        let cancel = CancelFlag()
        let feed = PageFeed(first: try page(0, of: 3, records: 1), ahead: true, cancel: cancel) { [self] previous in
            try page(Int(previous.next ?? "") ?? -1, of: 3, records: 1)
        }
        var pages = 0
        while case let taken = try feed.take(maxRecords: 1), !taken.isEmpty { pages += taken.count }
        feed.close()
        XCTAssertEqual(pages, 3)
        XCTAssertFalse(cancel.isCancelled)
    }

    func testInlineFeedsFetchOnTheCallersThread() throws {
        let caller = pthread_self()
        let feed = PageFeed(first: try page(0, of: 3, records: 1), ahead: false, cancel: CancelFlag()) { [self] previous in
            XCTAssertNotEqual(pthread_equal(pthread_self(), caller), 0, "an inline fetch runs on the caller's thread")
            return try page(Int(previous.next ?? "") ?? -1, of: 3, records: 1)
        }
        var seen: [Int] = []
        while case let pages = try feed.take(maxRecords: 100), !pages.isEmpty {
            XCTAssertEqual(pages.count, 1)
            seen += pages.map(pageNumber)
        }
        XCTAssertEqual(seen, [0, 1, 2])
    }
}

private final class FetchCounter: @unchecked Sendable {
    private var count = 0
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    func add() { pthread_mutex_lock(&mutex); count += 1; pthread_mutex_unlock(&mutex) }
    var value: Int { pthread_mutex_lock(&mutex); defer { pthread_mutex_unlock(&mutex) }; return count }
}
