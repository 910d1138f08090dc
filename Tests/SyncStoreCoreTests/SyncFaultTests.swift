// Sync under faults (docs/sync.md): each test reproduces one way a sync broke a promise of the
// header (a duplicate, a lost edit, a lost record, a run that never ends) against a real
// syncstore-devserver process with injected faults, and checks it no longer does.
import XCTest
import Foundation
import Glibc
import CJansson
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

final class SyncFaultTests: StoreTestCase {
    let contactSpecs = #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"},{"path":"__local__","type":"string"}]"#

    func manager(_ server: DevServerProcess, soup: String = "contacts") throws -> SyncManager {
        let store = try self.store
        if !store.soupExists(soup) { try store.registerSoup(soup, specsJSON: contactSpecs) }
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        return manager
    }

    func run(_ manager: SyncManager, _ start: () throws -> Int64) throws -> SyncState {
        try manager.wait(id: try start(), timeoutMs: 120_000)
    }

    /// Syncs every Contact's LastName down into `soup` and checks the run ended DONE.
    @discardableResult
    func syncDownContacts(_ manager: SyncManager, soup: String = "contacts", name: String? = nil,
                          file: StaticString = #filePath, line: UInt = #line) throws -> SyncState {
        let down = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact"}"#, soupName: soup, optionsJSON: nil, name: name, callback: nil)
        }
        XCTAssertEqual(down.status, .done, down.error, file: file, line: line)
        return down
    }

    func entries(_ soup: String, _ condition: String = "1 = 1") throws -> [[String: Any]] {
        let spec = try jsonText(["queryType": "smart", "pageSize": 100_000,
                                 "smartSql": "select {\(soup):_soup} from {\(soup)} where \(condition) order by {\(soup):_soupEntryId}"] as [String: Any])
        let page = try CursorPage(try self.store.runSmartQuery(specJSON: spec))
        return page.items.compactMap { ($0 as? [Any])?.first as? [String: Any] }
    }

    func createLocally(_ names: [String], soup: String = "contacts") throws {
        let list = names.map { #"{"attributes":{"type":"Contact"},"LastName":"\#($0)","__local__":true,"__locally_created__":true}"# }
        _ = try store.upsert(soup: soup, entriesJSON: "[" + list.joined(separator: ",") + "]")
    }

    /// Makes the REST client's pooled connection a kept-alive one: the next request reuses it.
    func warmConnection(_ manager: SyncManager, soup: String) throws {
        let state = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact WHERE LastName = 'none'"}"#,
                                 soupName: soup, optionsJSON: nil, name: nil, callback: nil)
        }
        XCTAssertEqual(state.status, .done, state.error)
    }

    // Failure 1: the server commits a POST and drops the kept-alive connection unanswered;
    // libcurl must not send it again on a new connection. The run fails (network); the next
    // run adopts the record the first request made: one record on the server.
    func testTransportNeverResendsACommittedWrite() throws {
        for (mode, route) in [("collection", "/services/data/*/composite/sobjects"), ("single", "/services/data/*/sobjects/Contact")] {
            let server = try DevServerProcess(["--faults", "POST \(route) drop=after times=1"])
            let soup = "contacts_\(mode)"
            let manager = try self.manager(server, soup: soup)
            try warmConnection(manager, soup: soup)
            try createLocally(["Once-\(mode)"], soup: soup)
            let target = #"{"type":"\#(mode)"}"#
            let first = try run(manager) { try manager.syncUp(targetJSON: target, soupName: soup, optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up-\(mode)", callback: nil) }
            XCTAssertEqual(first.status, .failed, "\(mode): the answer was lost, so the run cannot know the outcome")
            XCTAssertEqual(first.errorCode, ErrorCode.network.rawValue, first.error)
            XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Once-\(mode)'"), 1, "\(mode): the transport sent the create twice")
            let second = try run(manager) { try manager.reSync(name: "up-\(mode)", callback: nil) }
            XCTAssertEqual(second.status, .done, second.error)
            XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Once-\(mode)'"), 1, "\(mode): the retry created a duplicate")
            let local = try entries(soup)
            XCTAssertEqual(local.count, 1)
            XCTAssertEqual((local.first?["Id"] as? String)?.prefix(3), "003")
            XCTAssertEqual(local.first?["__local__"] as? Bool, false)
            XCTAssertNil(local.first?[LocalFlags.pendingCreate])
        }
    }

    // A create whose answer was lost, edited locally before the retry: the retry adopts the
    // record the first attempt made (it holds what was sent) and pushes the edit to it.
    func testLostCreateEditedBeforeTheRetryIsAdoptedAndUpdated() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        try createLocally(["Before"])
        let first = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(first.status, .failed)
        guard var entry = try entries("contacts").first else { throw TestFailure("no entry") }
        entry["LastName"] = "After"
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
        let second = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(second.status, .done, second.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('Before', 'After')"), 1, "the edited entry was created a second time")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'After'"), 1, "the edit did not reach the record")
        let local = try entries("contacts")
        XCTAssertEqual(local.count, 1)
        XCTAssertEqual(local.first?["__local__"] as? Bool, false)
        XCTAssertTrue((local.first?["Id"] as? String ?? "").hasPrefix("003"))
    }

    // A create whose answer was lost, then a sync down before any retry: the record comes down
    // into the entry that created it, not as a second entry; the next sync up creates nothing.
    func testSyncDownAfterALostCreateKeepsOneEntry() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        try createLocally(["Once"])
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .failed)
        try syncDownContacts(manager)
        let local = try entries("contacts")
        XCTAssertEqual(local.count, 1, "the record came down as a second entry: \(local)")
        XCTAssertEqual(local.first?["__local__"] as? Bool, false)
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Once'"), 1)
    }

    // The same after a sync down that found no create in flight (so later sync downs skip the
    // scan for lost creates): the sync up's creates are looked for again.
    func testLostCreateAfterACleanSyncDownKeepsOneEntry() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        _ = try syncDownContacts(manager)
        _ = try syncDownContacts(manager)
        try createLocally(["Once"])
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .failed)
        _ = try syncDownContacts(manager)
        let local = try entries("contacts")
        XCTAssertEqual(local.filter { $0["LastName"] as? String == "Once" }.count, 1, "the record came down as a second entry: \(local)")
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Once'"), 1)
    }

    // The server's clock set back between the last answer the client saw and a create whose
    // answer is lost: the mark's server time (estimated from that answer) is after the
    // record's CreatedDate, so the search must also start from the client time converted with
    // today's offset, or the retry creates the record a second time.
    func testLostCreateIsFoundAfterTheServerClockWasSetBack() throws {
        let server = try DevServerProcess(["--admin"])
        let manager = try self.manager(server)
        var remote = server.remote
        remote.createSettleMs = 500
        manager.setRemote(remote)
        _ = try syncDownContacts(manager) // the client now knows the server's clock
        let clock = try RestClient(config: server.remote).send("PUT", "/__devserver/clock", body: Array("-600".utf8))
        XCTAssertTrue(clock.isSuccess || clock.status == 204, clock.text)
        try server.setFaults("POST /services/data/*/composite/sobjects drop=after times=1")
        try createLocally(["Backwards"])
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .failed)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Backwards'"), 1, "the first attempt was not committed: the test did not set up the case")
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Backwards'"), 1, "created twice")
    }

    // Whether a soup holds creates in flight is kept in the store file, not in one store
    // object: a marked entry written through another object (as another process would) makes
    // the next sync down scan again and adopt the record, instead of bringing it down as a
    // second entry.
    func testMarkedEntryWrittenElsewhereIsAdoptedBySyncDown() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        try createLocally(["Elsewhere"])
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .failed)
        guard var marked = try entries("contacts").first, marked[LocalFlags.pendingCreate] != nil else {
            throw TestFailure("the create was not marked as sent")
        }
        let entryId = marked.removeValue(forKey: "_soupEntryId") as? Int ?? 0
        try store.removeEntries(soup: "contacts", ids: [Int64(entryId)])
        // A sync down that brings nothing scans the soup, finds it clean and records that.
        try warmConnection(manager, soup: "contacts")
        XCTAssertTrue(CreateMarkLedger.isKnownClean(try store, soup: "contacts"))
        let other = try SmartStore(path: dbPath)
        XCTAssertTrue(CreateMarkLedger.isKnownClean(other, soup: "contacts"), "a new store object reads what the file knows")
        _ = try other.upsert(soup: "contacts", entriesJSON: try jsonText([marked]))
        XCTAssertFalse(CreateMarkLedger.isKnownClean(try store, soup: "contacts"))
        _ = try syncDownContacts(manager)
        let local = try entries("contacts")
        XCTAssertEqual(local.filter { $0["LastName"] as? String == "Elsewhere" }.count, 1, "the record came down as a second entry: \(local)")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Elsewhere'"), 1)
        // A sync up makes every soup unknown again before it marks anything.
        try warmConnection(manager, soup: "contacts")
        XCTAssertTrue(CreateMarkLedger.isKnownClean(try store, soup: "contacts"))
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertFalse(CreateMarkLedger.isKnownClean(try store, soup: "contacts"))
        // A removed soup is forgotten: one registered again under its name starts unknown.
        try warmConnection(manager, soup: "contacts")
        XCTAssertTrue(CreateMarkLedger.isKnownClean(try store, soup: "contacts"))
        try store.removeSoup("contacts")
        try register("contacts", #"[{"path":"Id","type":"string"}]"#)
        XCTAssertFalse(CreateMarkLedger.isKnownClean(try store, soup: "contacts"))
    }

    // A create the server commits only after the client gave up on it (the sync was stopped
    // while the request waited at the server): a sync down that starts before the commit and
    // brings the record must write it into the entry that created it, not into a second entry
    // that the next sync up would not recognise (a host may edit it) and create again.
    func testCreateCommittedAfterAStopComesDownIntoItsEntry() throws {
        // The stop aborts the transfer within about a second (libcurl's progress callback);
        // the commit comes after the adoption query's answer and before the sync down's page.
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects latency=3800; GET /services/data/*/query* latency=2000"])
        let manager = try self.manager(server)
        try createLocally(["Late"])
        let up = try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil)
        usleep(300_000)
        manager.stop()
        XCTAssertEqual(try manager.wait(id: up, timeoutMs: 30_000).status, .stopped)
        XCTAssertNotNil(try entries("contacts").first?[LocalFlags.pendingCreate], "the create was sent")
        try manager.restart(restartStopped: false, callback: nil)
        try syncDownContacts(manager)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Late'"), 1, "the create never reached the server: the test did not set up the race")
        let local = try entries("contacts")
        XCTAssertEqual(local.count, 1, "the record came down as a second entry: \(local)")
        XCTAssertEqual(local.first?["__local__"] as? Bool, false)
        // An edit of the (single) entry goes to the record as an update.
        guard var entry = local.first else { throw TestFailure("no entry") }
        entry["LastName"] = "Later"
        entry["__local__"] = true
        entry["__locally_updated__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('Late', 'Later')"), 1, "created twice")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Later'"), 1)
    }

    // The same late commit met by a sync up: the retry runs while the server still holds the
    // first attempt (the chaos crash test found it after a kill), so the search finds nothing.
    // The retry must wait until the attempt has settled and look again, not create it twice.
    func testRetryWaitsForACreateTheServerStillHolds() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects latency=2500 times=1"])
        let manager = try self.manager(server)
        var remote = server.remote
        remote.createSettleMs = 5_000
        manager.setRemote(remote)
        try createLocally(["Held"])
        let sent = Clock.nowMillis()
        let up = try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil)
        usleep(300_000)
        manager.stop()
        XCTAssertEqual(try manager.wait(id: up, timeoutMs: 30_000).status, .stopped)
        try manager.restart(restartStopped: false, callback: nil)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Held'"), 0, "the server committed before the retry: the test did not set up the race")
        let started = Clock.nowMillis()
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        // Past the server's hold of the first attempt: had it been sent twice, both are in.
        let pastHold = sent + 3_500 - Clock.nowMillis()
        if pastHold > 0 { usleep(UInt32(pastHold * 1000)) }
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Held'"), 1, "created twice")
        XCTAssertEqual(try entries("contacts", "{contacts:__local__} = 'false'").count, 1)
        XCTAssertLessThan(Clock.nowMillis() - started, 10_000, "waited past the settle time")
    }

    // A lost create, edited since: the retry adopts the record and sends the edit as an update.
    // When that update lands but its answer is lost (or the process dies before the outcome is
    // stored), the record no longer holds what the create sent, so it can never be found again:
    // the entry must already name it, or the next run creates it a second time (the chaos crash
    // test found this).
    func testAdoptionIsStoredBeforeTheUpdateIsSent() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1; PATCH /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        var remote = server.remote
        remote.maxAttempts = 1
        remote.createSettleMs = 300
        manager.setRemote(remote)
        try createLocally(["Adopted"])
        let first = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(first.status, .failed, "the create's answer was not lost: the test did not set up the race")
        guard var entry = try entries("contacts").first else { throw TestFailure("no entry") }
        entry["LastName"] = "Adopted edited"
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
        let second = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(second.status, .failed, "the update's answer was not lost: the test did not set up the race")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Adopted edited'"), 1)
        XCTAssertNotNil(try entries("contacts").first?["Id"], "the adoption was not stored before the update was sent")
        let third = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(third.status, .done, third.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('Adopted', 'Adopted edited')"), 1, "created twice")
        XCTAssertEqual(try entries("contacts", "{contacts:__local__} = 'false'").count, 1)
    }

    // A host's read-modify-write that overlaps a sync up: it read the entry before the engine
    // marked it and sent its create, and writes it back (edited) without the mark. The mark
    // must survive, or the retry creates the record a second time.
    func testHostWriteWithoutTheSentMarkKeepsIt() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        try createLocally(["Raced"])
        guard var stale = try entries("contacts").first else { throw TestFailure("no entry") }
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .failed)
        XCTAssertNotNil(try entries("contacts").first?[LocalFlags.pendingCreate])
        stale["LastName"] = "Raced edited"
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([stale]))
        XCTAssertNotNil(try entries("contacts").first?[LocalFlags.pendingCreate], "the host's write dropped the sent mark")
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('Raced', 'Raced edited')"), 1, "created twice")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Raced edited'"), 1)
    }

    // The same race after the create's answer arrived: the host read the entry before (no id,
    // flagged created) and writes it back (edited) after the sync up gave it its id. The edit
    // must go to that record as an update, not create the record a second time.
    func testHostWriteWithoutTheNewIdUpdatesTheRecord() throws {
        let server = try DevServerProcess([])
        let manager = try self.manager(server)
        try createLocally(["Fresh"])
        guard let stale = try entries("contacts").first else { throw TestFailure("no entry") }
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .done, up.error)
        try writeBackEdited(stale, name: "Fresh", manager, server)
    }

    /// Writes a stale copy of the entry back with its LastName edited, as a host's
    /// read-modify-write would: the write must reach the record the create made, as an update.
    private func writeBackEdited(_ stale: [String: Any], name: String, _ manager: SyncManager, _ server: DevServerProcess) throws {
        var stale = stale
        stale["LastName"] = "\(name) edited"
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([stale]))
        let entry = try entries("contacts").first
        XCTAssertNotNil(entry?["Id"], "the host's write erased the id the create got")
        XCTAssertNil(entry?[LocalFlags.pendingCreate], "the stale mark came back")
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('\(name)', '\(name) edited')"), 1, "created twice")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = '\(name) edited'"), 1)
    }

    // The same race with the entry read after the engine marked it (an edit made while the
    // create is at the server): the stale copy carries the mark but not the id. The write must
    // still go to the record as an update; kept as a pending create, it needs the record to
    // still hold what was sent to be found again, and any later change to it made a duplicate.
    func testHostWriteWithTheStaleMarkUpdatesTheRecord() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects latency=1000 times=1"])
        let manager = try self.manager(server)
        try createLocally(["Marked"])
        let up = try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil)
        var stale: [String: Any]? = nil
        for _ in 0..<200 where stale == nil {
            if let entry = try entries("contacts").first, entry[LocalFlags.pendingCreate] != nil { stale = entry } else { usleep(5_000) }
        }
        guard let stale else { throw TestFailure("the entry was never marked") }
        XCTAssertEqual(try manager.wait(id: up, timeoutMs: 30_000).status, .done)
        try writeBackEdited(stale, name: "Marked", manager, server)
    }

    // A lost create deleted locally, then a sync down (LEAVE_IF_CHANGED) before any sync up:
    // the record must not come back as a new, live entry (the user deleted it); the next sync
    // up deletes it on the server.
    func testLocallyDeletedLostCreateIsNotBroughtBackBySyncDown() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects drop=after times=1"])
        let manager = try self.manager(server)
        try createLocally(["Gone"])
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(up.status, .failed)
        guard var entry = try entries("contacts").first else { throw TestFailure("no entry") }
        entry["__locally_deleted__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
        let down = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact"}"#, soupName: "contacts",
                                 optionsJSON: #"{"mergeMode":"LEAVE_IF_CHANGED"}"#, name: nil, callback: nil)
        }
        XCTAssertEqual(down.status, .done, down.error)
        let local = try entries("contacts")
        XCTAssertEqual(local.count, 1, "the deleted record came back as a second entry: \(local)")
        XCTAssertEqual(local.first?["__locally_deleted__"] as? Bool, true)
        let again = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Gone'"), 0, "the delete never reached the server")
        XCTAssertEqual(try entries("contacts").count, 0)
    }

    // Failure 2: parent_children through /composite: a lost answer, then a re-run, must not
    // create the parent and its children twice.
    func testParentChildrenLostAnswerIsAdopted() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite drop=after times=1"])
        let store = try self.store
        try store.registerSoup("accounts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"Name","type":"string"},{"path":"__local__","type":"string"}]"#)
        try store.registerSoup("kids", specsJSON: #"[{"path":"Id","type":"string"},{"path":"AccountId","type":"string"},{"path":"LastName","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        _ = try store.upsert(soup: "accounts", entriesJSON: #"[{"Id":"local_1","Name":"Lost Answer Co","__local__":true,"__locally_created__":true}]"#)
        _ = try store.upsert(soup: "kids", entriesJSON: #"[{"AccountId":"local_1","LastName":"KidA","__local__":true,"__locally_created__":true},{"AccountId":"local_1","LastName":"KidB","__local__":true,"__locally_created__":true}]"#)
        let target = #"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"kids","parentIdFieldName":"AccountId"},"parentCreateFieldlist":["Name"],"childrenCreateFieldlist":["LastName","AccountId"]}"#
        let first = try run(manager) { try manager.syncUp(targetJSON: target, soupName: "accounts", optionsJSON: nil, name: "pc-up", callback: nil) }
        XCTAssertEqual(first.status, .failed)
        XCTAssertEqual(try server.count("SELECT Id FROM Account WHERE Name = 'Lost Answer Co'"), 1)
        let second = try run(manager) { try manager.reSync(name: "pc-up", callback: nil) }
        XCTAssertEqual(second.status, .done, second.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Account WHERE Name = 'Lost Answer Co'"), 1, "the parent was created twice")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('KidA', 'KidB')"), 2, "children were created twice")
        let parent = try entries("accounts").first
        let parentId = parent?["Id"] as? String ?? ""
        XCTAssertTrue(parentId.hasPrefix("001"), parentId)
        XCTAssertEqual(parent?["__local__"] as? Bool, false)
        let kids = try entries("kids")
        XCTAssertEqual(kids.count, 2)
        for kid in kids {
            XCTAssertEqual(kid["AccountId"] as? String, parentId)
            XCTAssertEqual(kid["__local__"] as? Bool, false, "\(kid)")
            XCTAssertTrue((kid["Id"] as? String ?? "").hasPrefix("003"))
        }
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE AccountId = '\(parentId)'"), 2)
    }

    // parent_children sent one subrequest per child, 24 children a composite request (137 s for
    // 100k children at 20 ms latency). Children now go in sObject Collections subrequests: a
    // parent with 40, then 62 dirty children (creates, updates, a delete) is one request each
    // time, and the children the server refuses (a create without the LastName a Contact
    // requires, an update of a record that does not exist) fail alone.
    func testParentChildrenSendsChildrenInCollections() throws {
        let log = root + "/server.log"
        let (server, manager) = try parentChildrenSetup(log: log)
        func kid(_ name: String) throws -> [String: Any]? { try entries("kids").first { $0["LastName"] as? String == name } }
        var kids: [[String: Any]] = (0..<40).map { i -> [String: Any] in ["AccountId": "local_1", "LastName": "Kid-\(i)", "__local__": true, "__locally_created__": true] }
        kids[7]["LastName"] = nil
        _ = try store.upsert(soup: "kids", entriesJSON: try jsonText(kids))
        let first = try run(manager) { try manager.syncUp(targetJSON: parentChildrenTarget, soupName: "accounts", optionsJSON: nil, name: "pc-up", callback: nil) }
        XCTAssertEqual(first.status, .done, first.error)
        XCTAssertEqual(first.errors, 1)
        XCTAssertEqual(try compositeRequests(log), 1, "a parent with 40 children took more than one composite request")
        let parentId = try entries("accounts").first?["Id"] as? String ?? ""
        XCTAssertTrue(parentId.hasPrefix("001"), parentId)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE AccountId = '\(parentId)'"), 39)
        let refused = try entries("kids").filter { $0["LastName"] == nil }
        XCTAssertEqual(refused.count, 1)
        XCTAssertEqual(refused.first?["__local__"] as? Bool, true)
        XCTAssertTrue((refused.first?["__last_error__"] as? String ?? "").contains("REQUIRED_FIELD_MISSING"), "\(refused)")
        XCTAssertEqual(refused.first?["AccountId"] as? String, parentId, "the refused child was not relinked to the parent's server id")
        XCTAssertEqual(try entries("kids", "{kids:__local__} = 'false' and {kids:Id} like '003%'").count, 39)

        // 30 children edited, one deleted, 30 new (one naming a record the server does not have):
        // with the refused one, 62 dirty children of a synced parent.
        var edits: [[String: Any]] = []
        for i in 0..<30 where i != 7 {
            guard var entry = try kid("Kid-\(i)") else { continue }
            entry["LastName"] = "Edited-\(i)"
            entry["__local__"] = true
            entry["__locally_updated__"] = true
            edits.append(entry)
        }
        if var gone = try kid("Kid-39") {
            gone["__local__"] = true
            gone["__locally_deleted__"] = true
            edits.append(gone)
        }
        edits += (0..<30).map { i -> [String: Any] in ["AccountId": parentId, "LastName": "New-\(i)", "__local__": true, "__locally_created__": true] }
        edits.append(["Id": "003000000000000AAA", "AccountId": parentId, "LastName": "Ghost", "__local__": true, "__locally_updated__": true])
        _ = try store.upsert(soup: "kids", entriesJSON: try jsonText(edits))
        XCTAssertEqual(try entries("kids", "{kids:__local__} = 'true'").count, 62)
        let second = try run(manager) { try manager.reSync(name: "pc-up", callback: nil) }
        XCTAssertEqual(second.status, .done, second.error)
        XCTAssertEqual(second.errors, 2)
        XCTAssertEqual(try compositeRequests(log), 2, "62 dirty children took more than one composite request")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE AccountId = '\(parentId)' AND LastName LIKE 'Edited-%'"), 29)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE AccountId = '\(parentId)' AND LastName LIKE 'New-%'"), 30)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Kid-39'"), 0, "the deleted child is still on the server")
        XCTAssertNil(try kid("Kid-39"))
        XCTAssertTrue((try kid("Ghost")?["__last_error__"] as? String ?? "").contains("INVALID_CROSS_REFERENCE_KEY"))
        XCTAssertEqual(try entries("kids", "{kids:__local__} = 'true'").count, 2)
        XCTAssertEqual(try entries("kids", "{kids:__local__} = 'false' and {kids:Id} like '003%'").count, 38 + 30)
    }

    // A collection subrequest the server refuses as a whole (400: here one child's value it reads
    // as a reference) would fail all its children, and again at every run while that child stays
    // dirty; they go again one subrequest each, so only that child fails.
    func testParentChildrenCollectionRefusedAsAWholeIsSentChildByChild() throws {
        let log = root + "/server.log"
        let (server, manager) = try parentChildrenSetup(log: log)
        let kids: [[String: Any]] = (0..<5).map { i -> [String: Any] in
            ["AccountId": "local_1", "LastName": i == 2 ? "Kid @{nothing.id}" : "Kid-\(i)", "__local__": true, "__locally_created__": true]
        }
        _ = try store.upsert(soup: "kids", entriesJSON: try jsonText(kids))
        let up = try run(manager) { try manager.syncUp(targetJSON: parentChildrenTarget, soupName: "accounts", optionsJSON: nil, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done, up.error)
        XCTAssertEqual(up.errors, 1)
        XCTAssertEqual(try compositeRequests(log), 2)
        let parentId = try entries("accounts").first?["Id"] as? String ?? ""
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE AccountId = '\(parentId)' AND LastName LIKE 'Kid-%'"), 4)
        let dirty = try entries("kids", "{kids:__local__} = 'true'")
        XCTAssertEqual(dirty.count, 1)
        XCTAssertEqual(dirty.first?["LastName"] as? String, "Kid @{nothing.id}")
        XCTAssertTrue((dirty.first?["__last_error__"] as? String ?? "").contains("PROCESSING_HALTED"), "\(dirty)")
    }

    /// A server logging its requests, soups `accounts` (one Account created offline, `local_1`) and
    /// `kids` (Contacts naming it by AccountId), and a sync manager on them.
    func parentChildrenSetup(log: String) throws -> (DevServerProcess, SyncManager) {
        let server = try DevServerProcess(["--verbose"], logPath: log)
        let store = try self.store
        try store.registerSoup("accounts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"Name","type":"string"},{"path":"__local__","type":"string"}]"#)
        try store.registerSoup("kids", specsJSON: #"[{"path":"Id","type":"string"},{"path":"AccountId","type":"string"},{"path":"LastName","type":"string"},{"path":"__local__","type":"string"}]"#)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        _ = try store.upsert(soup: "accounts", entriesJSON: #"[{"Id":"local_1","Name":"Collections Co","__local__":true,"__locally_created__":true}]"#)
        return (server, manager)
    }

    let parentChildrenTarget = #"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"kids","parentIdFieldName":"AccountId"},"parentCreateFieldlist":["Name"],"childrenCreateFieldlist":["LastName","AccountId"],"childrenUpdateFieldlist":["LastName"]}"#

    /// `POST composite` requests the server has logged so far (--verbose).
    func compositeRequests(_ log: String) throws -> Int {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("POST /services/data/") && $0.contains("/composite -> ") }.count
    }

    // Failure 3: adoption after a lost create works on the server's clock, not ours: with the
    // server ten minutes behind, 200 lost creates are adopted (no duplicate), with a handful of
    // requests rather than two per record.
    func testLostCreatesAdoptedOnTheServersClockInFewRequests() throws {
        let log = root + "/server.log"
        let server = try DevServerProcess(["--clock-offset", "-600", "--verbose", "--faults", "POST /services/data/*/composite/sobjects drop=after times=1"], logPath: log)
        let manager = try self.manager(server)
        try createLocally((0..<200).map { "Clock-\($0)" })
        let first = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: nil) }
        XCTAssertEqual(first.status, .failed)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Clock-%'"), 200)
        let before = try requestCount(log)
        let second = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        let used = try requestCount(log) - before
        XCTAssertEqual(second.status, .done, second.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Clock-%'"), 200, "lost creates were sent again")
        XCTAssertEqual(try entries("contacts", "{contacts:Id} like '003%' and {contacts:__local__} = 'false'").count, 200)
        XCTAssertLessThanOrEqual(used, 6, "adopting 200 lost creates took \(used) requests")
    }

    /// Requests the server has logged so far (--verbose writes one line per request).
    func requestCount(_ log: String) throws -> Int {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains(" -> ") }.count
    }

    // Failure 4: a sync down whose SOQL has its own ORDER BY (not by modification date),
    // interrupted after its first page, then re-synced: every record is stored.
    func testInterruptedSyncDownWithOwnOrderLosesNothing() throws {
        let server = try DevServerProcess(["--seed", "Contact=300", "--min-batch-size", "20", "--admin"])
        let manager = try self.manager(server)
        // Pages after the first fail; the run stops after page 1 of 15.
        try server.setFaults("GET /services/data/*/query/* drop=before")
        let first = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact ORDER BY LastName","maxBatchSize":200}"#,
                                 soupName: "contacts", optionsJSON: nil, name: "by-name", callback: nil)
        }
        XCTAssertEqual(first.status, .failed)
        try server.setFaults("")
        let second = try run(manager) { try manager.reSync(name: "by-name", callback: nil) }
        XCTAssertEqual(second.status, .done, second.error)
        XCTAssertEqual(try entries("contacts").count, 300, "records of the pages the interrupted run did not reach were skipped")
        XCTAssertTrue(try SoqlRewriter("SELECT Id FROM Contact").ordersAscending(by: "LastModifiedDate"))
        XCTAssertTrue(try SoqlRewriter("SELECT Id FROM Contact ORDER BY lastmodifieddate ASC, Id").ordersAscending(by: "LastModifiedDate"))
        XCTAssertFalse(try SoqlRewriter("SELECT Id FROM Contact ORDER BY LastModifiedDate DESC").ordersAscending(by: "LastModifiedDate"))
        XCTAssertFalse(try SoqlRewriter("SELECT Id FROM Contact ORDER BY Name").ordersAscending(by: "LastModifiedDate"))
    }

    // Failure 5: an edit the host makes in the same millisecond as the engine's own write of the
    // entry (same _soupLastModifiedDate) still counts as an edit: the entry stays dirty with it.
    func testEditInTheSameMillisecondStaysDirty() throws {
        let store = try self.store
        try store.registerSoup("contacts", specsJSON: contactSpecs)
        let stored = try entries_(store.upsert(soup: "contacts", entriesJSON: #"[{"attributes":{"type":"Contact"},"Id":"003000000000001AAA","LastName":"Sent","__local__":true,"__locally_updated__":true}]"#))
        let entryId = (stored.first?["_soupEntryId"] as? Int64) ?? Int64(stored.first?["_soupEntryId"] as? Int ?? 0)
        // What the engine read and sent: the stored entry, but with the value before the host's
        // edit and the same _soupLastModifiedDate (the edit landed in the same millisecond).
        let current = try JSONDocument.parse(try store.retrieve(soup: "contacts", ids: [entryId]).string)
        guard let copy = current.root[0].flatMap({ json_deep_copy($0.raw) }) else { throw TestFailure("no entry") }
        let sent = JSONDocument(owning: copy)
        sent.root.set("LastName", owned: JSONMake.string("Before"))
        let ctx = SyncContext(rest: RestClient(config: RemoteConfig(instanceURL: "http://127.0.0.1:9", accessToken: "")),
                              cancel: CancelFlag(), store: store, soupName: "contacts", syncId: 1)
        let task = SyncUpTask(ctx: ctx, target: try SyncUpTarget.parsed(nil),
                              options: SyncOptions(), states: try store.syncManager().states, emit: { _ in })
        let item = SyncUpTask.Item(entryId: entryId, entry: sent, action: .update, type: "Contact", serverId: "003000000000001AAA")
        try task.apply([item], [.updated], info: try store.requireSoup("contacts"), state: nil)
        let after = try entries("contacts").first
        XCTAssertEqual(after?["LastName"] as? String, "Sent")
        XCTAssertEqual(after?["__local__"] as? Bool, true, "the host's edit lost its dirty flag")
    }

    func entries_(_ buffer: TextBuffer) throws -> [[String: Any]] {
        (try parseJSON(buffer.string) as? [[String: Any]]) ?? []
    }

    // Failure 6: after our own update the local copy carries the server's new modification
    // date, so the next LEAVE_IF_CHANGED sync up pushes the next edit instead of reporting a
    // false conflict; a record created offline too.
    func testNoFalseConflictAfterOwnWrites() throws {
        let server = try DevServerProcess(["--seed", "Contact=3"])
        let manager = try self.manager(server)
        try syncDownContacts(manager, name: "down")
        try createLocally(["Fresh"])
        let lic = #"{"mergeMode":"LEAVE_IF_CHANGED","fieldlist":["LastName"]}"#
        for round in 1...3 {
            for var entry in try entries("contacts") {
                entry["LastName"] = "Round\(round)-\(entry["_soupEntryId"] ?? 0)"
                entry["__local__"] = true
                if entry["__locally_created__"] as? Bool != true { entry["__locally_updated__"] = true }
                _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
            }
            sleepMillis(5)
            let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: lic, name: nil, callback: nil) }
            XCTAssertEqual(up.status, .done, up.error)
            XCTAssertEqual(up.conflicts, 0, "round \(round): our own previous write was taken for someone else's")
            XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Round\(round)-%'"), 4)
        }
    }

    // An update whose answer was lost is on the server with a newer modification date: the
    // LEAVE_IF_CHANGED re-run must see its own values there, not a conflict.
    func testLostUpdateAnswerIsNoConflict() throws {
        let server = try DevServerProcess(["--seed", "Contact=2", "--admin"])
        let manager = try self.manager(server)
        try syncDownContacts(manager)
        for var entry in try entries("contacts") {
            entry["LastName"] = "Edited-\(entry["_soupEntryId"] ?? 0)"
            entry["__local__"] = true
            entry["__locally_updated__"] = true
            _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
        }
        sleepMillis(5)
        try server.setFaults("PATCH /services/data/*/composite/sobjects drop=after")
        let lic = #"{"mergeMode":"LEAVE_IF_CHANGED","fieldlist":["LastName"]}"#
        let first = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: lic, name: "up", callback: nil) }
        XCTAssertEqual(first.status, .failed)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Edited-%'"), 2)
        try server.setFaults("")
        let second = try run(manager) { try manager.reSync(name: "up", callback: nil) }
        XCTAssertEqual(second.status, .done, second.error)
        XCTAssertEqual(second.conflicts, 0, "our own write, whose answer was lost, was taken for a conflict")
        XCTAssertEqual(try entries("contacts", "{contacts:__local__} = 'false'").count, 2)
    }

    // Failure 7: a huge server error text is not copied whole into the state or __last_error__.
    func testHugeServerErrorsAreBounded() throws {
        let server = try DevServerProcess([])
        let manager = try self.manager(server)
        // The server's INVALID_FIELD message names the 20 KB field.
        let long = String(repeating: "x", count: 20_000)
        let down = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT \#(long) FROM Contact"}"#, soupName: "contacts", optionsJSON: nil, name: nil, callback: nil)
        }
        XCTAssertEqual(down.status, .failed)
        XCTAssertLessThanOrEqual(down.error.utf8.count, MessageLimit.bytes + 100)
        XCTAssertTrue(down.error.contains("bytes cut"), String(down.error.prefix(200)))
        let huge = String(repeating: "x", count: 200_000)

        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"attributes":{"type":"Contact"},"LastName":"Ok","\#(huge)":1,"__local__":true,"__locally_created__":true}]"#)
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: nil, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done, String(up.error.prefix(300)))
        XCTAssertEqual(up.errors, 1)
        let lastError = try entries("contacts").first?[LocalFlags.lastError] as? String ?? ""
        XCTAssertFalse(lastError.isEmpty)
        XCTAssertLessThanOrEqual(lastError.utf8.count, MessageLimit.bytes + 200)
        XCTAssertNotNil(try? parseJSON(lastError), "__last_error__ stays JSON")
        XCTAssertEqual(MessageLimit.bound("short"), "short")
        let cut = MessageLimit.bound(String(repeating: "é", count: 10_000))
        XCTAssertTrue(cut.hasSuffix("more bytes cut]"))
        XCTAssertLessThanOrEqual(cut.utf8.count, MessageLimit.bytes)
    }

    // Failure 8: a server that sends the same nextRecordsUrl again ends the run FAILED.
    func testRepeatedLocatorEndsTheRun() throws {
        let server = try DevServerProcess(["--seed", "Contact=100", "--min-batch-size", "10", "--faults", "GET /services/data/*/query* repeat-locator"])
        let manager = try self.manager(server)
        let state = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact","maxBatchSize":200}"#, soupName: "contacts", optionsJSON: nil, name: nil, callback: nil)
        }
        XCTAssertEqual(state.status, .failed)
        XCTAssertTrue(state.error.contains("a second time"), state.error)
        XCTAssertEqual(state.errorCode, ErrorCode.server.rawValue)

        // The same guard holds for custom targets that keep answering "next".
        try store.syncManager().registerCustomTarget("looping", CustomTargetCallbacks(fetchPage: { _, _, _ in
            #"{"records":[{"Id":"x1","LastModifiedDate":"2024-01-01T00:00:00.000Z"}],"next":"again"}"#
        }))
        let custom = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"looping"}"#, soupName: "contacts", optionsJSON: nil, name: nil, callback: nil)
        }
        XCTAssertEqual(custom.status, .failed)
        XCTAssertTrue(custom.error.contains("a second time"), custom.error)
    }

    // A server's 404 (here an API version the server lacks) was NOT_FOUND,
    // the code of the host's own soups, entries and syncs: a host took a wrong version for a
    // missing sync. Every error status of the server is SERVER, with the request, the status
    // and the server's text in the state; 401 alone is AUTH, and a token endpoint that is down
    // (5xx) has not refused the credentials.
    func testServerErrorStatusesAreServerErrors() throws {
        let server = try DevServerProcess(["--seed", "Contact=3", "--admin"])
        let manager = try self.manager(server)
        let target = #"{"type":"soql","query":"SELECT LastName FROM Contact"}"#
        var remote = server.remote
        remote.apiVersion = "v1.0"
        manager.setRemote(remote)
        let id = try manager.syncDown(targetJSON: target, soupName: "contacts", optionsJSON: nil, name: "down", callback: nil)
        let wrongVersion = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(wrongVersion.status, .failed)
        XCTAssertEqual(wrongVersion.errorCode, ErrorCode.server.rawValue, wrongVersion.error)
        XCTAssertTrue(wrongVersion.error.contains("HTTP 404"), wrongVersion.error)
        XCTAssertTrue(wrongVersion.error.hasPrefix("GET query"), wrongVersion.error)

        manager.setRemote(server.remote)
        for status in [400, 403, 404, 409, 412, 429] {
            try server.setFaults("GET /services/data/*/query* status=\(status)")
            try manager.reSync(id: id, callback: nil)
            let state = try manager.wait(id: id, timeoutMs: 60_000)
            XCTAssertEqual(state.status, .failed)
            XCTAssertEqual(state.errorCode, ErrorCode.server.rawValue, "HTTP \(status): \(state.error)")
            XCTAssertTrue(state.error.contains("HTTP \(status)") && state.error.contains("Injected fault"), state.error)
        }

        // The access token expires and the token endpoint is down: SERVER (run it again
        // later), not AUTH (new credentials), which a refused refresh still is.
        remote = server.remote
        remote.refreshToken = "refresh"
        remote.clientId = "client"
        remote.maxAttempts = 1
        manager.setRemote(remote)
        try server.setFaults("GET /services/data/*/query* unauthorized; POST /services/oauth2/token status=503")
        try manager.reSync(id: id, callback: nil)
        let tokenDown = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(tokenDown.errorCode, ErrorCode.server.rawValue, tokenDown.error)
        try server.setFaults("GET /services/data/*/query* unauthorized")
        try manager.reSync(id: id, callback: nil)
        let refused = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(refused.errorCode, ErrorCode.auth.rawValue, refused.error)
        XCTAssertFalse(refused.errorRetryable, "new credentials are needed first")

        try server.setFaults("")
        try manager.reSync(id: id, callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        // A local lookup of a sync that does not exist is still NOT_FOUND.
        XCTAssertThrowsError(try manager.reSync(id: id + 1000, callback: nil)) { XCTAssertEqual(($0 as? StoreError)?.code, .notFound) }
    }

    // An error body that is not the API's JSON (a proxy's HTML page, plain text) is summed up in
    // a short plain text (the page's title or first heading), never quoted with its markup.
    func testErrorBodiesThatAreNotTheAPIsAreSummedUpWithoutMarkup() {
        let padding = String(repeating: "<p class=\"x\">Please try again later &amp; retry.</p>\n", count: 60)
        let nginx = "<html><head><title>500</title><style>p { color: red }</style><script>var a = '<b>';</script></head>"
            + "<body><center><h1>500 Internal Server Error</h1></center><hr><center>nginx</center>\(padding)</body></html>"
        let page = RestClient.error(for: HTTPResponse(status: 500, body: Array(nginx.utf8), contentType: "text/html"), method: "GET", path: "query")
        XCTAssertEqual(page.code, .server)
        XCTAssertTrue(page.retryable)
        XCTAssertEqual(page.message, "GET query: HTTP 500: 500 Internal Server Error")
        let titled = RestClient.error(for: HTTPResponse(status: 502, body: Array("<!DOCTYPE html>\n<html><head><title>Bad Gateway &#8212; proxy</title></head><body>x</body></html>".utf8)), method: "GET", path: "query")
        XCTAssertEqual(titled.message, "GET query: HTTP 502: Bad Gateway \u{2014} proxy")
        let bare = RestClient.error(for: HTTPResponse(status: 503, body: Array("<html><body><!-- x --><p>Service\n  down &lt;maintenance&gt;</p></body></html>".utf8)), method: "GET", path: "q")
        XCTAssertEqual(bare.message, "GET q: HTTP 503: Service down maintenance")
        let text = RestClient.error(for: HTTPResponse(status: 404, body: Array(("Not\tfound:\n" + String(repeating: "x", count: 100_000)).utf8)), method: "GET", path: "query")
        XCTAssertEqual(text.code, .server)
        XCTAssertFalse(text.retryable)
        XCTAssertTrue(text.message.hasPrefix("GET query: HTTP 404: Not found: xxx"), text.message)
        XCTAssertLessThanOrEqual(text.message.count, 240)
        let problem = RestClient.error(for: HTTPResponse(status: 400, body: Array(#"{"type":"about:blank","title":"Bad Request","status":400,"detail":"The id is not valid"}"#.utf8)), method: "PUT", path: "tables/todo/1")
        XCTAssertEqual(problem.message, "PUT tables/todo/1: HTTP 400 Bad Request: The id is not valid")
    }

    // A server answering every protocol's requests with a web server's HTML error page (the dev
    // server's html= fault): each run ends FAILED with SERVER and a message, and each entry a
    // sync up could not send an __last_error__, naming the status and the page's heading, never
    // its markup.
    func testHTMLErrorPagesNeverReachMessages() throws {
        let server = try DevServerProcess(["--seed", "Contact=3", "--datasync", "--twophase", "--admin"])
        let manager = try self.manager(server)
        var remote = server.remote
        remote.maxAttempts = 1
        manager.setRemote(remote)
        try syncDownContacts(manager)
        func checkMessage(_ text: String, _ what: String) {
            XCTAssertTrue(text.contains("HTTP 500") && text.contains("500 Internal Server Error"), "\(what): \(text)")
            XCTAssertFalse(text.contains("<") || text.contains(">") || text.contains("nginx"), "\(what): \(text)")
            XCTAssertLessThan(text.utf8.count, 400, "\(what): \(text)")
        }
        try server.setFaults("* html=500")
        let down = try run(manager) {
            try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact"}"#, soupName: "contacts", optionsJSON: nil, name: nil, callback: nil)
        }
        XCTAssertEqual(down.status, .failed)
        XCTAssertEqual(down.errorCode, ErrorCode.server.rawValue)
        XCTAssertTrue(down.errorRetryable, "a 5xx may pass when run again")
        XCTAssertEqual(down.json().root["errorRetryable"]?.bool, true)
        checkMessage(down.error, "soql sync down")

        // Sync up, one request per record and in collections: each entry's __last_error__.
        guard var entry = try entries("contacts").first else { throw TestFailure("no entry") }
        entry["LastName"] = "Edited"
        entry["__local__"] = true
        entry["__locally_updated__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText(entry))
        for target in [#"{"type":"single"}"#, "{}"] {
            let up = try run(manager) { try manager.syncUp(targetJSON: target, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: nil, callback: nil) }
            let dirty = try entries("contacts", "{contacts:__local__} = 'true'")
            XCTAssertEqual(dirty.count, 1, target)
            let lastError = dirty.first?["__last_error__"] as? String ?? up.error
            checkMessage(lastError, "sync up \(target)")
        }

        // Datasync and two-phase.
        for (soup, key) in [("todo", "id")] where !(try store.soupExists(soup)) {
            try store.registerSoup(soup, specsJSON: #"[{"path":"\#(key)","type":"string"},{"path":"__local__","type":"string"}]"#)
        }
        for target in [#"{"type":"datasync","table":"todo"}"#, #"{"type":"twophase","tables":[{"name":"todo","idKey":"id"}]}"#] {
            let pull = try run(manager) { try manager.syncDown(targetJSON: target, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }
            XCTAssertEqual(pull.status, .failed, target)
            XCTAssertEqual(pull.errorCode, ErrorCode.server.rawValue, target)
            checkMessage(pull.error, "sync down \(target)")
        }
        _ = try store.upsert(soup: "todo", entriesJSON: #"{"id":"local-1","title":"new","__local__":true,"__locally_created__":true}"#)
        for target in [#"{"type":"datasync","table":"todo"}"#, #"{"type":"twophase","tables":[{"name":"todo","idKey":"id"}]}"#] {
            let push = try run(manager) { try manager.syncUp(targetJSON: target, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }
            let dirty = try entries("todo", "{todo:__local__} = 'true'")
            XCTAssertEqual(dirty.count, 1, target)
            checkMessage(dirty.first?["__last_error__"] as? String ?? push.error, "sync up \(target)")
        }
    }

    // The header's one account of lost answers ("Faults"): an update whose answer is lost is
    // sent again within the run (PATCH is harmless twice), while a create's is not (its run
    // fails and the next one adopts the record: testTransportNeverResendsACommittedWrite).
    func testLostAnswerOfAnUpdateIsRetriedWithinTheRun() throws {
        let server = try DevServerProcess(["--seed", "Contact=1", "--admin"])
        let manager = try self.manager(server)
        try syncDownContacts(manager)
        guard var entry = try entries("contacts").first else { throw TestFailure("no entry") }
        entry["LastName"] = "Retried"
        entry["__local__"] = true
        entry["__locally_updated__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([entry]))
        try server.setFaults("PATCH /services/data/*/composite/sobjects drop=after times=1")
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done, "the update's lost answer should be retried within the run: \(up.error)")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Retried'"), 1)
        XCTAssertEqual(try entries("contacts", "{contacts:__local__} = 'true'").count, 0)
    }

    // A state a crash left RUNNING reads STOPPED as soon as the store is open again, before any
    // sync call creates the sync manager (a host listing syncs_soup must not see a ghost run).
    func testRunningStateIsStoppedWhenTheStoreOpens() throws {
        let registry = StoreRegistry()
        let config = try StoreConfig(name: "crashed")
        let handle = try registry.open(root: root, config: config)
        let opened = try registry.store(handle)
        try opened.registerSoup("contacts", specsJSON: contactSpecs)
        var state = try opened.syncManager().createSyncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#,
                                                            soupName: "contacts", optionsJSON: nil, name: "crashy")
        state.status = .running
        try opened.syncManager().states.save(state)
        try registry.close(handle)
        let again = try registry.open(root: root, config: config)
        let cursor = try CursorPage(try registry.store(again).runSmartQuery(
            specJSON: #"{"queryType":"smart","pageSize":10,"smartSql":"select {syncs_soup:status} from {syncs_soup}"}"#))
        XCTAssertEqual(cursor.items.compactMap { ($0 as? [Any])?.first as? String }, ["STOPPED"])
        try registry.close(again)
    }

    // A run that ends with records the server refused or that conflict says so: DONE with the
    // counts, the entry ids, an error text and code.
    func testPartialSuccessIsVisible() throws {
        let server = try DevServerProcess(["--seed", "Contact=2"])
        let manager = try self.manager(server)
        try syncDownContacts(manager)
        var local = try entries("contacts")
        XCTAssertEqual(local.count, 2)
        // Record 0 changes on the server after the sync down: a conflict under LEAVE_IF_CHANGED.
        sleepMillis(5)
        _ = try server.call("PATCH", "sobjects/Contact/\(local[0]["Id"] as? String ?? "")", body: #"{"LastName":"ServerSide"}"#)
        local[0]["LastName"] = "Mine"
        local[0]["__local__"] = true
        local[0]["__locally_updated__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: try jsonText([local[0]]))
        // A create the server refuses (no such field).
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"attributes":{"type":"Contact"},"LastName":"Bad","NoSuchField__c":1,"__local__":true,"__locally_created__":true}]"#)
        let bad = try entries("contacts", "{contacts:LastName} = 'Bad'").first?["_soupEntryId"] as? Int ?? -1
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"mergeMode":"LEAVE_IF_CHANGED"}"#, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done)
        XCTAssertEqual(up.conflicts, 1)
        XCTAssertEqual(up.errors, 1)
        XCTAssertEqual(up.conflictEntryIds, [Int64(local[0]["_soupEntryId"] as? Int ?? -1)])
        XCTAssertEqual(up.errorEntryIds, [Int64(bad)])
        XCTAssertEqual(up.errorCode, ErrorCode.server.rawValue)
        XCTAssertTrue(up.error.contains("2 records were not synced"), up.error)
        let json = try parseJSON(up.jsonText) as? [String: Any]
        XCTAssertEqual(json?["errors"] as? Int, 1)
        XCTAssertEqual(json?["conflictEntryIds"] as? [Int], [local[0]["_soupEntryId"] as? Int ?? -1])
    }

    // An entry that lost attributes.type (a whole-entry upsert replaced it) made
    // the LEAVE_IF_CHANGED check send a retrieve for type "" and the whole run failed; the valid
    // create in the same run was not sent. And a local copy without the server's modification
    // date was always a conflict. Now the entry fails alone, naming why, the others go up, and a
    // copy without the date is compared by the time of its last local write.
    func testEntryThatCannotBeSentFailsAloneUnderLeaveIfChanged() throws {
        for mode in ["collection", "single"] {
            let server = try DevServerProcess(["--seed", "Contact=3"])
            let soup = "contacts_\(mode)"
            let manager = try self.manager(server, soup: soup)
            try syncDownContacts(manager, soup: soup)
            let synced = try entries(soup)
            XCTAssertEqual(synced.count, 3)
            func replaced(_ entry: [String: Any], lastName: String, keepType: Bool) -> [String: Any] {
                var whole: [String: Any] = ["_soupEntryId": entry["_soupEntryId"] ?? 0, "Id": entry["Id"] ?? "", "LastName": lastName,
                                            "__local__": true, "__locally_updated__": true]
                if keepType { whole["attributes"] = ["type": "Contact"] }
                return whole
            }
            // 0: no type; 1: no modification date, the server unchanged; 2: no modification
            // date, the server changed after the local edit.
            _ = try store.upsert(soup: soup, entriesJSON: try jsonText([replaced(synced[0], lastName: "NoType", keepType: false),
                                                                        replaced(synced[1], lastName: "NoDate", keepType: true),
                                                                        replaced(synced[2], lastName: "NoDateLate", keepType: true)]))
            try createLocally(["Fresh-\(mode)"], soup: soup)
            sleepMillis(1100) // the server's dates have whole milliseconds, its Date header whole seconds
            _ = try server.call("PATCH", "sobjects/Contact/\(synced[2]["Id"] as? String ?? "")", body: #"{"Title":"ServerSide"}"#)
            let up = try run(manager) {
                try manager.syncUp(targetJSON: #"{"type":"\#(mode)"}"#, soupName: soup, optionsJSON: #"{"mergeMode":"LEAVE_IF_CHANGED","fieldlist":["LastName"]}"#, name: nil, callback: nil)
            }
            XCTAssertEqual(up.status, .done, "\(mode): \(up.error)")
            XCTAssertEqual(up.errors, 1, "\(mode): \(up.error)")
            XCTAssertEqual(up.conflicts, 1, "\(mode): \(up.error)")
            XCTAssertEqual(up.errorEntryIds, [Int64(synced[0]["_soupEntryId"] as? Int ?? -1)], mode)
            XCTAssertEqual(up.conflictEntryIds, [Int64(synced[2]["_soupEntryId"] as? Int ?? -1)], mode)
            XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Fresh-\(mode)'"), 1, "\(mode): the valid create was not sent")
            XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'NoDate'"), 1, "\(mode): an unchanged record was taken for a conflict")
            XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'NoDateLate'"), 0, "\(mode): a server change after the edit was overwritten")
            let failed = try entries(soup, "{\(soup):LastName} = 'NoType'").first
            let lastError = failed?["__last_error__"] as? String ?? ""
            XCTAssertTrue(lastError.contains("NO_SOBJECT_TYPE") && lastError.contains("attributes.type"), lastError)
            XCTAssertEqual(failed?["__local__"] as? Bool, true)
        }
    }

    // A run that failed before it learned its size (the server was gone)
    // reported the previous run's totalSize as its own record count.
    func testFailedRunDoesNotReportThePreviousRunsSize() throws {
        let server = try DevServerProcess(["--seed", "Contact=3"])
        let manager = try self.manager(server)
        let done = try syncDownContacts(manager, name: "down")
        XCTAssertEqual(done.totalSize, 3)
        manager.setRemote(try RemoteConfig.parse(#"{"instanceUrl":"http://127.0.0.1:1","accessToken":"t","maxAttempts":1}"#))
        let failed = try run(manager) { try manager.reSync(name: "down", callback: nil) }
        XCTAssertEqual(failed.status, .failed)
        XCTAssertEqual(failed.totalSize, -1, "the failed run reports the previous run's size")
    }

    // A collections request the server refuses as a whole (400: one record it
    // cannot read fails the request) failed the run; now its records are sent one by one, so
    // each gets its own outcome.
    func testCollectionRefusedAsAWholeIsSentRecordByRecord() throws {
        let server = try DevServerProcess(["--faults", "POST /services/data/*/composite/sobjects status=400 times=1"])
        let manager = try self.manager(server)
        try createLocally(["One", "Two", "Three"])
        let up = try run(manager) { try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done, up.error)
        XCTAssertEqual(up.errors, 0, up.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName IN ('One', 'Two', 'Three')"), 3)
        XCTAssertEqual(try entries("contacts", "{contacts:__local__} = 'true'").count, 0)
    }
}

extension DevServerProcess {
    /// Replaces the server's fault spec (needs --admin).
    func setFaults(_ spec: String) throws {
        let response = try RestClient(config: remote).send("PUT", "/__devserver/faults", body: Array(spec.utf8))
        guard response.isSuccess || response.status == 204 else { throw TestFailure("setting faults failed: \(response.text)") }
    }
}
