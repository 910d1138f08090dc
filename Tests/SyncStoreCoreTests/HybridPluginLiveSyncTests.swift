// Live sync through the hybrid plugins (docs/hybrid-plugin.md, "Live sync"): startLiveSync /
// stopLiveSync / getLiveSyncState on com.salesforce.mobilesync, each state a "liveSync" event
// naming its store, each state of the runs it starts an ordinary "sync" event; a new remote
// reaches a live sync at once; the plugin's close of the store stops it.
import XCTest
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

final class HybridPluginLiveSyncTests: StoreTestCase {
    private let smartstore = HybridPlugin.smartStoreService
    private let mobilesync = HybridPlugin.mobileSyncService

    /// Runs one call, checking it answers exactly once.
    private func exec(_ plugin: HybridPlugin, _ service: String, _ action: String, _ args: String,
                      file: StaticString = #filePath, line: UInt = #line) -> (Int32, String?) {
        final class Answers: @unchecked Sendable { var list: [(Int32, String?)] = [] }
        let answers = Answers()
        plugin.exec(service: service, action: action, argsJSON: args) { status, json in answers.list.append((status, json)) }
        XCTAssertEqual(answers.list.count, 1, "\(action) must answer exactly once", file: file, line: line)
        return answers.list.first ?? (-1, nil)
    }

    private func object(_ answer: (Int32, String?), file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        XCTAssertEqual(answer.0, 0, answer.1 ?? "", file: file, line: line)
        return ((try? parseJSON(answer.1 ?? "")) as? [String: Any]) ?? [:]
    }

    /// The plugin's events as its listener gets them (any thread).
    private final class Events: @unchecked Sendable {
        private let lock = Lock()
        private var list: [(String, [String: Any])] = []
        func add(_ name: String, _ detail: String) {
            let parsed = (try? parseJSON(detail)) as? [String: Any] ?? [:]
            lock.withLock { list.append((name, parsed)) }
        }
        var all: [(String, [String: Any])] { lock.withLock { list } }
        var live: [[String: Any]] { all.filter { $0.0 == HybridPlugin.liveSyncEvent }.map(\.1) }
        var states: [String] { live.compactMap { $0["state"] as? String } }
        var syncs: [[String: Any]] { all.filter { $0.0 == "sync" }.map(\.1) }

        func wait(_ seconds: Double = 20, _ done: () -> Bool) -> Bool { waitUntil(seconds, done) }
    }

    private func remoteJSON(_ url: String) -> String {
        #"{"instanceUrl": "\#(url)", "accessToken": "\#(DevServerProcess.token)"}"#
    }

    /// A soup and two named syncs of the store `named` (a sync up "up", a sync down "down"), made
    /// through the plugin; their first runs end before this returns.
    private func setUpSyncs(_ plugin: HybridPlugin, _ events: Events, _ named: String) {
        let indexes = #"[{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}, {"path": "__local__", "type": "string"}]"#
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "contacts", "indexes": \#(indexes), \#(named)}]"#).0, 0)
        let up = object(exec(plugin, mobilesync, "syncUp", #"[{"soupName": "contacts", "syncName": "up", "options": {"fieldlist": ["LastName"]}, \#(named)}]"#))
        let down = object(exec(plugin, mobilesync, "syncDown",
                               #"[{"soupName": "contacts", "syncName": "down", "target": {"type": "soql", "query": "SELECT LastName FROM Contact"}, "options": {"mergeMode": "OVERWRITE"}, \#(named)}]"#))
        for id in [up["_soupEntryId"] as? Int, down["_soupEntryId"] as? Int] {
            XCTAssertTrue(events.wait { events.syncs.contains { $0["_soupEntryId"] as? Int == id && ["DONE", "FAILED"].contains($0["status"] as? String ?? "") } })
        }
    }

    func testLiveSyncActionsFireLiveSyncAndSyncEvents() throws {
        let server = try DevServerProcess(["--seed", "Contact=3"])
        let plugin = try HybridPlugin(root: root, optionsJSON: #"{"remote": \#(remoteJSON(server.url))}"#)
        defer { try? plugin.close() }
        let events = Events()
        try plugin.setListener { name, detail in events.add(name, detail) }
        let named = #""storeName": "crm", "isGlobalStore": false"#

        // Off: getLiveSyncState answers "stopped"; stopLiveSync has nothing to do.
        XCTAssertEqual(object(exec(plugin, mobilesync, "getLiveSyncState", #"[{\#(named)}]"#))["state"] as? String, "stopped")
        XCTAssertEqual(exec(plugin, mobilesync, "stopLiveSync", #"[{\#(named)}]"#).1, #""OK""#)
        // No named sync yet: nothing to run.
        XCTAssertEqual(exec(plugin, mobilesync, "startLiveSync", #"[{\#(named)}]"#).0, ErrorCode.argument.rawValue)
        setUpSyncs(plugin, events, named)
        let before = events.syncs.count

        // Refused: bad options, an unknown sync.
        XCTAssertEqual(exec(plugin, mobilesync, "startLiveSync", #"[{"options": {"debounceMs": -1}, \#(named)}]"#).0, ErrorCode.argument.rawValue)
        XCTAssertEqual(exec(plugin, mobilesync, "startLiveSync", #"[{"options": "fast", \#(named)}]"#).0, ErrorCode.argument.rawValue)
        XCTAssertEqual(exec(plugin, mobilesync, "startLiveSync", #"[{"options": {"syncs": ["nothing"]}, \#(named)}]"#).0, ErrorCode.notFound.rawValue)

        let started = object(exec(plugin, mobilesync, "startLiveSync", #"["pluginSDKVersion:13.0.2", {"options": {"syncs": ["up", "down"], "debounceMs": 100}, \#(named)}]"#))
        XCTAssertEqual(started["event"] as? String, "state")
        XCTAssertNotEqual(started["state"] as? String, "stopped")
        XCTAssertEqual(started["storeName"] as? String, "crm")
        XCTAssertEqual(started["isGlobalStore"] as? Bool, false)
        XCTAssertEqual((started["syncs"] as? [Int])?.count, 2)
        XCTAssertEqual(exec(plugin, mobilesync, "startLiveSync", #"[{\#(named)}]"#).0, ErrorCode.state.rawValue, "one live sync per store")
        XCTAssertTrue(events.wait { events.states.contains("live") }, "\(events.states)")
        XCTAssertEqual(events.states.first, "connecting")
        for detail in events.live {
            XCTAssertEqual(detail["storeName"] as? String, "crm")
            XCTAssertEqual(detail["isGlobalStore"] as? Bool, false)
            XCTAssertEqual(detail["event"] as? String, "state")
        }
        XCTAssertEqual(object(exec(plugin, mobilesync, "getLiveSyncState", #"[{\#(named)}]"#))["state"] as? String, "live")

        // A write through the plugin reaches the server after the debounce, by a run whose states
        // are ordinary "sync" events of the store.
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries",
                            #"[{"soupName": "contacts", "entries": [{"attributes": {"type": "Contact"}, "LastName": "Live", "__local__": true, "__locally_created__": true}], \#(named)}]"#).0, 0)
        XCTAssertTrue(events.wait { ((try? server.count("SELECT Id FROM Contact WHERE LastName = 'Live'")) ?? 0) == 1 })
        XCTAssertTrue(events.wait {
            events.syncs.dropFirst(before).contains { $0["type"] as? String == "syncUp" && $0["status"] as? String == "DONE" && $0["name"] as? String == "up" }
        })
        for detail in events.syncs.dropFirst(before) {
            XCTAssertEqual(detail["storeName"] as? String, "crm")
            XCTAssertNotNil(detail["_soupEntryId"] as? Int)
        }

        XCTAssertEqual(exec(plugin, mobilesync, "stopLiveSync", #"[{\#(named)}]"#).1, #""OK""#)
        XCTAssertEqual(events.states.last, "stopped", "stopLiveSync answers once the last event fired")
        XCTAssertEqual(object(exec(plugin, mobilesync, "getLiveSyncState", #"[{\#(named)}]"#))["state"] as? String, "stopped")
        // Again after a stop.
        XCTAssertNotEqual(object(exec(plugin, mobilesync, "startLiveSync", #"[{\#(named)}]"#))["state"] as? String, "stopped")
        XCTAssertEqual(exec(plugin, mobilesync, "stopLiveSync", #"[{\#(named)}]"#).0, 0)
    }

    /// An unreachable remote makes it "offline" with the time of the next attempt; a new remote
    /// (the plugin's setRemote) reaches the running live sync, which comes back "live" and pushes
    /// the write made meanwhile.
    func testANewRemoteBringsAnOfflineLiveSyncBack() throws {
        let server = try DevServerProcess(["--seed", "Contact=2"])
        let plugin = try HybridPlugin(root: root, optionsJSON: #"{"remote": \#(remoteJSON(server.url))}"#)
        defer { try? plugin.close() }
        let events = Events()
        try plugin.setListener { name, detail in events.add(name, detail) }
        setUpSyncs(plugin, events, #""isGlobalStore": true"#)
        // Nothing listens on port 9 of 127.0.0.1.
        try plugin.setRemote(storeJSON: nil, remoteJSON: remoteJSON("http://127.0.0.1:9"))
        _ = object(exec(plugin, mobilesync, "startLiveSync", #"[{"options": {"debounceMs": 50, "retryMinMs": 200, "retryMaxMs": 400}, "isGlobalStore": true}]"#))
        XCTAssertTrue(events.wait { events.states.contains("offline") }, "\(events.states)")
        let offline = try XCTUnwrap(events.live.first { $0["state"] as? String == "offline" })
        XCTAssertGreaterThan((offline["nextRetryAt"] as? Int) ?? 0, Int(Clock.nowMillis()) - 1000)
        XCTAssertNotNil(offline["error"] as? String)
        XCTAssertEqual(offline["isGlobalStore"] as? Bool, true)
        XCTAssertEqual(offline["storeName"] as? String, "smartstore")

        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries",
                            #"[{"soupName": "contacts", "entries": [{"attributes": {"type": "Contact"}, "LastName": "Offline", "__local__": true, "__locally_created__": true}], "isGlobalStore": true}]"#).0, 0)
        try plugin.setRemote(storeJSON: #"{"storeName": "smartstore", "isGlobalStore": true}"#, remoteJSON: remoteJSON(server.url))
        XCTAssertTrue(events.wait { ((try? server.count("SELECT Id FROM Contact WHERE LastName = 'Offline'")) ?? 0) == 1 })
        XCTAssertTrue(events.wait { events.states.last == "live" }, "\(events.states)")
        XCTAssertTrue(events.states.contains("catchingUp"))
    }

    /// Live sync belongs to the plugin's handle of the store: removing the store, or freeing the
    /// plugin, stops it (its last event "stopped").
    func testThePluginsCloseOfTheStoreStopsIt() throws {
        let server = try DevServerProcess(["--seed", "Contact=2"])
        let plugin = try HybridPlugin(root: root, optionsJSON: #"{"remote": \#(remoteJSON(server.url))}"#)
        let events = Events()
        try plugin.setListener { name, detail in events.add(name, detail) }
        setUpSyncs(plugin, events, #""storeName": "a""#)
        setUpSyncs(plugin, events, #""storeName": "b""#)
        _ = object(exec(plugin, mobilesync, "startLiveSync", #"[{"storeName": "a"}]"#))
        _ = object(exec(plugin, mobilesync, "startLiveSync", #"[{"storeName": "b"}]"#))
        func states(_ store: String) -> [String] {
            events.live.filter { $0["storeName"] as? String == store }.compactMap { $0["state"] as? String }
        }
        XCTAssertTrue(events.wait { states("a").contains("live") && states("b").contains("live") }, "\(events.states)")

        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveStore", #"[{"storeName": "a"}]"#).1, "true")
        XCTAssertEqual(states("a").last, "stopped")
        XCTAssertEqual(states("b").last, "live")
        try plugin.close()
        XCTAssertEqual(states("b").last, "stopped")
        let count = events.all.count
        usleep(300_000)
        XCTAssertEqual(events.all.count, count, "nothing after the close")
    }
}
