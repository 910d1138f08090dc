// docs/sync.md#datasync: the datasync sync down and sync up targets against the dev server's
// /tables routes (--datasync), a real process on 127.0.0.1.
import XCTest
import Foundation
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

final class DatasyncTests: StoreTestCase {
    static let down = #"{"type":"datasync","table":"todo"}"#
    static let up = #"{"type":"datasync","table":"todo"}"#
    static let leave = #"{"mergeMode":"LEAVE_IF_CHANGED"}"#

    private func server(_ extra: [String] = []) throws -> DevServerProcess {
        try DevServerProcess(["--datasync", "--admin"] + extra)
    }

    private func manager(_ server: DevServerProcess) throws -> SyncManager {
        let store = try self.store
        if !store.soupExists("todo") {
            try store.registerSoup("todo", specsJSON: #"[{"path":"id","type":"string"},{"path":"updatedAt","type":"string"}]"#)
        }
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        return manager
    }

    private func run(_ manager: SyncManager, _ start: () throws -> Int64) throws -> SyncState {
        let id = try start()
        return try manager.wait(id: id, timeoutMs: 60_000)
    }

    private func local() throws -> [Entry] {
        let page = try smart("select {todo:_soup} from {todo} order by {todo:_soupEntryId}", pageSize: 100_000)
        return page.items.compactMap { ($0 as? [Any])?.first as? Entry }
    }

    private func localEntry(_ id: String) throws -> Entry? { try local().first { $0["id"] as? String == id } }

    /// Every row of the server's table, deleted ones included (following nextLink).
    private func remote(_ server: DevServerProcess, includeDeleted: Bool = true) throws -> [[String: Any]] {
        var rows: [[String: Any]] = []
        var path: String? = "/tables/todo?__includedeleted=\(includeDeleted)"
        while let p = path {
            let answer = try server.call("GET", p) as? [String: Any]
            rows += (answer?["items"] as? [[String: Any]]) ?? []
            path = (answer?["nextLink"] as? String).map { String($0.dropFirst(server.url.count)) }
        }
        return rows
    }

    /// A local edit as a host makes it: the changed entry, flagged dirty.
    private func edit(_ entry: Entry, _ changes: [String: Any]) throws {
        var e = entry
        for (k, v) in changes { e[k] = v }
        e["__local__"] = true
        if e["__locally_created__"] as? Bool != true { e["__locally_updated__"] = true }
        try upsert("todo", try jsonText([e]))
    }

    // Many rows sharing one updatedAt across several pages: every row once, none twice; then
    // incremental runs fetch only from the boundary millisecond on.
    func testPagingAcrossEqualUpdatedAtAndIncrementalPulls() throws {
        let server = try self.server(["--datasync-seed", "todo=230", "--datasync-page-size", "25"])
        let manager = try self.manager(server)
        let state = try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: "pull", callback: nil) }
        XCTAssertEqual(state.status, .done, state.error)
        XCTAssertEqual(state.totalSize, 230)
        let ids = try local().compactMap { $0["id"] as? String }
        XCTAssertEqual(ids.count, 230)
        XCTAssertEqual(Set(ids).count, 230)
        XCTAssertEqual(try local().filter { $0["version"] == nil || $0["__local__"] as? Bool != false }.count, 0)

        _ = try server.call("PUT", "/tables/todo/seed-todo-000007", body: #"{"id":"seed-todo-000007","title":"changed","rank":7}"#)
        _ = try server.call("PUT", "/tables/todo/seed-todo-000100", body: #"{"id":"seed-todo-000100","title":"changed too","rank":100}"#)
        XCTAssertEqual(try run(manager) { try manager.reSync(name: "pull", callback: nil) }.status, .done)
        XCTAssertEqual(try localEntry("seed-todo-000007")?["title"] as? String, "changed")
        XCTAssertEqual(try localEntry("seed-todo-000100")?["title"] as? String, "changed too")
        XCTAssertEqual(try local().count, 230)
        // The newest stamp is one row's: the next run reads only that millisecond again.
        let again = try run(manager) { try manager.reSync(name: "pull", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(again.totalSize, 1)
    }

    // Rows updated while a pull pages through the table move to its end. A client that follows
    // the server's $skip nextLink then skips as many rows as moved; the (updatedAt, id) position
    // cannot skip any.
    func testRowsChangedDuringThePullAreNotSkipped() throws {
        let server = try self.server(["--datasync-seed", "todo=200/1", "--datasync-page-size", "20",
                                      "--faults", "GET /tables/todo* latency=120"])
        let manager = try self.manager(server)
        let client = RestClient(config: server.remote)
        let writer = Thread {
            usleep(200_000) // the first page has been read
            for i in 1...15 {
                let id = String(format: "seed-todo-%06d", i)
                _ = try? client.send("PUT", "/tables/todo/\(id)", body: Array(#"{"id":"\#(id)","title":"moved","rank":\#(i)}"#.utf8))
            }
        }
        writer.start()
        let state = try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }
        XCTAssertEqual(state.status, .done, state.error)
        let ids = try local().compactMap { $0["id"] as? String }
        XCTAssertEqual(Set(ids).count, 200, "rows missing after a pull during writes")
        XCTAssertEqual(ids.count, 200)
    }

    // A row soft-deleted on the server removes its clean local entry; a dirty one stays under
    // LEAVE_IF_CHANGED; OVERWRITE removes it too.
    func testSoftDeleteRemovesLocalEntries() throws {
        let server = try self.server(["--datasync-seed", "todo=5/1"])
        let manager = try self.manager(server)
        let down = try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: Self.leave, name: "pull", callback: nil) }
        XCTAssertEqual(down.status, .done, down.error)
        XCTAssertEqual(try local().count, 5)
        try edit(try XCTUnwrap(try localEntry("seed-todo-000002")), ["title": "mine"])
        _ = try server.call("DELETE", "/tables/todo/seed-todo-000001")
        _ = try server.call("DELETE", "/tables/todo/seed-todo-000002")
        XCTAssertEqual(try run(manager) { try manager.reSync(name: "pull", callback: nil) }.status, .done)
        XCTAssertNil(try localEntry("seed-todo-000001"))
        XCTAssertEqual(try localEntry("seed-todo-000002")?["title"] as? String, "mine")
        XCTAssertEqual(try local().count, 4)
        let overwrite = try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }
        XCTAssertEqual(overwrite.status, .done, overwrite.error)
        XCTAssertNil(try localEntry("seed-todo-000002"))
        XCTAssertEqual(try remote(server).filter { $0["deleted"] as? Bool == true }.count, 2, "soft delete keeps the rows")
    }

    // Creates, updates and deletes go up; the created entry takes the engine's id, the server's
    // version and updatedAt; a create whose answer is lost (drop after commit) is retried with
    // the same id and makes exactly one row.
    func testPushRoundTripAndLostCreateMakesOneRow() throws {
        let server = try self.server(["--datasync-seed", "todo=2/1", "--faults", "POST /tables/todo drop=after times=1"])
        let manager = try self.manager(server)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        try upsert("todo", #"[{"title":"new one","rank":42,"complete":false,"__local__":true,"__locally_created__":true}]"#)
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "renamed"])
        try edit(try XCTUnwrap(try localEntry("seed-todo-000002")), ["__locally_deleted__": true])
        let up = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: Self.leave, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done, up.error)
        XCTAssertEqual(up.conflicts + up.errors, 0, up.error)
        let rows = try remote(server)
        XCTAssertEqual(rows.filter { $0["title"] as? String == "new one" }.count, 1, "the lost create made a second row")
        XCTAssertEqual(rows.first { $0["id"] as? String == "seed-todo-000001" }?["title"] as? String, "renamed")
        XCTAssertEqual(rows.first { $0["id"] as? String == "seed-todo-000002" }?["deleted"] as? Bool, true)
        let created = try XCTUnwrap(try local().first { $0["title"] as? String == "new one" })
        let serverRow = try XCTUnwrap(rows.first { $0["title"] as? String == "new one" })
        XCTAssertEqual(serverRow["createdAt"] as? String, serverRow["updatedAt"] as? String, "the retried create wrote its row again")
        XCTAssertEqual(created["id"] as? String, serverRow["id"] as? String)
        XCTAssertEqual(created["version"] as? String, serverRow["version"] as? String)
        XCTAssertEqual(created["updatedAt"] as? String, serverRow["updatedAt"] as? String)
        XCTAssertEqual(created["__local__"] as? Bool, false)
        XCTAssertNil(created["__sync_create_sent__"])
        XCTAssertNil(try localEntry("seed-todo-000002"))
        // The renamed entry carries the server's new version: a LEAVE_IF_CHANGED edit goes up clean.
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "renamed twice"])
        let second = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: Self.leave, name: nil, callback: nil) }
        XCTAssertEqual(second.conflicts + second.errors, 0, second.error)
        XCTAssertEqual(try remote(server).first { $0["id"] as? String == "seed-todo-000001" }?["title"] as? String, "renamed twice")
    }

    // A PUT replaces the whole row: an update limited by updateFieldlist must still carry the
    // other fields, or the server erases them (docs/sync.md#datasync).
    func testUpdateFieldlistDoesNotEraseTheOtherFields() throws {
        let server = try self.server(["--datasync-seed", "todo=1"])
        let manager = try self.manager(server)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "renamed"])
        let target = #"{"type":"datasync","table":"todo","updateFieldlist":["title"]}"#
        let up = try run(manager) { try manager.syncUp(targetJSON: target, soupName: "todo", optionsJSON: Self.leave, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done, up.error)
        XCTAssertEqual(up.conflicts + up.errors, 0, up.error)
        let row = try XCTUnwrap(try remote(server).first { $0["id"] as? String == "seed-todo-000001" })
        XCTAssertEqual(row["title"] as? String, "renamed")
        XCTAssertEqual(row["rank"] as? Int, 1, "the update erased a field it did not list: \(row)")
        XCTAssertEqual(row["complete"] as? Bool, true, "the update erased a field it did not list: \(row)")
    }

    // A create sent by an earlier run whose answer never came (the process died): the entry
    // kept its id, so the next run's POST meets the row (409 with what was sent) and adopts it.
    func testCreateRetriedByALaterRunAdoptsItsRow() throws {
        let server = try self.server(["--faults", "POST /tables/todo drop=after times=20"])
        let manager = try self.manager(server)
        try upsert("todo", #"[{"title":"once","__local__":true,"__locally_created__":true}]"#)
        let failed = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: nil, name: "push", callback: nil) }
        XCTAssertEqual(failed.status, .failed, "lost answers to every attempt end the run")
        let pending = try XCTUnwrap(try local().first)
        let id = try XCTUnwrap(pending["id"] as? String)
        XCTAssertEqual(pending["__local__"] as? Bool, true)
        XCTAssertEqual(try remote(server).count, 1, "the first attempt made the row")
        _ = try server.call("DELETE", "/__devserver/faults")
        let again = try run(manager) { try manager.reSync(name: "push", callback: nil) }
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(again.conflicts + again.errors, 0, again.error)
        XCTAssertEqual(try remote(server).count, 1)
        XCTAssertEqual(try local().first?["id"] as? String, id)
        XCTAssertEqual(try local().first?["__local__"] as? Bool, false)
    }

    // The same, edited locally after the lost create, LEAVE_IF_CHANGED: the 409 holds what the
    // first attempt sent, so the row is ours and the edit goes as a PUT on its version (not a
    // lasting 409 conflict).
    func testEditAfterALostCreateGoesUpWithoutConflict() throws {
        let server = try self.server(["--faults", "POST /tables/todo drop=after times=20"])
        let manager = try self.manager(server)
        try upsert("todo", #"[{"title":"first","__local__":true,"__locally_created__":true}]"#)
        let failed = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: Self.leave, name: "push", callback: nil) }
        XCTAssertEqual(failed.status, .failed)
        _ = try server.call("DELETE", "/__devserver/faults")
        try edit(try XCTUnwrap(try local().first), ["title": "edited"])
        let again = try run(manager) { try manager.reSync(name: "push", callback: nil) }
        XCTAssertEqual(again.conflicts + again.errors, 0, again.error)
        let rows = try remote(server)
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows.first?["title"] as? String, "edited")
        XCTAssertEqual(try local().first?["version"] as? String, rows.first?["version"] as? String)
        XCTAssertEqual(try local().first?["__local__"] as? Bool, false)
    }

    // LEAVE_IF_CHANGED: a server change since the sync is a conflict (412) with the server's
    // entity in __last_error__, the entry dirty, the state counting it; OVERWRITE then forces.
    func testConflictIsVisibleAndOverwriteForces() throws {
        let server = try self.server(["--datasync-seed", "todo=1"])
        let manager = try self.manager(server)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        _ = try server.call("PUT", "/tables/todo/seed-todo-000001", body: #"{"title":"theirs","rank":1}"#)
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "ours"])
        let up = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: Self.leave, name: nil, callback: nil) }
        XCTAssertEqual(up.status, .done)
        XCTAssertEqual(up.conflicts, 1)
        XCTAssertEqual(up.errorCode, ErrorCode.conflict.rawValue)
        let entry = try XCTUnwrap(try localEntry("seed-todo-000001"))
        XCTAssertEqual(entry["__local__"] as? Bool, true)
        let error = try XCTUnwrap(try parseJSON(try XCTUnwrap(entry["__last_error__"] as? String)) as? [[String: Any]])
        XCTAssertEqual(error.first?["errorCode"] as? String, "CONFLICT")
        XCTAssertEqual((error.first?["serverRecord"] as? [String: Any])?["title"] as? String, "theirs")
        XCTAssertEqual(try remote(server).first?["title"] as? String, "theirs")
        let forced = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }
        XCTAssertEqual(forced.conflicts + forced.errors, 0, forced.error)
        XCTAssertEqual(try remote(server).first?["title"] as? String, "ours")
        XCTAssertEqual(try localEntry("seed-todo-000001")?["__local__"] as? Bool, false)
    }

    // An edit to a row another client soft-deleted (and a create meeting a soft-deleted row of
    // its id): LEAVE_IF_CHANGED keeps each an ENTITY_IS_DELETED conflict, run after run; OVERWRITE
    // (the local copy wins) brings the rows back with the entries' values (a replace with
    // __includedeleted=true and "deleted": false), each entry clean with the returned entity, the
    // undelete's lost answer retried; a pull then keeps them.
    func testOverwriteBringsBackRowsSoftDeletedOnTheServer() throws {
        let server = try self.server(["--datasync-seed", "todo=2/1"])
        let manager = try self.manager(server)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: Self.leave, name: "pull", callback: nil) }.status, .done)
        _ = try server.call("POST", "/tables/todo", body: #"{"id":"old-1","title":"before"}"#)
        for id in ["seed-todo-000001", "old-1"] { _ = try server.call("DELETE", "/tables/todo/\(id)") } // another client
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "mine", "rank": 100])
        try upsert("todo", #"[{"id":"old-1","title":"made here","__local__":true,"__locally_created__":true}]"#)

        for _ in 0..<2 {
            let leave = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: Self.leave, name: nil, callback: nil) }
            XCTAssertEqual(leave.status, .done, leave.error)
            XCTAssertEqual(leave.conflicts, 2, leave.error)
            for id in ["seed-todo-000001", "old-1"] {
                let entry = try XCTUnwrap(try localEntry(id))
                XCTAssertEqual(entry["__local__"] as? Bool, true)
                let error = try parseJSON(try XCTUnwrap(entry["__last_error__"] as? String)) as? [[String: Any]]
                XCTAssertEqual(error?.first?["errorCode"] as? String, "ENTITY_IS_DELETED", id)
            }
            XCTAssertEqual(try remote(server, includeDeleted: false).map { $0["id"] as? String }, ["seed-todo-000002"])
        }

        // The undelete's answer is lost once: its retry replaces the row, live by then, again.
        let rule = try RestClient(config: server.remote).send("PUT", "/__devserver/faults", body: Array("PUT /tables/todo/seed-todo-000001 drop=after after=1 times=1".utf8))
        XCTAssertEqual(rule.status, 200)
        let forced = try run(manager) { try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }
        XCTAssertEqual(forced.status, .done, forced.error)
        XCTAssertEqual(forced.conflicts + forced.errors, 0, forced.error)
        let fired = try RestClient(config: server.remote).send("GET", "/__devserver/faults")
        XCTAssertTrue(String(decoding: fired.body, as: UTF8.self).contains("fired 1)"), "the undelete's answer was not dropped")
        let rows = try remote(server, includeDeleted: false)
        XCTAssertEqual(Set(rows.compactMap { $0["id"] as? String }), ["seed-todo-000001", "seed-todo-000002", "old-1"])
        for (id, title) in [("seed-todo-000001", "mine"), ("old-1", "made here")] {
            let row = try XCTUnwrap(rows.first { $0["id"] as? String == id })
            XCTAssertEqual(row["title"] as? String, title)
            XCTAssertEqual(row["deleted"] as? Bool, false)
            let entry = try XCTUnwrap(try localEntry(id))
            XCTAssertEqual(entry["__local__"] as? Bool, false, id)
            XCTAssertNil(entry["__last_error__"] as? String, id)
            XCTAssertEqual(entry["version"] as? String, row["version"] as? String, id)
            XCTAssertEqual(entry["updatedAt"] as? String, row["updatedAt"] as? String, id)
            XCTAssertEqual(entry["deleted"] as? Bool, false, id)
        }
        XCTAssertEqual(rows.first { $0["id"] as? String == "seed-todo-000001" }?["rank"] as? Int, 100)
        XCTAssertEqual(try run(manager) { try manager.reSync(name: "pull", callback: nil) }.status, .done)
        XCTAssertEqual(try local().count, 3)
        XCTAssertEqual(try local().filter { $0["__local__"] as? Bool != false }.count, 0)
    }

    // A host edit made while its push is in flight stays dirty (with the version the push
    // produced), and goes up in the next run without a false conflict.
    func testEditDuringPushStaysDirty() throws {
        let server = try self.server(["--datasync-seed", "todo=1", "--faults", "PUT /tables/todo/* latency=700"])
        let manager = try self.manager(server)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "first"])
        let id = try manager.syncUp(targetJSON: Self.up, soupName: "todo", optionsJSON: Self.leave, name: "push", callback: nil)
        // The PUT is in flight once the latency rule fired for it (the server then waits 700 ms).
        let deadline = nowMillis() + 20_000
        while nowMillis() < deadline {
            let rules = try RestClient(config: server.remote).send("GET", "/__devserver/faults")
            if String(decoding: rules.body, as: UTF8.self).contains("fired 1)") { break }
            usleep(10_000)
        }
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "second"])
        let up = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(up.conflicts + up.errors, 0, up.error)
        XCTAssertEqual(try remote(server).first?["title"] as? String, "first")
        let entry = try XCTUnwrap(try localEntry("seed-todo-000001"))
        XCTAssertEqual(entry["title"] as? String, "second")
        XCTAssertEqual(entry["__local__"] as? Bool, true, "the edit made during the push was lost")
        XCTAssertEqual(entry["version"] as? String, try remote(server).first?["version"] as? String)
        let next = try run(manager) { try manager.reSync(name: "push", callback: nil) }
        XCTAssertEqual(next.conflicts + next.errors, 0, next.error)
        XCTAssertEqual(try remote(server).first?["title"] as? String, "second")
    }

    // Sync down merge modes: LEAVE_IF_CHANGED keeps a dirty entry, OVERWRITE replaces it.
    func testSyncDownMergeModes() throws {
        let server = try self.server(["--datasync-seed", "todo=1"])
        let manager = try self.manager(server)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        try edit(try XCTUnwrap(try localEntry("seed-todo-000001")), ["title": "local"])
        _ = try server.call("PUT", "/tables/todo/seed-todo-000001", body: #"{"title":"server","rank":1}"#)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: Self.leave, name: nil, callback: nil) }.status, .done)
        XCTAssertEqual(try localEntry("seed-todo-000001")?["title"] as? String, "local")
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        XCTAssertEqual(try localEntry("seed-todo-000001")?["title"] as? String, "server")
        XCTAssertEqual(try localEntry("seed-todo-000001")?["__local__"] as? Bool, false)
        XCTAssertEqual(try local().count, 1)
    }

    // A row that stops matching the target's filter is never sent again: cleanResyncGhosts
    // lists the filter's live ids and removes it.
    func testCleanResyncGhostsUsesTheFilter() throws {
        let server = try self.server(["--datasync-seed", "todo=6/1"])
        let manager = try self.manager(server)
        let target = #"{"type":"datasync","table":"todo","filter":"complete eq false"}"#
        let id = try manager.syncDown(targetJSON: target, soupName: "todo", optionsJSON: nil, name: nil, callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        XCTAssertEqual(try local().count, 4) // rows 1 and 4 are complete
        _ = try server.call("PUT", "/tables/todo/seed-todo-000002", body: #"{"title":"done now","complete":true,"rank":2}"#)
        try manager.reSync(id: id, callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        XCTAssertEqual(try local().count, 4, "the completed row is a ghost until cleaned")
        let ended = DispatchSemaphore(value: 0)
        let report = StateLog()
        try manager.cleanResyncGhosts(id: id) { text in
            report.callback(text)
            if !text.contains("RUNNING") { ended.signal() }
        }
        XCTAssertEqual(ended.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(report.statuses.last, "DONE")
        XCTAssertEqual(try local().compactMap { $0["id"] as? String }.sorted(), ["seed-todo-000003", "seed-todo-000005", "seed-todo-000006"])
    }

    // remote.authHeader: the token goes in that header (App Service's X-ZUMO-AUTH) instead of
    // Authorization; a name that is no header name is refused.
    func testAuthHeader() throws {
        let server = try self.server(["--datasync-seed", "todo=3"])
        let manager = try self.manager(server)
        var remote = try RemoteConfig.parse(#"{"instanceUrl":"\#(server.url)","accessToken":"\#(DevServerProcess.token)","authHeader":"X-ZUMO-AUTH"}"#)
        XCTAssertEqual(remote.authHeader, "X-ZUMO-AUTH")
        manager.setRemote(remote)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.status, .done)
        XCTAssertEqual(try local().count, 3)
        // No Authorization header is sent: the Salesforce routes (which read only that) refuse.
        XCTAssertThrowsError(try RestClient(config: remote).send("GET", "limits")) { XCTAssertEqual(($0 as? StoreError)?.code, .auth) }
        remote.accessToken = "wrong"
        manager.setRemote(remote)
        XCTAssertEqual(try run(manager) { try manager.syncDown(targetJSON: Self.down, soupName: "todo", optionsJSON: nil, name: nil, callback: nil) }.errorCode, ErrorCode.auth.rawValue)
        for bad in ["", "X-ZUMO-AUTH: x", "Bad\\nHeader"] {
            XCTAssertThrowsError(try RemoteConfig.parse(#"{"instanceUrl":"http://127.0.0.1:1","accessToken":"t","authHeader":"\#(bad)"}"#)) {
                XCTAssertEqual(($0 as? StoreError)?.code, .argument)
            }
        }
    }

    // The target is checked when the sync is created.
    func testTargetsAreChecked() throws {
        let server = try self.server()
        let manager = try self.manager(server)
        for bad in [#"{"type":"datasync"}"#, #"{"type":"datasync","table":"todo","idFieldName":"Id"}"#] {
            XCTAssertThrowsError(try manager.createSyncDown(targetJSON: bad, soupName: "todo", optionsJSON: nil, name: nil)) {
                XCTAssertEqual(($0 as? StoreError)?.code, .argument)
            }
            XCTAssertThrowsError(try manager.createSyncUp(targetJSON: bad, soupName: "todo", optionsJSON: nil, name: nil)) {
                XCTAssertEqual(($0 as? StoreError)?.code, .argument)
            }
        }
    }
}
