// Sync engine tests (docs/sync.md): the pure pieces (SOQL rewriting, timestamps, remote and
// option parsing, state round trip) and runs against a real syncstore-devserver process.
import XCTest
import Foundation
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

final class SoqlRewriterTests: XCTestCase {
    // docs/sync.md#incremental-sync: Id and LastModifiedDate added, ORDER BY added when missing
    func testAddsIdModificationDateAndOrder() throws {
        let q = try SoqlRewriter("SELECT Name FROM Account").syncQuery(idField: "Id", modificationField: "LastModifiedDate", since: nil)
        XCTAssertEqual(q, "SELECT Name, Id, LastModifiedDate FROM Account ORDER BY LastModifiedDate")
    }

    func testKeepsExistingFieldsAndOrderCaseInsensitively() throws {
        let q = try SoqlRewriter("select id, lastmodifieddate, Name from Account order by Name limit 10")
            .syncQuery(idField: "Id", modificationField: "LastModifiedDate", since: nil)
        XCTAssertEqual(q, "SELECT id, lastmodifieddate, Name from Account order by Name limit 10")
    }

    // docs/sync.md#incremental-sync: the timestamp filter is parenthesized so OR keeps its meaning
    func testTimestampFilterParenthesizesOr() throws {
        let q = try SoqlRewriter("SELECT Id FROM Contact WHERE FirstName = 'a' OR LastName = 'b' LIMIT 5")
            .syncQuery(idField: "Id", modificationField: "LastModifiedDate", since: 0)
        XCTAssertEqual(q, "SELECT Id, LastModifiedDate FROM Contact WHERE (LastModifiedDate >= 1970-01-01T00:00:00.000Z) AND (FirstName = 'a' OR LastName = 'b') ORDER BY LastModifiedDate LIMIT 5")
    }

    func testKeywordsInsideStringsAndSubqueriesAreIgnored() throws {
        let r = try SoqlRewriter("SELECT Name, (SELECT Id FROM Contacts WHERE Title = 'x') FROM Account WHERE Name = 'ORDER BY where'")
        XCTAssertEqual(r.fields, ["Name", "(SELECT Id FROM Contacts WHERE Title = 'x')"])
        XCTAssertEqual(r.idQuery(idField: "Id"), "SELECT Id FROM Account WHERE Name = 'ORDER BY where'")
    }

    func testRejectsWhatIsNotASelect() {
        XCTAssertThrowsError(try SoqlRewriter("DELETE FROM Account"))
        XCTAssertThrowsError(try SoqlRewriter("SELECT Id FROM Account WHERE (Name = 'x'"))
    }
}

final class TimestampTests: XCTestCase {
    func testParsesSalesforceForms() {
        XCTAssertEqual(Timestamp.parse("2015-01-21T23:51:33.000+0000"), 1_421_884_293_000)
        XCTAssertEqual(Timestamp.parse("2015-01-21T23:51:33.123Z"), 1_421_884_293_123)
        XCTAssertEqual(Timestamp.parse("2015-01-22T01:51:33.000+02:00"), 1_421_884_293_000)
        XCTAssertEqual(Timestamp.parse("1969-12-31T23:59:59.999Z"), -1)
        XCTAssertNil(Timestamp.parse("2015-13-01T00:00:00Z"))
        XCTAssertNil(Timestamp.parse("yesterday"))
        XCTAssertNil(Timestamp.parse("2015-01-21T23:51:33.000+0000 trailing"))
    }

    func testFormatRoundTrips() {
        for ms: Int64 in [0, 1_421_884_293_123, -1, 4_102_444_800_000] {
            XCTAssertEqual(Timestamp.parse(Timestamp.format(ms)), ms)
        }
        XCTAssertEqual(Timestamp.format(1_421_884_293_123), "2015-01-21T23:51:33.123Z")
    }
}

final class SyncConfigTests: XCTestCase {
    func testRemoteConfig() throws {
        let c = try RemoteConfig.parse(#"{"instanceUrl":"https://127.0.0.1:8443/","accessToken":"t","apiVersion":"61.0","verifyTls":false,"maxAttempts":2}"#)
        XCTAssertEqual(c.instanceURL, "https://127.0.0.1:8443")
        XCTAssertEqual(c.apiVersion, "v61.0")
        XCTAssertFalse(c.http.verifyTLS)
        XCTAssertEqual(c.maxAttempts, 2)
        XCTAssertEqual(c.effectiveTokenURL, "https://127.0.0.1:8443/services/oauth2/token")
        for bad in [#"{"accessToken":"t"}"#, #"{"instanceUrl":"ftp://x","accessToken":"t"}"#,
                    #"{"instanceUrl":"http://x","accessToken":"t","apiVersion":"latest"}"#,
                    #"{"instanceUrl":"http://x","accessToken":"t","maxAttempts":99}"#, "[]", "{",
                    // Found by the remote_config fuzz target: an empty part, or digits of other scripts,
                    // went into every request URL.
                    #"{"instanceUrl":"http://x","accessToken":"t","apiVersion":"v1..2"}"#,
                    #"{"instanceUrl":"http://x","accessToken":"t","apiVersion":".62.0"}"#,
                    #"{"instanceUrl":"http://x","accessToken":"t","apiVersion":"v62.٣"}"#,
                    #"{"instanceUrl":"https://","accessToken":"t"}"#, #"{"instanceUrl":"http:///x","accessToken":"t"}"#] {
            XCTAssertThrowsError(try RemoteConfig.parse(bad), bad) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
        }
    }

    // docs/sync.md#options: options default to OVERWRITE; unknown merge modes are refused
    func testOptions() throws {
        XCTAssertEqual(try SyncOptions.parse(nil).0.mergeMode, .overwrite)
        let (options, _) = try SyncOptions.parse(#"{"mergeMode":"LEAVE_IF_CHANGED","fieldlist":["Name"]}"#)
        XCTAssertEqual(options.mergeMode, .leaveIfChanged)
        XCTAssertEqual(options.fieldlist, ["Name"])
        XCTAssertThrowsError(try SyncOptions.parse(#"{"mergeMode":"MERGE"}"#))
        XCTAssertThrowsError(try SyncOptions.parse(#"{"fieldlist":"Name"}"#))
    }

    func testSyncUpFieldsSkipLocalAndServerFields() throws {
        let target = try SyncUpTarget.parsed(nil)
        let doc = try JSONDocument.parse(#"{"attributes":{"type":"Contact"},"Id":"003","LastName":"X","Title":null,"LastModifiedDate":"d","SystemModstamp":"d","__local__":true,"_soupEntryId":3,"Account":{"Name":"A"}}"#)
        XCTAssertEqual(target.fields(of: doc.root, creating: true, options: SyncOptions()).map(\.0), ["LastName"])
        let listed = try SyncUpTarget.parsed(#"{"createFieldlist":["LastName","Title","Id"]}"#)
        XCTAssertEqual(listed.fields(of: doc.root, creating: true, options: SyncOptions()).map(\.0), ["LastName"])
        XCTAssertThrowsError(try SyncUpTarget.parsed(#"{"type":"nope"}"#))
    }
}

/// Collects a run's callbacks.
final class StateLog: @unchecked Sendable {
    private let lock = NSLock()
    private var states: [[String: Any]] = []

    var callback: SyncCallback {
        { [self] text in
            guard let state = try? parseJSON(text) as? [String: Any] else { return }
            lock.lock()
            states.append(state)
            lock.unlock()
        }
    }

    var all: [[String: Any]] { lock.lock(); defer { lock.unlock() }; return states }
    var statuses: [String] { all.compactMap { $0["status"] as? String } }
}

final class SyncRunTests: StoreTestCase {
    func soupCount(_ store: SmartStore, _ soup: String, _ condition: String = "1 = 1") throws -> Int {
        let cursor = try parseJSON(try store.runSmartQuery(specJSON: #"{"queryType":"smart","pageSize":1,"smartSql":"select count(*) from {\#(soup)} where \#(condition)"}"#).string) as? [String: Any]
        return ((cursor?["currentPageOrderedEntries"] as? [[Any]])?.first?.first as? Int) ?? -1
    }

    // usersyncs.json created its syncs one by one: a document whose second sync was refused left
    // the first created (the store changed by a refused call). Now it is all or nothing.
    func testSyncConfigIsAllOrNothing() throws {
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        let manager = try store.syncManager()
        let good = #"{"syncName":"first","syncType":"syncDown","soupName":"contacts","target":{"type":"soql","query":"SELECT Id FROM Contact"}}"#
        for bad in [#"{"syncName":"second","syncType":"syncDown","soupName":"nope","target":{"type":"soql","query":"SELECT Id FROM Contact"}}"#,
                    #"{"syncName":"second","syncType":"syncUp","soupName":"contacts","target":{"type":"parent_children","parent":{"sobjectType":"Account"}}}"#,
                    #"{"syncName":"second","syncType":"sideways","soupName":"contacts"}"#] {
            XCTAssertThrowsError(try manager.loadSyncConfig(json: #"{"syncs":[\#(good),\#(bad)]}"#)) { error in
                XCTAssertTrue("\(error)".contains("'second'"), "\(error)")
            }
            XCTAssertNil(try manager.status(name: "first"), "a refused config created its first sync")
        }
        try manager.loadSyncConfig(json: #"{"syncs":[\#(good),\#(good)]}"#)
        XCTAssertNotNil(try manager.status(name: "first"))
        try manager.loadSyncConfig(json: #"{"syncs":[\#(good)]}"#) // existing names are skipped
    }

    // A parent_children sync up target was stored unchecked and failed only when run; every
    // other target is refused when the sync is created.
    func testParentChildrenSyncUpTargetIsCheckedAtCreation() throws {
        let store = try self.store
        try store.registerSoup("accounts", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        try store.registerSoup("kids", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        let manager = try store.syncManager()
        let valid = #"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"kids","parentIdFieldName":"AccountId"}}"#
        XCTAssertNoThrow(try manager.createSyncUp(targetJSON: valid, soupName: "accounts", optionsJSON: nil, name: "pc"))
        for (target, code) in [(#"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"}}"#, ErrorCode.argument),
                               (#"{"type":"parent_children","parent":{"soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"kids","parentIdFieldName":"AccountId"}}"#, .argument),
                               (#"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"kids"}}"#, .argument),
                               (#"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"missing","parentIdFieldName":"AccountId"}}"#, .notFound)] {
            XCTAssertThrowsError(try manager.createSyncUp(targetJSON: target, soupName: "accounts", optionsJSON: nil, name: nil), target) { error in
                XCTAssertEqual((error as? StoreError)?.code, code, "\(error)")
            }
        }
    }

    // docs/sync.md: a soql sync down lands every record, reports every state, ends DONE once
    func testSyncDownAndIncrementalReSync() throws {
        let server = try DevServerProcess(["--seed", "Contact=1200"])
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let log = StateLog()
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact","maxBatchSize":500}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "down", callback: log.callback)
        let state = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(state.status, .done, state.error)
        XCTAssertEqual(state.totalSize, 1200)
        XCTAssertEqual(log.statuses.first, "RUNNING")
        XCTAssertEqual(log.statuses.filter { $0 != "RUNNING" }, ["DONE"])
        XCTAssertEqual(log.all.compactMap { $0["progress"] as? Int }, log.all.compactMap { $0["progress"] as? Int }.sorted())
        XCTAssertEqual(try soupCount(store, "contacts"), 1200)

        // Only changed records come down again.
        let first = try server.call("GET", "query?q=SELECT+Id+FROM+Contact+LIMIT+1") as? [String: Any]
        let changedId = ((first?["records"] as? [[String: Any]])?.first?["Id"] as? String) ?? ""
        _ = try server.call("PATCH", "sobjects/Contact/\(changedId)", body: #"{"LastName":"Renamed"}"#)
        try manager.reSync(name: "down", callback: nil)
        let again = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertLessThan(again.totalSize, 10)
        XCTAssertEqual(try soupCount(store, "contacts", "{contacts:LastName} = 'Renamed'"), 1)
        XCTAssertThrowsError(try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#,
                                                  soupName: "contacts", optionsJSON: nil, name: "down", callback: nil)) {
            XCTAssertEqual(($0 as? StoreError)?.code, .exists)
        }
    }

    // docs/smartstore.md, docs/sync.md#sync-down: records stored from the page text (sync down's fast path) get the
    // same index values as the tree path computes: reIndexSoup recomputes every column from the
    // stored JSON and must change nothing. Covers every index type, a relationship path, a
    // boolean in a string column, flags the sync adds (__local__, __sync_id__) and null parents.
    func testScannedPagesIndexLikeTheTreePath() throws {
        let server = try DevServerProcess(["--seed", "Account=20,Contact=700"])
        let store = try self.store
        let paths = ["Id", "LastName", "Email", "HasOptedOutOfEmail", "Account.Name", "Account.NumberOfEmployees",
                     "Birthdate", "__local__", "__sync_id__", "MailingCity"]
        let types = ["string", "full_text", "json1", "string", "string", "floating", "string", "string", "integer", "integer"]
        let specs = zip(paths, types).map { #"{"path":"\#($0)","type":"\#($1)"}"# }.joined(separator: ",")
        try store.registerSoup("contacts", specsJSON: "[\(specs)]")
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let soql = "SELECT LastName, Email, HasOptedOutOfEmail, Account.Name, Account.NumberOfEmployees, Birthdate, MailingCity FROM Contact"
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"\#(soql)","maxBatchSize":200}"#,
                                      soupName: "contacts", optionsJSON: nil, name: nil, callback: nil)
        let state = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(state.status, .done, state.error)
        XCTAssertEqual(try soupCount(store, "contacts"), 700)
        XCTAssertEqual(try soupCount(store, "contacts", "{contacts:__local__} = 'false' and {contacts:__sync_id__} = \(id)"), 700)
        XCTAssertGreaterThan(try soupCount(store, "contacts", "{contacts:Account.Name} is not null"), 0)
        XCTAssertGreaterThan(try soupCount(store, "contacts", "{contacts:HasOptedOutOfEmail} in ('true', 'false')"), 0)

        let info = try store.requireSoup("contacts")
        func rows() throws -> [String] {
            try store.readers.withReader { db in
                var out: [String] = []
                for sql in ["SELECT * FROM \(info.table) ORDER BY id", "SELECT rowid, * FROM \(info.ftsTable) ORDER BY rowid"] {
                    let statement = try db.prepare(sql)
                    while try statement.step() {
                        out.append((0..<statement.columnCount).map { "\(statement.value($0))" }.joined(separator: "|"))
                    }
                }
                return out
            }
        }
        let synced = try rows()
        XCTAssertEqual(synced.count, 1400)
        try store.reIndexSoup("contacts", paths: paths)
        let reindexed = try rows()
        XCTAssertEqual(synced.count, reindexed.count)
        for (a, b) in zip(synced, reindexed) where a != b {
            XCTFail("sync down stored \(a)\nre-indexing gives \(b)")
            break
        }
    }

    // docs/sync.md#sync-up: creates get server ids, updates and deletes reach the server, flags clear
    func testSyncUpBatch() throws {
        let server = try DevServerProcess([])
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        var entries: [String] = []
        for i in 0..<450 { entries.append(#"{"attributes":{"type":"Contact"},"LastName":"Up\#(i)","__local__":true,"__locally_created__":true}"#) }
        _ = try store.upsert(soup: "contacts", entriesJSON: "[" + entries.joined(separator: ",") + "]")
        let id = try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: nil, callback: nil)
        let state = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(state.status, .done, state.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Up%'"), 450)
        XCTAssertEqual(try soupCount(store, "contacts", "json_extract({contacts:_soup}, '$.__local__') = 0"), 450)
        XCTAssertEqual(try soupCount(store, "contacts", "{contacts:Id} like '003%'"), 450)
    }

    // docs/sync.md#sync-state: a run without a remote fails cleanly; a sync id that does not exist is NOT_FOUND
    func testErrorsWithoutRemoteAndUnknownSync() throws {
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        let manager = try store.syncManager()
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#, soupName: "contacts",
                                      optionsJSON: nil, name: nil, callback: nil)
        let state = try manager.wait(id: id, timeoutMs: 10_000)
        XCTAssertEqual(state.status, .failed)
        XCTAssertEqual(state.errorCode, ErrorCode.state.rawValue)
        XCTAssertThrowsError(try manager.reSync(id: 9999, callback: nil)) { XCTAssertEqual(($0 as? StoreError)?.code, .notFound) }
        XCTAssertThrowsError(try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#, soupName: "nosoup",
                                                  optionsJSON: nil, name: nil, callback: nil))
        try store.registerSoup("unindexed", specsJSON: #"[{"path":"Name","type":"string"}]"#)
        XCTAssertThrowsError(try manager.createSyncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#, soupName: "unindexed",
                                                        optionsJSON: nil, name: nil)) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
    }

    // docs/sync.md#runs: a state left RUNNING by a crash is STOPPED when the store opens again
    func testRunningBecomesStoppedOnOpen() throws {
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        var state = try store.syncManager().createSyncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#,
                                                           soupName: "contacts", optionsJSON: nil, name: "crashy")
        state.status = .running
        try store.syncManager().states.save(state)
        store.syncManager_forTestsClose()
        let reopened = try reopenStore()
        XCTAssertEqual(try reopened.syncManager().status(name: "crashy")?.status, .stopped)
    }
}

extension SmartStore {
    /// Ends the sync worker and drops the manager, as closing the last handle does.
    func syncManager_forTestsClose() { closeCompanions(owner: 0, last: true) }
}
