// Change events (docs/sync.md#change-events): live sync keeps its SOQL sync downs current by
// Change Data Capture over the dev server's Streaming API, with no pull: server creates,
// updates and deletes reach the soup; a dirty entry keeps its edit; records outside a filter
// stay out; the engine's own writes are not fetched back; a restart replays from the stored
// mark; a mark the server no longer holds makes the syncs catch up.
import Foundation
import XCTest
@testable import SyncStoreCore
@testable import SyncStoreSync
import SyncStoreSupport

private typealias Recorder = HeardEvents

extension HeardEvents {
    /// The stream's part of the last state event that has one.
    var stream: [String: Any]? { all.last { $0["changeEvents"] != nil }?["changeEvents"] as? [String: Any] }
    /// Runs of sync `id` that ended DONE.
    func done(_ id: Int64) -> Int {
        all.filter {
            let sync = $0["sync"] as? [String: Any]
            return (sync?["_soupEntryId"] as? NSNumber)?.int64Value == id && sync?["status"] as? String == "DONE"
        }.count
    }
}

final class ChangeEventTests: StoreTestCase {
    private static let serverFlags = ["--cometd-timeout-ms", "3000", "--admin"]

    private func setUp(_ server: DevServerProcess, query: String = "SELECT LastName, FirstName FROM Contact",
                       mergeMode: String = "LEAVE_IF_CHANGED") throws -> (SyncManager, Int64) {
        let store = try self.store
        if !store.soupExists("contacts") {
            try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"},{"path":"__local__","type":"string"}]"#)
        }
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        if try manager.status(name: "up") == nil {
            _ = try manager.createSyncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up")
        }
        let down = try manager.status(name: "down")?.id ?? manager.createSyncDown(
            targetJSON: #"{"type":"soql","query":"\#(query)"}"#, soupName: "contacts",
            optionsJSON: #"{"mergeMode":"\#(mergeMode)"}"#, name: "down").id
        return (manager, down)
    }

    private func startLive(_ manager: SyncManager) throws -> Recorder {
        let events = Recorder()
        try manager.live.start(try LiveSync.Options.parse(#"{"debounceMs":50,"retryMinMs":100,"retryMaxMs":500}"#), owner: 0) { events.take($0) }
        XCTAssertTrue(events.wait { events.stream?["state"] as? String == "live" }, "\(events.all.suffix(3))")
        return events
    }

    private func entry(_ lastName: String) throws -> [String: Any]? {
        let page = try store.queryPage(soup: "contacts", specJSON: #"{"queryType":"exact","indexPath":"LastName","matchKey":"\#(lastName)","pageSize":10}"#, page: 0)
        return (try parseJSON(page.string) as? [[String: Any]])?.first
    }

    private func created(_ server: DevServerProcess, _ lastName: String) throws -> String {
        let answer = try server.call("POST", "sobjects/Contact", body: #"{"LastName":"\#(lastName)"}"#) as? [String: Any]
        return try XCTUnwrap(answer?["id"] as? String)
    }

    func testServerCreatesUpdatesAndDeletesReachTheSoupWithoutAPull() throws {
        let server = try DevServerProcess(["--seed", "Contact=3"] + Self.serverFlags)
        let (manager, down) = try setUp(server)
        let events = try startLive(manager)
        let id = try created(server, "Streamed")
        XCTAssertTrue(events.wait { (try? self.entry("Streamed")) != nil }, "\(events.all.suffix(4))")
        XCTAssertEqual(try entry("Streamed")?["Id"] as? String, id)

        _ = try server.call("PATCH", "sobjects/Contact/\(id)", body: #"{"FirstName":"Changed"}"#)
        XCTAssertTrue(events.wait { ((try? self.entry("Streamed"))??["FirstName"] as? String) == "Changed" })

        _ = try server.call("DELETE", "sobjects/Contact/\(id)")
        XCTAssertTrue(events.wait { (try? self.entry("Streamed")) == nil })
        XCTAssertGreaterThanOrEqual((events.stream?["events"] as? NSNumber)?.intValue ?? 0, 3)
        XCTAssertGreaterThanOrEqual(events.done(down), 4, "the catch-up, then one run per event batch")
        XCTAssertEqual(events.stream?["channels"] as? [String], ["/data/ContactChangeEvent"])
        manager.live.stop()
    }

    func testADirtyEntryKeepsItsEditAndItsRecordUnderLeaveIfChanged() throws {
        let server = try DevServerProcess(["--seed", "Contact=1"] + Self.serverFlags)
        let id = try created(server, "Kept")
        let (manager, _) = try setUp(server)
        let events = try startLive(manager)
        XCTAssertNotNil(try entry("Kept"))
        // Stop pushing: the local edit stays dirty while the server changes the record.
        manager.live.stop()
        var local = try XCTUnwrap(try entry("Kept"))
        local["FirstName"] = "Local"
        local["__local__"] = true
        local["__locally_updated__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: String(decoding: try JSONSerialization.data(withJSONObject: local), as: UTF8.self))
        let again = try startLiveDownOnly(manager)
        _ = try server.call("PATCH", "sobjects/Contact/\(id)", body: #"{"FirstName":"Server"}"#)
        XCTAssertTrue(again.wait { (again.stream?["events"] as? NSNumber)?.intValue ?? 0 >= 1 })
        usleep(500_000)
        XCTAssertEqual(try entry("Kept")?["FirstName"] as? String, "Local")
        _ = try server.call("DELETE", "sobjects/Contact/\(id)")
        XCTAssertTrue(again.wait { (again.stream?["events"] as? NSNumber)?.intValue ?? 0 >= 2 })
        usleep(500_000)
        XCTAssertNotNil(try entry("Kept"), "a dirty entry is not removed under LEAVE_IF_CHANGED")
        manager.live.stop()
        _ = events
    }

    private func startLiveDownOnly(_ manager: SyncManager) throws -> Recorder {
        let events = Recorder()
        try manager.live.start(try LiveSync.Options.parse(#"{"syncs":["down"],"retryMinMs":100,"retryMaxMs":500}"#), owner: 0) { events.take($0) }
        XCTAssertTrue(events.wait { events.stream?["state"] as? String == "live" })
        return events
    }

    func testRecordsOutsideTheFilterStayOut() throws {
        let server = try DevServerProcess(Self.serverFlags)
        let (manager, _) = try setUp(server, query: "SELECT LastName FROM Contact WHERE LastName LIKE 'A%'")
        let events = try startLive(manager)
        _ = try created(server, "Bob")
        _ = try created(server, "Alice")
        XCTAssertTrue(events.wait { (try? self.entry("Alice")) != nil })
        XCTAssertNil(try entry("Bob"))
        manager.live.stop()
    }

    func testTheEnginesOwnUpdatesAreNotFetchedBackItsCreatesJoinTheSyncDown() throws {
        let server = try DevServerProcess(Self.serverFlags)
        let (manager, down) = try setUp(server)
        let events = try startLive(manager)
        _ = try store.upsert(soup: "contacts", entriesJSON: #"{"attributes":{"type":"Contact"},"LastName":"Mine","__local__":true,"__locally_created__":true}"#)
        XCTAssertTrue(events.wait { ((try? server.count("SELECT Id FROM Contact WHERE LastName = 'Mine'")) ?? 0) == 1 })
        // Its create's event is fetched once: the entry becomes the sync down's, as its next run would make it.
        XCTAssertTrue(events.wait { ((try? self.entry("Mine"))??["__sync_id__"] as? NSNumber)?.int64Value == down },
                      "\(String(describing: try? entry("Mine")))")
        usleep(300_000)
        let runsBefore = events.done(down), seen = (events.stream?["events"] as? NSNumber)?.intValue ?? 0
        var mine = try XCTUnwrap(try entry("Mine"))
        mine["LastName"] = "Edited"
        mine["__local__"] = true
        mine["__locally_updated__"] = true
        _ = try store.upsert(soup: "contacts", entriesJSON: String(decoding: try JSONSerialization.data(withJSONObject: mine), as: UTF8.self))
        XCTAssertTrue(events.wait { ((try? server.count("SELECT Id FROM Contact WHERE LastName = 'Edited'")) ?? 0) == 1 })
        XCTAssertTrue(events.wait { (events.stream?["events"] as? NSNumber)?.intValue ?? 0 > seen }, "the update's event came back")
        usleep(500_000)
        XCTAssertEqual(events.done(down), runsBefore, "its own update was not fetched again")
        manager.live.stop()
    }

    func testARestartReplaysFromItsMarkAndAnExpiredMarkCatchesUp() throws {
        let server = try DevServerProcess(["--seed", "Contact=2"] + Self.serverFlags)
        let gone = try created(server, "Gone")
        let purged = try created(server, "Purged")
        let (manager, _) = try setUp(server)
        let first = try startLive(manager)
        XCTAssertNotNil(try entry("Gone"))
        _ = try created(server, "Marker")
        XCTAssertTrue(first.wait { (try? self.entry("Marker")) != nil })
        manager.live.stop()

        // Deleted while stopped: a reSync would not see it; the replay does.
        _ = try server.call("DELETE", "sobjects/Contact/\(gone)")
        let second = try startLive(manager)
        XCTAssertTrue(second.wait { (try? self.entry("Gone")) == nil }, "\(second.all.suffix(3))")
        manager.live.stop()

        // Deleted, then the server forgets every event: the syncs catch up and clean ghosts.
        _ = try server.call("DELETE", "sobjects/Contact/\(purged)")
        _ = try server.call("POST", "/__devserver/events/purge")
        let third = try startLive(manager)
        XCTAssertTrue(third.wait { (try? self.entry("Purged")) == nil }, "\(third.all.suffix(3))")
        XCTAssertNotNil(try entry("Marker"))
        manager.live.stop()
    }

    func testAServerWithoutTheStreamingAPIIsUnavailableAndLiveSyncStillRuns() throws {
        let server = try DevServerProcess(["--seed", "Contact=1"])
        let (manager, _) = try setUp(server)
        var config = server.remote
        config.apiVersion = "v36.0" // the Streaming API needs 37.0 or later: /cometd/36.0 is 404
        manager.setRemote(config)
        let events = Recorder()
        try manager.live.start(try LiveSync.Options.parse(#"{"debounceMs":50}"#), owner: 0) { events.take($0) }
        XCTAssertTrue(events.wait { events.stream?["state"] as? String == "unavailable" }, "\(events.all.suffix(3))")
        XCTAssertTrue(events.all.contains { $0["state"] as? String == "live" })
        manager.live.stop()
        XCTAssertThrowsError(try LiveSync.Options.parse(#"{"changeEvents":1}"#)) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
    }

    func testPendingChangesCoalesceAndStayBounded() {
        var changes = RecordChanges()
        changes.changed(["a", "b"])
        changes.deleted(["b"])
        changes.changed(["c"])
        XCTAssertEqual(changes.fetch, ["a", "c"])
        XCTAssertEqual(changes.remove, ["b"], "a later delete wins over an update")
        changes.changed(["b"])
        XCTAssertEqual(changes.remove, [], "an undelete undoes the delete")
        // Put back after a failed apply: under the newer changes.
        var newer = RecordChanges()
        newer.deleted(["a"])
        newer.putBack(changes)
        XCTAssertEqual(newer.remove, ["a"])
        XCTAssertEqual(newer.fetch, ["b", "c"])
        // A flood: past the bound the sync catches up instead of holding ids.
        var flood = RecordChanges()
        flood.changed((0...RecordChanges.maxIds).map { "id\($0)" })
        XCTAssertTrue(flood.reSync && flood.cleanGhosts)
        XCTAssertTrue(flood.fetch.isEmpty && flood.remove.isEmpty)
        flood.changed(["more"])
        flood.deleted(["gone"])
        XCTAssertTrue(flood.fetch.isEmpty && flood.remove.isEmpty, "a reSync and a ghost cleaning find every change")
        // A reSync without ghosts (a query that cannot be run on ids): deletions still go by id.
        var partial = RecordChanges()
        partial.needCatchUp(ghosts: false)
        partial.changed(["a"])
        partial.deleted(["b"])
        XCTAssertEqual(partial.fetch, [])
        XCTAssertEqual(partial.remove, ["b"])
        XCTAssertFalse(partial.cleanGhosts)
    }

    func testMaxTimeStampStopsAtTheNewestEventTaken() throws {
        var changes = RecordChanges()
        XCTAssertNil(changes.seenThrough, "no event said when it was committed")
        changes.seen(nil)
        XCTAssertNil(changes.seenThrough)
        changes.seen(2_000)
        changes.seen(1_000)
        XCTAssertEqual(changes.seenThrough, 2_000, "the newest commit time taken")
        var newer = RecordChanges()
        newer.seen(1_500)
        newer.putBack(changes)
        XCTAssertEqual(newer.seenThrough, 2_000, "put back, the older changes' events were taken too")
        newer.needCatchUp(ghosts: true)
        XCTAssertEqual(newer.seenThrough, 2_000)
        // The target of those changes: a record fetched now may carry a newer change than the
        // events taken; without a commit time maxTimeStamp does not move at all.
        let base = try SoqlTarget(JSONDocument.parse(#"{"type":"soql","query":"SELECT Id, LastModifiedDate FROM Contact"}"#).root)
        XCTAssertEqual(ChangedRecordsTarget(base: base, fetch: ["a"], remove: [], seenThrough: 2_000).maxTimeStampCeiling, 2_000)
        XCTAssertEqual(ChangedRecordsTarget(base: base, fetch: ["a"], remove: [], seenThrough: nil).maxTimeStampCeiling, Int64.min)
        XCTAssertEqual(base.maxTimeStampCeiling, Int64.max, "a query's own pages move it as far as they go")
    }

    func testEventsAreReadOrRefusedWithAReason() throws {
        func data(_ text: String) throws -> JSONDocument { try JSONDocument.parse(text) }
        let good = try data(#"{"event":{"replayId":7},"payload":{"ChangeEventHeader":{"entityName":"Widget__c","changeType":"GAP_DELETE","recordIds":["a0X000000000001AAA"],"changeOrigin":"x;client=me"}}}"#)
        let event = try ChangeEvent.parse(channel: "/data/Widget__ChangeEvent", data: good.root)
        XCTAssertEqual(event.kind, .gapDelete)
        XCTAssertEqual(event.replayId, 7)
        XCTAssertNil(event.commitTimestamp)
        XCTAssertTrue(event.idsAreExact)
        XCTAssertEqual(ChangeEvent.channel(of: "Widget__c"), "/data/Widget__ChangeEvent")
        XCTAssertEqual(ChangeEvent.channel(of: "Contact"), "/data/ContactChangeEvent")
        for bad in [#"{"payload":{}}"#, #"{"event":{"replayId":1},"payload":{}}"#,
                    #"{"event":{"replayId":1},"payload":{"ChangeEventHeader":{"entityName":"X","changeType":"NOPE","recordIds":[]}}}"#,
                    #"{"event":{"replayId":1},"payload":{"ChangeEventHeader":{"entityName":"X","changeType":"CREATE","recordIds":[1]}}}"#] {
            XCTAssertThrowsError(try ChangeEvent.parse(channel: "/data/X", data: try data(bad).root), bad) {
                XCTAssertEqual(($0 as? StoreError)?.code, .server)
            }
        }
        let wildcard = try data(#"{"event":{"replayId":1},"payload":{"ChangeEventHeader":{"entityName":"Contact","changeType":"UPDATE","recordIds":["003*"]}}}"#)
        XCTAssertFalse(try ChangeEvent.parse(channel: "/data/ContactChangeEvent", data: wildcard.root).idsAreExact)
        let stamped = try data(#"{"event":{"replayId":2},"payload":{"ChangeEventHeader":{"entityName":"Contact","changeType":"UPDATE","recordIds":["003000000000001AAA"],"commitTimestamp":1767225600000}}}"#)
        XCTAssertEqual(try ChangeEvent.parse(channel: "/data/ContactChangeEvent", data: stamped.root).commitTimestamp, 1_767_225_600_000)
    }


    func testAnExpiredTokenMidStreamIsRefreshedAndTheStreamGoesOn() throws {
        let server = try DevServerProcess(["--seed", "Contact=1"] + Self.serverFlags)
        // Tokens of the password grant, which the fault below expires (the fixed test token stays).
        var request = HTTPRequest(method: "POST", url: server.url + "/services/oauth2/token")
        request.headers = ["Content-Type: application/x-www-form-urlencoded"]
        request.body = Array("grant_type=password&username=dev%40example.com&password=devpassword&client_id=test".utf8)
        let body = Data(try HTTPClient().perform(request, settings: HTTPSettings(), cancel: nil).body)
        let tokens = try XCTUnwrap(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let (manager, _) = try setUp(server)
        var remote = RemoteConfig(instanceURL: server.url, accessToken: try XCTUnwrap(tokens["access_token"] as? String))
        remote.refreshToken = tokens["refresh_token"] as? String
        remote.clientId = "test"
        manager.setRemote(remote)
        let events = try startLive(manager)
        let admin = RestClient(config: server.remote)
        XCTAssertEqual(try admin.send("PUT", "/__devserver/faults", body: Array("POST /cometd/* expire-tokens times=1".utf8)).status, 200)
        _ = try created(server, "AfterRefresh")
        XCTAssertTrue(events.wait(30) { (try? self.entry("AfterRefresh")) != nil }, "\(events.all.suffix(3))")
        // The connect after that delivery met the expired token, refreshed it and went on.
        XCTAssertTrue(events.wait { ((try? admin.send("GET", "/__devserver/faults").text) ?? "").contains("fired 1") })
        _ = try created(server, "AfterThat")
        XCTAssertTrue(events.wait(30) { (try? self.entry("AfterThat")) != nil }, "\(events.all.suffix(3))")
        XCTAssertEqual(events.stream?["state"] as? String, "live")
        manager.live.stop()
    }


    func testAQueryThatCannotJudgeARecordAloneReSyncsOnItsEvents() throws {
        let server = try DevServerProcess(["--seed", "Contact=2"] + Self.serverFlags)
        let (manager, down) = try setUp(server, query: "SELECT LastName FROM Contact LIMIT 1000")
        let events = try startLive(manager)
        let runs = events.done(down)
        let id = try created(server, "Limited")
        XCTAssertTrue(events.wait { (try? self.entry("Limited")) != nil }, "\(events.all.suffix(3))")
        XCTAssertGreaterThan(events.done(down), runs, "brought by a reSync of the sync")
        // A delete is still applied by id.
        _ = try server.call("DELETE", "sobjects/Contact/\(id)")
        XCTAssertTrue(events.wait { (try? self.entry("Limited")) == nil })
        manager.live.stop()
    }

}
