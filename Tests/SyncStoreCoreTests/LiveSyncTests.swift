// Live sync (docs/sync.md#live-sync): the store's syncs run by themselves. Host writes reach the
// server after the debounce; an unreachable server makes the state "offline" with a retry time,
// and the writes made meanwhile go up once it answers; stop ends it with "stopped".
import Foundation
import XCTest
@testable import SyncStoreCore
@testable import SyncStoreSync
import SyncStoreSupport

private typealias Events = HeardEvents

extension HeardEvents {
    var states: [String] { all.filter { $0["event"] as? String == "state" }.compactMap { $0["state"] as? String } }
}

final class LiveSyncTests: StoreTestCase {
    private func setUpSyncs(_ server: DevServerProcess) throws -> SyncManager {
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"},{"path":"__local__","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        _ = try manager.createSyncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up")
        _ = try manager.createSyncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact"}"#, soupName: "contacts",
                                       optionsJSON: nil, name: "down")
        return manager
    }

    private func dirtyCount(_ store: SmartStore) throws -> Int {
        let page = try store.queryPage(soup: "contacts", specJSON: #"{"queryType":"exact","indexPath":"__local__","matchKey":"true","pageSize":1000}"#, page: 0)
        return (try parseJSON(page.string) as? [Any])?.count ?? -1
    }

    func testHostWritesArePushedAfterTheDebounceAndStopEndsIt() throws {
        let server = try DevServerProcess(["--seed", "Contact=5"])
        let manager = try setUpSyncs(server)
        let store = try self.store
        let events = Events()
        try manager.live.start(try LiveSync.Options.parse(#"{"debounceMs":100}"#), owner: 0) { events.take($0) }
        XCTAssertTrue(events.wait { events.states.contains("live") }, "\(events.states)")
        XCTAssertEqual(events.states.first, "connecting")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact"), 5)
        XCTAssertEqual(try soupCount(store, "contacts"), 5, "catching up ran the sync down")
        XCTAssertThrowsError(try manager.live.start(LiveSync.Options(), owner: 0, callback: nil)) {
            XCTAssertEqual(($0 as? StoreError)?.code, .state)
        }

        let started = Clock.monotonicMillis()
        for i in 0..<3 {
            _ = try store.upsert(soup: "contacts", entriesJSON: #"{"attributes":{"type":"Contact"},"LastName":"Live\#(i)","__local__":true,"__locally_created__":true}"#)
        }
        XCTAssertTrue(events.wait { ((try? self.server(server, "SELECT Id FROM Contact WHERE LastName LIKE 'Live%'")) ?? 0) == 3 })
        let reached = Clock.monotonicMillis() - started
        XCTAssertTrue(events.wait { ((try? self.dirtyCount(store)) ?? -1) == 0 })
        // The three writes came within the debounce: one run of the sync up pushed them.
        func upsDone() -> Int {
            events.all.filter { ($0["sync"] as? [String: Any])?["type"] as? String == "syncUp" && ($0["sync"] as? [String: Any])?["status"] as? String == "DONE" }.count
        }
        XCTAssertTrue(events.wait { upsDone() >= 2 })
        usleep(300_000)
        XCTAssertEqual(upsDone(), 2, "one when catching up, one for the writes")
        XCTAssertLessThan(reached, 10_000)

        manager.live.stop()
        XCTAssertEqual(events.states.last, "stopped")
        _ = try store.upsert(soup: "contacts", entriesJSON: #"{"attributes":{"type":"Contact"},"LastName":"After","__local__":true,"__locally_created__":true}"#)
        usleep(500_000)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'After'"), 0, "nothing runs once stopped")
        XCTAssertEqual(try parseJSON(manager.live.stateJSON) as? [String: Any] == nil, false)
    }

    func testAnUnreachableServerIsOfflineWithARetryTimeThenTheWritesGoUp() throws {
        let server = try DevServerProcess(["--seed", "Contact=2"])
        let manager = try setUpSyncs(server)
        let store = try self.store
        // Nothing listens on port 9 of 127.0.0.1.
        manager.setRemote(RemoteConfig(instanceURL: "http://127.0.0.1:9", accessToken: DevServerProcess.token))
        let events = Events()
        try manager.live.start(try LiveSync.Options.parse(#"{"debounceMs":50,"retryMinMs":200,"retryMaxMs":400}"#), owner: 0) { events.take($0) }
        XCTAssertTrue(events.wait { events.states.contains("offline") }, "\(events.states)")
        let offline = events.all.first { $0["state"] as? String == "offline" }
        let retryAt = (offline?["nextRetryAt"] as? NSNumber)?.int64Value ?? 0
        XCTAssertGreaterThan(retryAt, Clock.nowMillis() - 1000)
        XCTAssertNotNil(offline?["error"] as? String)
        _ = try store.upsert(soup: "contacts", entriesJSON: #"{"attributes":{"type":"Contact"},"LastName":"Offline","__local__":true,"__locally_created__":true}"#)
        // Back: the next retry catches up and pushes the write made while offline.
        manager.setRemote(server.remote)
        XCTAssertTrue(events.wait { ((try? self.server(server, "SELECT Id FROM Contact WHERE LastName = 'Offline'")) ?? 0) == 1 })
        XCTAssertTrue(events.wait { events.states.last == "live" }, "\(events.states)")
        XCTAssertTrue(events.states.contains("catchingUp"))
        XCTAssertEqual(try soupCount(store, "contacts"), 3)
        // Retries were spaced (backoff), not a storm.
        XCTAssertLessThan(events.states.filter { $0 == "offline" }.count, 30)
        manager.live.stop()
    }

    func testAnotherProcessesWriteIsPushedToo() throws {
        let server = try DevServerProcess(["--seed", "Contact=1"])
        let manager = try setUpSyncs(server)
        let events = Events()
        try manager.live.start(try LiveSync.Options.parse(#"{"debounceMs":50}"#), owner: 0) { events.take($0) }
        XCTAssertTrue(events.wait { events.states.contains("live") })
        // A second store object on the file writes as another process would.
        let other = try SmartStore(path: dbPath)
        _ = try other.upsert(soup: "contacts", entriesJSON: #"{"attributes":{"type":"Contact"},"LastName":"Elsewhere","__local__":true,"__locally_created__":true}"#)
        XCTAssertTrue(events.wait { ((try? self.server(server, "SELECT Id FROM Contact WHERE LastName = 'Elsewhere'")) ?? 0) == 1 })
        manager.live.stop()
        XCTAssertThrowsError(try LiveSync.Options.parse(#"{"debounce":10}"#)) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
    }

    func testBadOptionsAndUnknownSyncsAreRefused() throws {
        let server = try DevServerProcess([])
        let manager = try setUpSyncs(server)
        for bad in [#"{"debounceMs":-1}"#, #"{"syncs":"up"}"#, "[1]", "nope"] {
            XCTAssertThrowsError(try LiveSync.Options.parse(bad), bad) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
        }
        XCTAssertThrowsError(try manager.live.start(try LiveSync.Options.parse(#"{"syncs":["missing"]}"#), owner: 0, callback: nil)) {
            XCTAssertEqual(($0 as? StoreError)?.code, .notFound)
        }
        XCTAssertTrue(try manager.live.stateJSON.contains("\"stopped\""))
        manager.live.stop() // off: no-op
    }

    private func server(_ server: DevServerProcess, _ soql: String) throws -> Int { try server.count(soql) }

    private func soupCount(_ store: SmartStore, _ soup: String) throws -> Int {
        let page = try store.queryPage(soup: soup, specJSON: #"{"queryType":"smart","pageSize":1,"smartSql":"select count(*) from {\#(soup)}"}"#, page: 0)
        return ((try parseJSON(page.string) as? [[Any]])?.first?.first as? Int) ?? -1
    }
}
