// The hybrid plugins' dispatcher (docs/hybrid-plugin.md) at the core's level: how it reads the
// args cordova.exec gets, that every call answers exactly once, and the plugins' query-spec
// dialect. The whole action table runs from every host through Tests/plugin/cases.json.
import XCTest
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

final class HybridPluginTests: StoreTestCase {
    /// Runs one call, collecting every answer it makes (there must be one).
    private func exec(_ plugin: HybridPlugin, _ service: String, _ action: String, _ args: String,
                      file: StaticString = #filePath, line: UInt = #line) -> (Int32, String?) {
        final class Answers: @unchecked Sendable { var list: [(Int32, String?)] = [] }
        let answers = Answers()
        plugin.exec(service: service, action: action, argsJSON: args) { status, json in answers.list.append((status, json)) }
        XCTAssertEqual(answers.list.count, 1, "\(action) must answer exactly once", file: file, line: line)
        return answers.list.first ?? (-1, nil)
    }

    private let smartstore = HybridPlugin.smartStoreService

    func testTheVersionMarkerAndTheStoreConfigAreRead() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        defer { try? plugin.close() }
        let registered = exec(plugin, smartstore, "pgRegisterSoup",
                              #"["pluginSDKVersion:13.0.2", {"soupName": "a", "indexes": [{"path": "k", "type": "string"}], "storeName": "named", "isGlobalStore": true}]"#)
        XCTAssertEqual(registered.0, 0)
        XCTAssertEqual(registered.1, #""a""#)
        // The same soup name in another store does not exist: the storeConfig chose the store.
        XCTAssertEqual(exec(plugin, smartstore, "pgSoupExists", #"[{"soupName": "a"}]"#).1, "false")
        XCTAssertEqual(exec(plugin, smartstore, "pgSoupExists", #"[{"soupName": "a", "storeName": "named", "isGlobalStore": true}]"#).1, "true")
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(root)/global/named.db"))
    }

    /// Where the platforms' plugins have nothing to say, JS receives "OK" (iOS's messageAsString:@"OK",
    /// cordova-android's success()); the store removals answer true on both.
    func testNoActionSucceedsWithoutAValue() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        defer { try? plugin.close() }
        let soup = #"[{"soupName": "a", "indexes": [{"path": "k", "type": "string"}]}]"#
        let calls: [(String, String, String, String)] = [
            (smartstore, "pgRegisterSoup", soup, #""a""#),
            (smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "x"}, {"k": "y"}]}]"#, ""),
            (smartstore, "pgRemoveFromSoup", #"[{"soupName": "a", "entryIds": [1]}]"#, #""OK""#),
            (smartstore, "pgClearSoup", #"[{"soupName": "a"}]"#, #""OK""#),
            (smartstore, "pgRemoveSoup", #"[{"soupName": "a"}]"#, #""OK""#),
            (smartstore, "pgRemoveStore", #"[{"storeName": "other"}]"#, "true"),
            (smartstore, "pgRemoveAllStores", "[{}]", "true"),
            (smartstore, "pgRemoveAllGlobalStores", "[{}]", "true"),
            (HybridPlugin.mobileSyncService, "deleteSync", #"[{"syncName": "nothing"}]"#, #""OK""#),
            (HybridPlugin.sdkInfoService, "registerAppFeature", #"[{"feature": "SJ"}]"#, #""OK""#),
            (HybridPlugin.sdkInfoService, "unregisterAppFeature", #"[{"feature": "SJ"}]"#, #""OK""#),
        ]
        for (service, action, args, want) in calls {
            let (status, json) = exec(plugin, service, action, args)
            XCTAssertEqual(status, 0, action)
            XCTAssertNotNil(json, "\(action) answers a value")
            if !want.isEmpty { XCTAssertEqual(json, want, action) }
        }
    }

    func testMalformedCallsAnswerArgumentErrorsAsJSONStrings() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        defer { try? plugin.close() }
        for (args, fragment) in [("[{", "Malformed"), (#"[{"soupName": "a"}, {"soupName": "b"}]"#, "one argument object"),
                                 ("[42]", "JSON object"), (#""text""#, "array"), (#"[{"soupName": 7}]"#, "soupName"),
                                 (#"[{"soupName": "a", "isGlobalStore": "yes"}]"#, "isGlobalStore")] {
            let (status, json) = exec(plugin, smartstore, "pgClearSoup", args)
            XCTAssertEqual(status, ErrorCode.argument.rawValue, args)
            let message = try XCTUnwrap(parseJSON(try XCTUnwrap(json)) as? String, args)
            XCTAssertTrue(message.contains(fragment), "\(args): \(message)")
        }
        XCTAssertEqual(exec(plugin, "com.example", "x", "[]").0, ErrorCode.argument.rawValue)
        // A message with quotes and newlines stays one JSON string.
        let (_, json) = exec(plugin, smartstore, "pgClearSoup", #"[{"soupName": "say \"hi\"\n"}]"#)
        XCTAssertNotNil(try parseJSON(try XCTUnwrap(json)) as? String)
    }

    func testTheQuerySpecDialectOfThePlugins() throws {
        let exact = try JSONDocument.parse(#"{"queryType": "exact", "indexPath": "k", "matchKey": null}"#)
        XCTAssertThrowsError(try QuerySpec.parse(exact.root))
        XCTAssertTrue(try QuerySpec.parse(exact.root, dialect: .plugin).nullMatchKeyMatchesNothing)
        let untyped = try JSONDocument.parse(#"{"indexPath": "k"}"#)
        XCTAssertEqual(try QuerySpec.parse(untyped.root).queryType, .range)
        XCTAssertThrowsError(try QuerySpec.parse(untyped.root, dialect: .plugin)) { error in
            XCTAssertTrue((error as? StoreError)?.message.contains("queryType") ?? false)
        }
        // Through the plugin, a null matchKey finds nothing even where an entry's value is null.
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        defer { try? plugin.close() }
        _ = exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "s", "indexes": [{"path": "k", "type": "string"}]}]"#)
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "s", "entries": [{"k": null}, {"other": 1}]}]"#).0, 0)
        let (status, cursor) = exec(plugin, smartstore, "pgQuerySoup",
                                    #"[{"soupName": "s", "querySpec": {"queryType": "exact", "indexPath": "k", "matchKey": null, "pageSize": 10}}]"#)
        XCTAssertEqual(status, 0)
        let object = try XCTUnwrap(parseJSON(try XCTUnwrap(cursor)) as? [String: Any])
        XCTAssertEqual(object["totalEntries"] as? Int, 0)
    }

    func testAFreedPluginRefusesCallsAndClosesItsStores() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        XCTAssertEqual(exec(plugin, smartstore, "pgGetDatabaseSize", "[{}]").0, 0)
        try plugin.close()
        XCTAssertEqual(exec(plugin, smartstore, "pgGetDatabaseSize", "[{}]").0, ErrorCode.state.rawValue)
        XCTAssertThrowsError(try plugin.close())
        // Its store is closed: it can be removed.
        try StoreRegistry.shared.removeStore(root: root, config: try StoreConfig())
    }

    func testEntryActionsLeaveTheSyncLockToOtherProcesses() throws {
        // With a default remote, opening a store for entries must not build its sync engine: the
        // engine holds the store's sync lock, which an app syncing from another process needs.
        let plugin = try HybridPlugin(root: root, optionsJSON: #"{"remote": {"instanceUrl": "http://127.0.0.1:1", "accessToken": "t"}}"#)
        defer { try? plugin.close() }
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "s", "indexes": [{"path": "Id", "type": "string"}]}]"#).0, 0)
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "s", "entries": [{"Id": "1"}]}]"#).0, 0)
        // Another open file description's flock stands for the other process.
        let fd = open("\(root)/user/smartstore.db-sync.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX | LOCK_NB), 0, "the plugin took the sync lock for entry actions")
        // Its syncs wait for the other process, as the header says.
        let down = #"[{"soupName": "s", "target": {"type": "soql", "query": "SELECT Id, LastModifiedDate FROM Contact"}, "options": {}}]"#
        XCTAssertEqual(exec(plugin, HybridPlugin.mobileSyncService, "syncDown", down).0, ErrorCode.busy.rawValue)
        _ = flock(fd, LOCK_UN)
    }

    func testSyncActionsAnswerTheStateAsRequestedHoweverFastTheRunEnds() throws {
        // A sync up with nothing dirty ends at once, often before the action could read its
        // state back: the answer is still the requested one, as the plugins give it.
        let plugin = try HybridPlugin(root: root, optionsJSON: #"{"remote": {"instanceUrl": "http://127.0.0.1:1", "accessToken": "t"}}"#)
        defer { try? plugin.close() }
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "s", "indexes": [{"path": "Id", "type": "string"}]}]"#).0, 0)
        let mobilesync = HybridPlugin.mobileSyncService
        func checkRequested(_ answer: (Int32, String?), _ name: String) throws {
            XCTAssertEqual(answer.0, 0, answer.1 ?? "")
            let state = try XCTUnwrap(parseJSON(try XCTUnwrap(answer.1)) as? [String: Any])
            XCTAssertEqual(state["status"] as? String, "RUNNING", "\(name): \(answer.1 ?? "")")
            XCTAssertEqual(state["progress"] as? Int, 0)
            XCTAssertEqual(state["name"] as? String, name)
        }
        let names = (0..<40).map { "up\($0)" }
        for name in names {
            try checkRequested(exec(plugin, mobilesync, "syncUp", #"[{"soupName": "s", "syncName": "\#(name)", "options": {"fieldlist": ["Id"]}}]"#), name)
        }
        // A reSync of a run still going is BUSY: each one is asked once its first run ended.
        for name in names {
            let deadline = Clock.nowMillis() + 20_000
            while Clock.nowMillis() < deadline,
                  let json = exec(plugin, mobilesync, "getSyncStatus", #"[{"syncName": "\#(name)"}]"#).1,
                  (try parseJSON(json) as? [String: Any])?["status"] as? String == "RUNNING" {
                usleep(2_000)
            }
            try checkRequested(exec(plugin, mobilesync, "reSync", #"[{"syncName": "\#(name)"}]"#), name)
        }
    }

    /// The events a plugin fires, as its listener gets them (any thread).
    private final class Events: @unchecked Sendable {
        private let lock = Lock()
        private var list: [(String, [String: Any])] = []
        func add(_ name: String, _ detail: String) {
            let parsed = (try? parseJSON(detail)) as? [String: Any] ?? [:]
            lock.withLock { list.append((name, parsed)) }
        }
        var all: [(String, [String: Any])] { lock.withLock { list } }
        /// The details of the events named `name`, waiting until there are `count` (at most 5 s).
        func wait(_ name: String, count: Int) -> [[String: Any]] {
            let deadline = Clock.nowMillis() + 5_000
            while Clock.nowMillis() < deadline, all.filter({ $0.0 == name }).count < count { usleep(2_000) }
            return all.filter { $0.0 == name }.map { $0.1 }
        }
    }

    /// pgAddSoupListener answers the listener's id; every notice it hears is a "smartstoreChanged"
    /// event (the notice plus listenerId, isGlobalStore and storeName); pgRemoveListener stops it.
    func testSoupListenersFireSmartstoreChangedEvents() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        defer { try? plugin.close() }
        let events = Events()
        try plugin.setListener { name, detail in events.add(name, detail) }
        let named = #""storeName": "notes", "isGlobalStore": true"#
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "a", "indexes": [{"path": "k", "type": "string"}], \#(named)}]"#).0, 0)
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "b", "indexes": [{"path": "k", "type": "string"}], \#(named)}]"#).0, 0)
        let first = exec(plugin, smartstore, "pgAddSoupListener", #"[{"soupName": "a", \#(named)}]"#)
        XCTAssertEqual(first.0, 0)
        XCTAssertEqual(first.1, "1")
        XCTAssertEqual(exec(plugin, smartstore, "pgAddSoupListener", #"[{\#(named)}]"#).1, "2") // every soup
        XCTAssertEqual(exec(plugin, smartstore, "pgAddSoupListener", #"[{"soupName": "missing", \#(named)}]"#).0, ErrorCode.notFound.rawValue)

        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "x"}, {"k": "y"}], \#(named)}]"#).0, 0)
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "b", "entries": [{"k": "z"}], \#(named)}]"#).0, 0)
        // Rolled back (the second entry is not an object): heard by nobody.
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "w"}, 7], \#(named)}]"#).0, ErrorCode.argument.rawValue)
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveFromSoup", #"[{"soupName": "a", "entryIds": [1], \#(named)}]"#).0, 0)
        // 1 hears a's two commits, 2 hears all three (a notice may tell of several: "commits").
        let commits = { (id: Int) in events.all.filter { $0.1["listenerId"] as? Int == id }.reduce(0) { $0 + (($1.1["commits"] as? Int) ?? 0) } }
        let deadline = Clock.nowMillis() + 5_000
        while Clock.nowMillis() < deadline, commits(1) < 2 || commits(2) < 3 { usleep(2_000) }
        XCTAssertEqual(commits(1), 2, "\(events.all)")
        XCTAssertEqual(commits(2), 3)
        let details = events.all.map { $0.1 }
        for detail in details {
            XCTAssertEqual(detail["storeName"] as? String, "notes")
            XCTAssertEqual(detail["isGlobalStore"] as? Bool, true)
            // The plugin's own writes are its handle's.
            XCTAssertEqual((detail["origin"] as? [String: Any])?["kind"] as? String, "handle")
        }
        /// What listener `id` heard of soup `soup`: the ids of `kind` over its notices.
        func ids(_ id: Int, _ soup: String, _ kind: String) -> [Int] {
            details.filter { $0["listenerId"] as? Int == id }
                .flatMap { ($0["soups"] as? [[String: Any]]) ?? [] }
                .filter { $0["soup"] as? String == soup }
                .flatMap { (($0[kind] as? [String: Any])?["ids"] as? [Int]) ?? [] }
        }
        XCTAssertEqual(Set(details.filter { $0["listenerId"] as? Int == 1 }.flatMap { (($0["soups"] as? [[String: Any]]) ?? []).compactMap { $0["soup"] as? String } }), ["a"])
        XCTAssertEqual(ids(1, "a", "inserted"), [1, 2])
        XCTAssertEqual(ids(1, "a", "deleted"), [1])
        XCTAssertEqual(ids(2, "b", "inserted"), [1])
        XCTAssertTrue(events.all.allSatisfy { $0.0 == HybridPlugin.changeEvent })

        // Removed: nothing more of it. An unknown (or removed) id has nothing to do.
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveListener", #"[{"listenerId": 1, \#(named)}]"#).1, #""OK""#)
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveListener", #"[{"listenerId": 1}]"#).1, #""OK""#)
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveListener", #"[{}]"#).0, ErrorCode.argument.rawValue)
        let before = events.all.count
        XCTAssertEqual(exec(plugin, smartstore, "pgClearSoup", #"[{"soupName": "a", \#(named)}]"#).0, 0)
        let after = events.wait(HybridPlugin.changeEvent, count: before + 1)
        XCTAssertEqual(after.count, before + 1)
        XCTAssertEqual(after.last?["listenerId"] as? Int, 2)
        XCTAssertEqual(((after.last?["soups"] as? [[String: Any]])?.first)?["cleared"] as? Bool, true)

        // A removed store takes its listeners with it; a new store of that name has none.
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveStore", #"[{\#(named)}]"#).1, "true")
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "a", "indexes": [{"path": "k", "type": "string"}], \#(named)}]"#).0, 0)
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "x"}], \#(named)}]"#).0, 0)
        usleep(100_000)
        XCTAssertEqual(events.all.count, before + 1)
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveListener", #"[{"listenerId": 2}]"#).1, #""OK""#)
    }

    /// pgAddQueryListener: the result at once (origin "initial"), then each commit that changed
    /// it; Smart SQL text as pgRunSmartQuery takes it; minIntervalMs merges commits.
    func testQueryListenersFireTheResultThenItsChanges() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        defer { try? plugin.close() }
        let events = Events()
        try plugin.setListener { name, detail in events.add(name, detail) }
        func of(_ id: Int, count: Int) -> [[String: Any]] {
            let deadline = Clock.nowMillis() + 5_000
            var found: [[String: Any]] = []
            repeat {
                found = events.all.map { $0.1 }.filter { $0["listenerId"] as? Int == id }
                if found.count >= count { break }
                usleep(2_000)
            } while Clock.nowMillis() < deadline
            return found
        }
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "a", "indexes": [{"path": "k", "type": "string"}]}]"#).0, 0)
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "a"}, {"k": "q"}]}]"#).0, 0)
        let range = #"{"queryType": "range", "indexPath": "k", "beginKey": "a", "endKey": "m", "order": "ascending", "pageSize": 10}"#
        XCTAssertEqual(exec(plugin, smartstore, "pgAddQueryListener", #"[{"soupName": "a", "querySpec": \#(range)}]"#).1, "1")
        let initial = of(1, count: 1)
        XCTAssertEqual((initial.first?["origin"] as? [String: Any])?["kind"] as? String, "initial")
        XCTAssertEqual(initial.first?["totalEntries"] as? Int, 1)
        XCTAssertEqual(initial.first?["storeName"] as? String, "smartstore")
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "z"}]}]"#).0, 0) // outside
        XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "b"}]}]"#).0, 0) // inside
        let changed = of(1, count: 2)
        XCTAssertEqual(changed.count, 2) // the commit outside the range changed nothing of the result
        XCTAssertEqual(changed.last?["totalEntries"] as? Int, 2)
        XCTAssertEqual((changed.last?["added"] as? [String: Any])?["ids"] as? [Int], [4])
        XCTAssertEqual((changed.last?["origin"] as? [String: Any])?["kind"] as? String, "handle")

        // Smart SQL text, as pgRunSmartQuery takes it (no soupName needed).
        XCTAssertEqual(exec(plugin, smartstore, "pgAddQueryListener", #"[{"querySpec": "select count(*) from {a}"}]"#).1, "2")
        XCTAssertEqual(of(2, count: 1).count, 1)
        // Refused: no queryType (the plugins' dialect), no soupName, an unknown soup, a bad interval.
        XCTAssertEqual(exec(plugin, smartstore, "pgAddQueryListener", #"[{"soupName": "a", "querySpec": {"indexPath": "k"}}]"#).0, ErrorCode.argument.rawValue)
        XCTAssertEqual(exec(plugin, smartstore, "pgAddQueryListener", #"[{"querySpec": \#(range)}]"#).0, ErrorCode.argument.rawValue)
        XCTAssertEqual(exec(plugin, smartstore, "pgAddQueryListener", #"[{"soupName": "nothing", "querySpec": \#(range)}]"#).0, ErrorCode.notFound.rawValue)
        XCTAssertEqual(exec(plugin, smartstore, "pgAddSoupListener", #"[{"soupName": "a", "minIntervalMs": -1}]"#).0, ErrorCode.argument.rawValue)

        // minIntervalMs: commits within it come as one notice ("commits" counts them).
        XCTAssertEqual(exec(plugin, smartstore, "pgAddSoupListener", #"[{"soupName": "a", "minIntervalMs": 300}]"#).1, "3")
        for k in ["c", "d", "e"] {
            XCTAssertEqual(exec(plugin, smartstore, "pgUpsertSoupEntries", #"[{"soupName": "a", "entries": [{"k": "\#(k)"}]}]"#).0, 0)
        }
        let deadline = Clock.nowMillis() + 5_000
        var merged: [[String: Any]] = []
        repeat {
            merged = of(3, count: 1)
            if merged.reduce(0, { $0 + (($1["commits"] as? Int) ?? 0) }) >= 3 { break }
            usleep(5_000)
        } while Clock.nowMillis() < deadline
        XCTAssertEqual(merged.reduce(0, { $0 + (($1["commits"] as? Int) ?? 0) }), 3)
        XCTAssertLessThan(merged.count, 3)
        XCTAssertEqual(exec(plugin, smartstore, "pgRemoveListener", #"[{"listenerId": 1}]"#).1, #""OK""#)
    }

    /// Another handle's write is heard as such; a listener goes with the plugin's close.
    func testSoupListenersHearOtherHandlesUntilThePluginCloses() throws {
        let plugin = try HybridPlugin(root: root, optionsJSON: nil)
        let events = Events()
        try plugin.setListener { name, detail in events.add(name, detail) }
        XCTAssertEqual(exec(plugin, smartstore, "pgRegisterSoup", #"[{"soupName": "a", "indexes": [{"path": "k", "type": "string"}]}]"#).0, 0)
        XCTAssertEqual(exec(plugin, smartstore, "pgAddSoupListener", #"[{"soupName": "a"}]"#).1, "1")
        let other = try StoreRegistry.shared.open(root: root, config: try StoreConfig())
        defer { try? StoreRegistry.shared.close(other) }
        _ = try StoreRegistry.shared.store(other).upsert(soup: "a", entriesJSON: #"[{"k": "o"}]"#, owner: other)
        let details = events.wait(HybridPlugin.changeEvent, count: 1)
        XCTAssertEqual(details.count, 1)
        XCTAssertEqual((details.first?["origin"] as? [String: Any])?["kind"] as? String, "otherHandle")
        try plugin.close()
        _ = try StoreRegistry.shared.store(other).upsert(soup: "a", entriesJSON: #"[{"k": "p"}]"#, owner: other)
        usleep(100_000)
        XCTAssertEqual(events.all.count, 1)
    }

    func testOptionsAreChecked() {
        XCTAssertThrowsError(try HybridPlugin(root: root, optionsJSON: #"{"remote": {"instanceUrl": 1}}"#))
        XCTAssertThrowsError(try HybridPlugin(root: root, optionsJSON: #"{"remotes": {}}"#))
        XCTAssertThrowsError(try HybridPlugin(root: "", optionsJSON: nil))
    }
}
