// docs/sync.md#ghosts — cleanResyncGhosts deletes this sync's clean entries whose records the
// server no longer lists, keeps dirty ones and entries of other origins, and leaves no scratch
// file behind (plaintext and encrypted stores alike).
import Glibc
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

final class GhostTests: StoreTestCase {
    private func count(_ store: SmartStore, _ condition: String = "1 = 1") throws -> Int {
        let cursor = try parseJSON(try store.runSmartQuery(specJSON: #"{"queryType":"smart","pageSize":1,"smartSql":"select count(*) from {contacts} where \#(condition)"}"#).string) as? [String: Any]
        return ((cursor?["currentPageOrderedEntries"] as? [[Any]])?.first?.first as? Int) ?? -1
    }

    /// Runs cleanResyncGhosts and waits for its terminal report.
    private func clean(_ manager: SyncManager, id: Int64) throws -> [String: Any] {
        let report = ReportBox()
        try manager.cleanResyncGhosts(id: id, callback: { json in
            if let r = (try? parseJSON(json)) as? [String: Any], r["status"] as? String != "RUNNING" { report.set(r) }
        })
        for _ in 0..<600 {
            if let r = report.value { return r }
            usleep(50_000)
        }
        XCTFail("cleanResyncGhosts did not end")
        return [:]
    }

    /// Beside the ghosts to be: a local edit of `deleted[0]` (a dirty ghost) and an entry this
    /// sync did not write.
    private func editLocally(_ store: SmartStore, _ deleted: [String]) throws {
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"Id":"local-1","LastName":"Mine","__local__":true,"__locally_created__":true}]"#)
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"Id":"\#(deleted[0])","LastName":"Edited","__local__":true,"__locally_updated__":true}]"#,
                             externalIdPath: "Id")
    }

    /// After a clean: the dirty ghost and the other entry are kept, `deleted[1]` is gone.
    private func checkKept(_ store: SmartStore, _ deleted: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try count(store, "{contacts:LastName} = 'Edited'"), 1, "a dirty ghost is kept", file: file, line: line)
        XCTAssertEqual(try count(store, "{contacts:Id} = 'local-1'"), 1, "an entry this sync did not write is kept", file: file, line: line)
        XCTAssertEqual(try count(store, "{contacts:Id} = '\(deleted[1])'"), 0, file: file, line: line)
    }

    private func ghostsAreCleaned(key: StoreKey?) throws {
        let server = try DevServerProcess(["--seed", "Contact=2500"])
        let store = try SmartStore(path: dbPath, key: key)
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id, LastName FROM Contact","maxBatchSize":500}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "down", callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        XCTAssertEqual(try count(store), 2500)

        // An entry created here (not this sync's) and, for one record the server will delete, a local edit.
        let page = try server.call("GET", "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+700") as? [String: Any]
        let deleted = ((page?["records"] as? [[String: Any]]) ?? []).compactMap { $0["Id"] as? String }
        XCTAssertEqual(deleted.count, 700)
        try editLocally(store, deleted)
        for remoteId in deleted { _ = try server.call("DELETE", "sobjects/Contact/\(remoteId)") }

        let report = try clean(manager, id: id)
        XCTAssertEqual(report["status"] as? String, "DONE", "\(report)")
        XCTAssertEqual(report["removed"] as? Int, 699, "\(report)")
        XCTAssertEqual(try count(store), 2500 - 699 + 1)
        try checkKept(store, deleted)
        XCTAssertNotEqual(access(dbPath + "-ghosts", F_OK), 0, "the scratch database is removed")

        // Nothing more to clean: a second run removes nothing.
        XCTAssertEqual(try clean(manager, id: id)["removed"] as? Int, 0)
        // The cleaning left no transaction open: a change of key (which leaves WAL mode) works.
        try store.changeKey(to: key == nil ? try StoreKey("new key", kdfIter: 1000) : nil)
        XCTAssertEqual(try count(store), 2500 - 699 + 1)
    }

    func testGhostsAreCleanedInAPlaintextStore() throws { try ghostsAreCleaned(key: nil) }

    func testGhostsAreCleanedInAnEncryptedStore() throws { try ghostsAreCleaned(key: try StoreKey("ghost key", kdfIter: 1000)) }

    // A sync of every record of one object: after a first cleaning (a full comparison, which sets
    // the sync's mark), a cleaning asks the server only which records were deleted since the mark
    // (here every query is refused, so a full comparison would fail). A dirty ghost and entries of
    // other origins stay; a mark older than the server keeps deleted records, and a query with
    // a WHERE clause, go back to the full comparison.
    func testCleaningsAfterTheFirstAskOnlyForTheRecordsDeletedSince() throws {
        let server = try DevServerProcess(["--seed", "Contact=300", "--admin"])
        let store = try SmartStore(path: dbPath)
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"}]"#)
        let manager = try store.syncManager()
        var remote = server.remote
        remote.maxAttempts = 1
        manager.setRemote(remote)
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id, LastName FROM Contact"}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "all", callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        let faults = RestClient(config: server.remote)
        func refuseQueries(_ on: Bool) throws {
            _ = try faults.send(on ? "PUT" : "DELETE", "/__devserver/faults", body: on ? Array("GET */query* status=500".utf8) : nil)
        }
        func deleteOnServer(_ n: Int) throws -> [String] {
            try refuseQueries(false)
            let page = try server.call("GET", "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+\(n)") as? [String: Any]
            let ids = ((page?["records"] as? [[String: Any]]) ?? []).compactMap { $0["Id"] as? String }
            for remoteId in ids { _ = try server.call("DELETE", "sobjects/Contact/\(remoteId)") }
            return ids
        }

        try refuseQueries(true)
        XCTAssertEqual(try clean(manager, id: id)["status"] as? String, "FAILED", "the first cleaning compares every id")
        try refuseQueries(false)
        XCTAssertEqual(try clean(manager, id: id)["removed"] as? Int, 0)

        let deleted = try deleteOnServer(5)
        try editLocally(store, deleted)
        try refuseQueries(true)
        var report = try clean(manager, id: id)
        XCTAssertEqual(report["status"] as? String, "DONE", "\(report)")
        XCTAssertEqual(report["removed"] as? Int, 4, "\(report)")
        XCTAssertEqual(try count(store), 300 - 4 + 1)
        try checkKept(store, deleted)

        _ = try deleteOnServer(3)
        try refuseQueries(true)
        report = try clean(manager, id: id)
        XCTAssertEqual(report["removed"] as? Int, 3, "the mark moved on: only the new deletions \(report)")
        XCTAssertEqual(try count(store), 300 - 7 + 1)

        // A mark older than 15 days: the server no longer holds the window, every id is compared.
        try store.write { db in try db.execute("UPDATE sync_ghost_marks SET serverTime = serverTime - 16 * 86400000") }
        XCTAssertEqual(try clean(manager, id: id)["status"] as? String, "FAILED")
        try refuseQueries(false)
        XCTAssertEqual(try clean(manager, id: id)["status"] as? String, "DONE")

        // A query with a WHERE clause: a record can leave it by an edit, so every id is compared.
        let filtered = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id, LastName FROM Contact WHERE LastName != null"}"#,
                                            soupName: "contacts", optionsJSON: nil, name: "filtered", callback: nil)
        XCTAssertEqual(try manager.wait(id: filtered, timeoutMs: 60_000).status, .done)
        XCTAssertEqual(try clean(manager, id: filtered)["status"] as? String, "DONE")
        try refuseQueries(true)
        XCTAssertEqual(try clean(manager, id: filtered)["status"] as? String, "FAILED")

        // Deleting a sync forgets its mark.
        try manager.delete(id: id)
        XCTAssertEqual(try store.readers.withReader { db in try db.scalarInt("SELECT count(*) FROM sync_ghost_marks WHERE syncId = ?", [.int(id)]) }, 0)
    }

    // A crash can leave the scratch database behind: the next cleaning replaces it, and whatever
    // ids it held count for nothing.
    func testAScratchLeftByACrashIsReplaced() throws {
        let server = try DevServerProcess(["--seed", "Contact=300"])
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "down", callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        let page = try server.call("GET", "query?q=SELECT+Id+FROM+Contact+LIMIT+10") as? [String: Any]
        let gone = ((page?["records"] as? [[String: Any]]) ?? []).compactMap { $0["Id"] as? String }
        for remoteId in gone { _ = try server.call("DELETE", "sobjects/Contact/\(remoteId)") }
        // A stale scratch naming every deleted id as still on the server.
        do {
            let stale = try SmartStore(path: dbPath + "-ghosts")
            try stale.registerSoup("remote_ids", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        }

        XCTAssertEqual(try clean(manager, id: id)["removed"] as? Int, 10)
        XCTAssertEqual(try count(store), 290)
        XCTAssertNotEqual(access(dbPath + "-ghosts", F_OK), 0)
    }

    // A cleaning stopped while the ids come in (pages queued for the scratch's inserting
    // thread) ends STOPPED, deletes nothing and leaves no scratch behind.
    func testAStoppedCleaningDeletesNothing() throws {
        let server = try DevServerProcess(["--seed", "Contact=3000", "--admin"])
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact","maxBatchSize":200}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "down", callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        let page = try server.call("GET", "query?q=SELECT+Id+FROM+Contact+LIMIT+10") as? [String: Any]
        for remoteId in ((page?["records"] as? [[String: Any]]) ?? []).compactMap({ $0["Id"] as? String }) {
            _ = try server.call("DELETE", "sobjects/Contact/\(remoteId)")
        }
        // Pages of 200 ids (the batch size header), each slow after the first few.
        try server.setFaults("GET */query* latency=150 after=3")
        let report = ReportBox()
        try manager.cleanResyncGhosts(id: id, callback: { json in
            if let r = (try? parseJSON(json)) as? [String: Any], r["status"] as? String != "RUNNING" { report.set(r) }
        })
        usleep(700_000)
        manager.stop()
        for _ in 0..<600 where report.value == nil { usleep(50_000) }
        XCTAssertEqual(report.value?["status"] as? String, "STOPPED", "\(report.value ?? [:])")
        XCTAssertEqual(try count(store), 3000, "a stopped cleaning deleted entries")
        XCTAssertNotEqual(access(dbPath + "-ghosts", F_OK), 0, "the scratch database is removed")
    }
}

private final class ReportBox: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var report: [String: Any]?
    init() { pthread_mutex_init(&mutex, nil) }
    func set(_ r: [String: Any]) { pthread_mutex_lock(&mutex); report = r; pthread_mutex_unlock(&mutex) }
    var value: [String: Any]? { pthread_mutex_lock(&mutex); defer { pthread_mutex_unlock(&mutex) }; return report }
}
