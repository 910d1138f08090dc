// Listeners during a sync (the C header's "Listeners"): a sync down of many pages is told per
// commit at most, never per record; its notices name the sync; a query listener over the soup
// ends with the whole result.
import Foundation
import XCTest
@testable import SyncStoreCore
@testable import SyncStoreSync

private final class Told: @unchecked Sendable {
    private let lock = Lock()
    private var notices: [[String: Any]] = []
    func take(_ text: String) {
        let notice = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        lock.withLock { notices.append(notice) }
    }
    var all: [[String: Any]] { lock.withLock { notices } }
}

final class SyncListenerTests: StoreTestCase {
    func testASyncDownIsToldPerCommitWithItsIdAndName() throws {
        let records = 6000
        let server = try DevServerProcess(["--seed", "Contact=\(records)"])
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"}]"#)
        let listeners = try ChangeListeners.of(store)
        defer { try? listeners.handleClosing(0, last: true) }
        let soup = Told(), query = Told()
        _ = try listeners.add(store: store, soup: "contacts", owner: 0) { soup.take($0) }
        _ = try listeners.addQuery(store: store, specJSON: #"{"soupName":"contacts","queryType":"range","indexPath":"LastName","pageSize":5}"#,
                                   owner: 0) { query.take($0) }
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact","maxBatchSize":500}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "people", callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 120_000).status, .done)
        func inserted() -> Int {
            soup.all.flatMap { $0["soups"] as? [[String: Any]] ?? [] }
                .map { (($0["inserted"] as? [String: Any])?["count"] as? Int) ?? 0 }.reduce(0, +)
        }
        for _ in 0..<500 where inserted() < records { usleep(10_000) }
        XCTAssertEqual(inserted(), records)
        let notices = soup.all
        // 12 pages of 500, stored one or several pages a transaction: at most one notice each.
        XCTAssertLessThanOrEqual(notices.count, records / 500)
        XCTAssertGreaterThanOrEqual(notices.count, 1)
        for notice in notices {
            let origin = notice["origin"] as? [String: Any]
            XCTAssertEqual(origin?["kind"] as? String, "sync")
            XCTAssertEqual((origin?["syncId"] as? NSNumber)?.int64Value, id)
            XCTAssertEqual(origin?["syncName"] as? String, "people")
        }
        for _ in 0..<500 where (query.all.last?["totalEntries"] as? Int) != records { usleep(10_000) }
        XCTAssertEqual(query.all.last?["totalEntries"] as? Int, records)
        XCTAssertEqual((query.all.last?["currentPageOrderedEntries"] as? [Any])?.count, 5)
        XCTAssertEqual(query.all.map { (($0["added"] as? [String: Any])?["count"] as? Int) ?? 0 }.reduce(0, +), records)
    }
}
