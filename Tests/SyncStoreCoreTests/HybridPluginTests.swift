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

    func testOptionsAreChecked() {
        XCTAssertThrowsError(try HybridPlugin(root: root, optionsJSON: #"{"remote": {"instanceUrl": 1}}"#))
        XCTAssertThrowsError(try HybridPlugin(root: root, optionsJSON: #"{"remotes": {}}"#))
        XCTAssertThrowsError(try HybridPlugin(root: "", optionsJSON: nil))
    }
}
