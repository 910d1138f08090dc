// The twophase target (docs/sync.md#two-phase) against a real dev server started with
// --twophase: one test per rule of the protocol, both timestamp formats, and the crash and
// lost-answer cases (exactly one server row, no lost edit).
import XCTest
import Foundation
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

final class TwoPhaseTests: StoreTestCase {
    /// `todo` (id key `id`, `YYYY-MM-DD HH:MM:SS`) into soup todo; `budget` (id key `bid`,
    /// ISO-8601) into soup budget: the dev server's default tables.
    let target = #"{"type":"twophase","tables":[{"name":"todo","idKey":"id"},{"name":"budget","soupName":"budget","idKey":"bid","timestampFormat":"iso8601"}]}"#
    static let leave = #"{"mergeMode":"LEAVE_IF_CHANGED"}"#

    func manager(_ server: DevServerProcess) throws -> SyncManager {
        let store = try self.store
        for (soup, key) in [("todo", "id"), ("budget", "bid")] where !store.soupExists(soup) {
            try store.registerSoup(soup, specsJSON: #"[{"path":"\#(key)","type":"string"},{"path":"__local__","type":"string"}]"#)
        }
        let manager = try store.syncManager()
        var remote = server.remote
        remote.retryBaseDelayMs = 20
        manager.setRemote(remote)
        return manager
    }

    @discardableResult
    func sync(_ manager: SyncManager, up: Bool, options: String? = nil, expect: SyncState.Status = .done,
              file: StaticString = #filePath, line: UInt = #line) throws -> SyncState {
        let id = up ? try manager.syncUp(targetJSON: target, soupName: "todo", optionsJSON: options, name: nil, callback: nil)
                    : try manager.syncDown(targetJSON: target, soupName: "todo", optionsJSON: options, name: nil, callback: nil)
        let state = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(state.status, expect, state.error, file: file, line: line)
        return state
    }

    func local(_ soup: String = "todo") throws -> [Entry] {
        let spec = try jsonText(["queryType": "smart", "pageSize": 100_000,
                                 "smartSql": "select {\(soup):_soup} from {\(soup)} order by {\(soup):_soupEntryId}"] as [String: Any])
        let page = try CursorPage(try self.store.runSmartQuery(specJSON: spec))
        return page.items.compactMap { ($0 as? [Any])?.first as? Entry }
    }

    /// The server's rows of `table` by id, through the protocol itself (either answer shape).
    func serverRows(_ server: DevServerProcess, _ table: String = "todo", key: String = "id") throws -> [String: [String: Any]] {
        let fetched = try server.call("GET", "/twophase/fetch?tables=\(table)") as? [String: [[String: Any]]] ?? [:]
        let ids = (fetched[table] ?? []).compactMap { $0[key] as? String }
        let answer = try server.call("POST", "/twophase/synchronise", body: try jsonText(["get": [table: ids]])) as? [String: Any]
        let rows = ((answer?["get"] as? [String: [[String: Any]]]) ?? (answer as? [String: [[String: Any]]]))?[table] ?? []
        return Dictionary(rows.map { (($0[key] as? String) ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    func synchronise(_ server: DevServerProcess, _ body: [String: Any]) throws -> [String: Any] {
        (try server.call("POST", "/twophase/synchronise", body: try jsonText(body)) as? [String: Any]) ?? [:]
    }

    func upsert(_ soup: String, _ entries: [[String: Any]]) throws {
        _ = try store.upsert(soup: soup, entriesJSON: try jsonText(entries))
    }

    /// Edits entry `id` locally the way a host does: read, change, write back dirty.
    func edit(_ id: String, title: String, soup: String = "todo", key: String = "id", delete: Bool = false) throws {
        guard var entry = try local(soup).first(where: { $0[key] as? String == id }) else { throw TestFailure("no entry \(id)") }
        entry["title"] = title
        entry["__local__"] = true
        entry[delete ? "__locally_deleted__" : "__locally_updated__"] = true
        try upsert(soup, [entry])
    }

    // Phase 1 + get: every row of both tables comes down with its stamp as the server writes it
    // (both formats); a later run brings changed rows and deletes the rows the server no longer has.
    func testSyncDownGetsRowsAndDeletesWhatTheServerDropped() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "4"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let todos = try local(), budgets = try local("budget")
        XCTAssertEqual(todos.count, 4)
        XCTAssertEqual(budgets.count, 4)
        let todoStamp = todos.first?["last_update"] as? String ?? ""
        XCTAssertTrue(todoStamp.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"#, options: .regularExpression) != nil, todoStamp)
        let budgetStamp = budgets.first?["last_update"] as? String ?? ""
        XCTAssertTrue(budgetStamp.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil, budgetStamp)
        XCTAssertTrue(todos.allSatisfy { isBool($0["__local__"], false) })

        let gone = todos[0]["id"] as? String ?? "", changed = budgets[1]["bid"] as? String ?? ""
        var row = try serverRows(server, "budget", key: "bid")[changed] ?? [:]
        row["title"] = "changed on the server"
        row["last_update"] = Timestamp.format(Clock.nowMillis() + 5_000)
        let answer = try synchronise(server, ["delete": ["todo": [gone]], "update": ["budget": [row]]])
        XCTAssertEqual(((answer["update"] as? [String: [[String: Any]]])?["budget"]?.first?["status"]) as? String, "updated")
        try sync(manager, up: false)
        XCTAssertEqual(Set(try local().compactMap { $0["id"] as? String }), Set(todos.dropFirst().compactMap { $0["id"] as? String }))
        XCTAssertEqual(try local("budget").first { $0["bid"] as? String == changed }?["title"] as? String, "changed on the server")
    }

    // Only local and never synced: added with a UUID the engine gives it; the entry is clean
    // afterwards and carries the server's stamp, so the next run has nothing to do.
    func testSyncUpAddsLocalCreatesUnderClientUUIDs() throws {
        let server = try DevServerProcess(["--twophase"])
        let manager = try manager(server)
        try upsert("todo", [["title": "a", "__local__": true, "__locally_created__": true],
                            ["title": "b", "__local__": true, "__locally_created__": true]])
        try upsert("budget", [["title": "c", "cost": 200, "__local__": true, "__locally_created__": true]])
        try sync(manager, up: true)
        let todos = try local(), rows = try serverRows(server)
        XCTAssertEqual(rows.count, 2)
        for entry in todos {
            let id = entry["id"] as? String ?? ""
            XCTAssertEqual(id.count, 36, "a UUID: \(id)")
            XCTAssertEqual(rows[id]?["title"] as? String, entry["title"] as? String)
            XCTAssertEqual(rows[id]?["last_update"] as? String, entry["last_update"] as? String)
            XCTAssertTrue(isBool(entry["__local__"], false))
            XCTAssertNil(entry["__twophase_stamp__"])
        }
        XCTAssertEqual(try serverRows(server, "budget", key: "bid").values.first?["cost"] as? Int, 200)
        let again = try sync(manager, up: true)
        XCTAssertEqual(again.totalSize, 0, "nothing left to do")
    }

    // On both sides: the newer last_update wins. A local edit goes up as an update; a newer
    // server row comes down over a dirty entry with OVERWRITE, and is a conflict that leaves
    // the entry dirty with LEAVE_IF_CHANGED.
    func testNewerLastUpdateWins() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "3"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let ids = try local().compactMap { $0["id"] as? String }
        try edit(ids[0], title: "local edit")
        try sync(manager, up: true)
        XCTAssertEqual(try serverRows(server)[ids[0]]?["title"] as? String, "local edit")

        // The server's row is newer than the local edit (stamped a minute ahead).
        try edit(ids[1], title: "older local edit")
        for id in ids[1...2] {
            var row = try serverRows(server)[id] ?? [:]
            row["title"] = "newer on the server"
            row["last_update"] = Timestamp.formatSpaced(Clock.nowMillis() + 60_000)
            _ = try synchronise(server, ["update": ["todo": [row]]])
        }
        try edit(ids[2], title: "older local edit")
        let leave = try sync(manager, up: true, options: TwoPhaseTests.leave)
        XCTAssertEqual(leave.conflicts, 2)
        let kept = try local().first { $0["id"] as? String == ids[1] }
        XCTAssertEqual(kept?["title"] as? String, "older local edit")
        XCTAssertTrue(isBool(kept?["__local__"], true))
        XCTAssertTrue((kept?["__last_error__"] as? String ?? "").contains("CONFLICT"))
        XCTAssertEqual(try serverRows(server)[ids[1]]?["title"] as? String, "newer on the server")

        try sync(manager, up: true)
        for id in ids[1...2] {
            let entry = try local().first { $0["id"] as? String == id }
            XCTAssertEqual(entry?["title"] as? String, "newer on the server")
            XCTAssertTrue(isBool(entry?["__local__"], false))
        }
    }

    // A sync down leaves dirty entries to the sync up, unless the server's row is newer and
    // the merge mode is OVERWRITE; with LEAVE_IF_CHANGED the local edit is kept.
    func testSyncDownAndDirtyEntries() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "2"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let ids = try local().compactMap { $0["id"] as? String }
        let original = try local().first?["title"] as? String
        try edit(ids[0], title: "local, newer")
        try edit(ids[1], title: "local, older")
        var row = try serverRows(server)[ids[1]] ?? [:]
        row["title"] = "server, newer"
        row["last_update"] = Timestamp.formatSpaced(Clock.nowMillis() + 60_000)
        _ = try synchronise(server, ["update": ["todo": [row]]])
        try sync(manager, up: false, options: TwoPhaseTests.leave)
        XCTAssertEqual(try local().map { $0["title"] as? String }, ["local, newer", "local, older"])
        try sync(manager, up: false)
        let after = try local()
        XCTAssertEqual(after.map { $0["title"] as? String }, ["local, newer", "server, newer"])
        XCTAssertTrue(isBool(after[0]["__local__"], true), "left to the sync up")
        XCTAssertTrue(isBool(after[1]["__local__"], false))
        XCTAssertEqual(try serverRows(server)[ids[0]]?["title"] as? String, original, "a sync down sends nothing")
    }

    // Only local and synced before: deleted on the server, so deleted locally; a dirty one is
    // added again with OVERWRITE (the edit is not lost) and left with ENTITY_IS_DELETED with
    // LEAVE_IF_CHANGED. A local delete deletes the server's row.
    func testRowsDeletedOnEitherSide() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "4"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let ids = try local().compactMap { $0["id"] as? String }
        _ = try synchronise(server, ["delete": ["todo": Array(ids[0...2])]])
        try edit(ids[1], title: "edited here, deleted there")
        try edit(ids[2], title: "edited here too")
        try edit(ids[3], title: "", delete: true)
        try sync(manager, up: true, options: TwoPhaseTests.leave)
        let left = try local()
        XCTAssertEqual(left.compactMap { $0["id"] as? String }, [ids[1], ids[2]])
        XCTAssertTrue(left.allSatisfy { ($0["__last_error__"] as? String ?? "").contains("ENTITY_IS_DELETED") })
        XCTAssertTrue(try serverRows(server).isEmpty)

        try sync(manager, up: true)
        let rows = try serverRows(server)
        XCTAssertEqual(rows[ids[1]]?["title"] as? String, "edited here, deleted there")
        XCTAssertEqual(rows.count, 2)
        XCTAssertTrue(try local().allSatisfy { isBool($0["__local__"], false) })
    }

    // The server applies phase 2 and the answer is lost, on every attempt of the run: the run
    // fails, and the next one converges with exactly one server row per entry (both formats),
    // the entries clean.
    func testLostAnswerMakesOneRow() throws {
        let server = try DevServerProcess(["--twophase", "--faults", "POST /twophase/synchronise drop=after times=3"])
        let manager = try manager(server)
        try upsert("todo", [["title": "once", "__local__": true, "__locally_created__": true]])
        try upsert("budget", [["title": "once", "__local__": true, "__locally_created__": true]])
        let failed = try sync(manager, up: true, expect: .failed)
        XCTAssertEqual(failed.errorCode, ErrorCode.network.rawValue)
        XCTAssertEqual(try serverRows(server).count, 1, "the server applied the call")
        try sync(manager, up: true)
        XCTAssertEqual(try serverRows(server).count, 1)
        XCTAssertEqual(try serverRows(server, "budget", key: "bid").count, 1)
        XCTAssertEqual(try local().count, 1)
        XCTAssertTrue(try (local() + local("budget")).allSatisfy { isBool($0["__local__"], false) })
        XCTAssertEqual(try serverRows(server).values.first?["title"] as? String, "once")
    }

    // A kill between the phases (phase 2 never reaches the server) and an update whose
    // answer is lost: each next run converges, with the same rows and no duplicate.
    func testInterruptedRunsConverge() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "2", "--admin"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let ids = try local().compactMap { $0["id"] as? String }
        try edit(ids[0], title: "after a crash")
        try upsert("todo", [["title": "new", "__local__": true, "__locally_created__": true]])
        try setFaults(server, "POST /twophase/synchronise drop=before times=3")
        try sync(manager, up: true, expect: .failed)
        let stamped = try local().first { $0["title"] as? String == "new" }?["id"] as? String
        XCTAssertNotNil(stamped, "the UUID is stored before phase 2")
        try setFaults(server, "POST /twophase/synchronise drop=after times=3")
        try edit(ids[1], title: "lost answer")
        try sync(manager, up: true, expect: .failed)
        try setFaults(server, "")
        try sync(manager, up: true)
        let rows = try serverRows(server)
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(rows[ids[0]]?["title"] as? String, "after a crash")
        XCTAssertEqual(rows[ids[1]]?["title"] as? String, "lost answer")
        XCTAssertEqual(rows[stamped ?? ""]?["title"] as? String, "new")
        XCTAssertTrue(try local().allSatisfy { isBool($0["__local__"], false) })
    }

    func setFaults(_ server: DevServerProcess, _ spec: String) throws {
        let response = try RestClient(config: server.remote).send(spec.isEmpty ? "DELETE" : "PUT", "/__devserver/faults",
                                                                    body: Array(spec.utf8))
        XCTAssertTrue(response.isSuccess, "faults: HTTP \(response.status) \(response.text)")
    }

    // A server written from the protocol's description answers phase 2 as its fetch does: per
    // table, the full rows of the ids sent (gets, then what was added or updated, with its
    // last_update); an id left out was deleted meanwhile. Rows come down, adds and updates end
    // clean with the server's row, a delete is done, and the rows deleted while the call was in
    // flight are: a clean entry deleted here, an edited one added again by the next run.
    func testPlainAnswerShape() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "4", "--twophase-plain", "--admin"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let ids = try local().compactMap { $0["id"] as? String }
        XCTAssertEqual(try local("budget").count, 4)
        guard ids.count == 4 else { throw TestFailure("the sync down's gets: \(ids.count) of 4 rows") }
        var row = try serverRows(server)[ids[3]] ?? [:]
        row["title"] = "changed on the server"
        row["last_update"] = Timestamp.formatSpaced(Clock.nowMillis() + 5_000)
        XCTAssertNotNil(try synchronise(server, ["update": ["todo": [row]]])["todo"], "the plain shape")
        try upsert("todo", [["title": "new", "__local__": true, "__locally_created__": true]])
        try edit(ids[0], title: "local edit")
        try edit(ids[1], title: "", delete: true)
        try edit(ids[2], title: "edited here, deleted there meanwhile")
        // Phase 2 waits 1.5 s: the server deletes two rows between the phases.
        try setFaults(server, "POST /twophase/synchronise latency=1500 times=1")
        let id = try manager.syncUp(targetJSON: target, soupName: "todo", optionsJSON: nil, name: nil, callback: nil)
        let deadline = Date().addingTimeInterval(10)
        while try local().first(where: { $0["title"] as? String == "new" })?["__twophase_stamp__"] == nil && Date() < deadline {
            usleep(20_000)
        }
        _ = try synchronise(server, ["delete": ["todo": [ids[2], ids[3]]]])
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 30_000).status, .done)

        var rows = try serverRows(server)
        let entries = try local()
        let added = entries.first { $0["title"] as? String == "new" }
        let newId = added?["id"] as? String ?? ""
        XCTAssertEqual(Set(rows.keys), [newId, ids[0]])
        XCTAssertEqual(rows[ids[0]]?["title"] as? String, "local edit")
        for id in [newId, ids[0]] {
            let entry = entries.first { $0["id"] as? String == id }
            XCTAssertTrue(isBool(entry?["__local__"], false), "\(id) is clean")
            XCTAssertNil(entry?["__twophase_stamp__"])
            XCTAssertEqual(entry?["last_update"] as? String, rows[id]?["last_update"] as? String)
        }
        XCTAssertNil(entries.first { $0["id"] as? String == ids[1] }, "the local delete is done")
        XCTAssertNil(entries.first { $0["id"] as? String == ids[3] }, "a get left out of the answer: deleted there")
        let kept = entries.first { $0["id"] as? String == ids[2] }
        XCTAssertTrue(isBool(kept?["__local__"], true), "an update left out of the answer: deleted there, the edit kept")
        XCTAssertTrue(isBool(kept?["__locally_created__"], true))

        try sync(manager, up: true)
        rows = try serverRows(server)
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(rows[ids[2]]?["title"] as? String, "edited here, deleted there meanwhile")
        XCTAssertTrue(try local().allSatisfy { isBool($0["__local__"], false) })
        XCTAssertEqual(try sync(manager, up: true).totalSize, 0, "nothing left to do")
    }

    // A server that keeps UUIDs as primary keys refuses a whole call (409, nothing applied) whose
    // add names an id it has: the retry of a call whose answer was lost, within the run or in the
    // next one. The refused add is that add (the row is there: one row, the entry clean), and the
    // other changes of the run go through.
    func testRefusedRepeatedAddIsThatAdd() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "3", "--twophase-plain", "--admin"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let ids = try local().compactMap { $0["id"] as? String }
        guard ids.count == 3 else { throw TestFailure("the sync down's gets: \(ids.count) of 3 rows") }

        // Within the run: the answer is lost once, the REST client sends the call again: 409.
        try upsert("todo", [["title": "first", "__local__": true, "__locally_created__": true]])
        try edit(ids[0], title: "edit 1")
        try setFaults(server, "POST /twophase/synchronise drop=after times=1")
        try sync(manager, up: true)
        var rows = try serverRows(server)
        XCTAssertEqual(rows.count, 4, "one row per entry: \(rows)")
        XCTAssertEqual(rows[ids[0]]?["title"] as? String, "edit 1")
        XCTAssertTrue(try local().allSatisfy { isBool($0["__local__"], false) })

        // In the next run: every answer of the run is lost; meanwhile the host edits, deletes
        // and adds more; the next run's call names the add the server has, with those changes.
        try upsert("todo", [["title": "second", "__local__": true, "__locally_created__": true]])
        try setFaults(server, "POST /twophase/synchronise drop=after times=3")
        try sync(manager, up: true, expect: .failed)
        XCTAssertEqual(try serverRows(server).count, 5, "the first attempt was applied")
        try setFaults(server, "")
        try edit(ids[1], title: "edit 2")
        try edit(ids[2], title: "", delete: true)
        try upsert("todo", [["title": "third", "__local__": true, "__locally_created__": true]])
        try sync(manager, up: true)
        rows = try serverRows(server)
        let titles = rows.values.compactMap { $0["title"] as? String }.sorted()
        XCTAssertEqual(titles, ["edit 1", "edit 2", "first", "second", "third"])
        let entries = try local()
        XCTAssertEqual(entries.count, 5)
        XCTAssertTrue(entries.allSatisfy { isBool($0["__local__"], false) }, "\(entries)")
        XCTAssertEqual(Set(entries.compactMap { $0["id"] as? String }), Set(rows.keys))
        XCTAssertEqual(try sync(manager, up: true).totalSize, 0, "nothing left to do")
    }

    // A 409 that no fetch explains (the server holds an id it does not list) blocks only the add
    // it is about: the other changes go without the adds, then each add alone; the add refused on
    // its own stays dirty with the server's reason.
    func testUnexplainedRefusalBlocksOnlyItsAdd() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "1", "--twophase-plain", "--admin"])
        let manager = try manager(server)
        try sync(manager, up: false)
        let seeded = try local().first?["id"] as? String ?? ""
        try edit(seeded, title: "edited")
        try upsert("todo", [["title": "a", "__local__": true, "__locally_created__": true],
                            ["title": "b", "__local__": true, "__locally_created__": true]])
        // Requests: the whole call (409), the rest without adds, add a alone, add b alone (409).
        try setFaults(server, "POST /twophase/synchronise status=409 times=1; POST /twophase/synchronise status=409 after=2 times=1")
        let state = try sync(manager, up: true)
        XCTAssertEqual(state.errors, 1)
        let rows = try serverRows(server)
        XCTAssertEqual(rows.values.compactMap { $0["title"] as? String }.sorted(), ["a", "edited"])
        let b = try local().first { $0["title"] as? String == "b" }
        XCTAssertTrue(isBool(b?["__local__"], true))
        XCTAssertTrue((b?["__last_error__"] as? String ?? "").contains("409"), b?["__last_error__"] as? String ?? "")
        try setFaults(server, "")
        try sync(manager, up: true)
        XCTAssertEqual(try serverRows(server).count, 3)
        XCTAssertTrue(try local().allSatisfy { isBool($0["__local__"], false) })
    }

    // A host write made from a copy read before the engine gave the entry its UUID (a
    // read-modify-write that overlapped a push whose answer was lost) keeps that UUID and the
    // stamp sent: the next run updates the row the lost add made instead of adding a second one,
    // and the host's edit wins.
    func testHostWriteFromACopyReadBeforeTheStampKeepsItsId() throws {
        let server = try DevServerProcess(["--twophase", "--faults", "POST /twophase/synchronise drop=after times=3"])
        let manager = try manager(server)
        try upsert("todo", [["title": "first", "__local__": true, "__locally_created__": true]])
        guard var stale = try local().first else { throw TestFailure("no entry") }
        try sync(manager, up: true, expect: .failed)
        XCTAssertEqual(try serverRows(server).count, 1)
        stale["title"] = "edited from an old copy"
        try upsert("todo", [stale])
        try sync(manager, up: true)
        let rows = try serverRows(server)
        XCTAssertEqual(rows.count, 1, "a second row: \(rows)")
        XCTAssertEqual(rows.values.first?["title"] as? String, "edited from an old copy")
        XCTAssertEqual(try local().first?["id"] as? String, rows.keys.first)
    }

    // The same for an update: the edit written from the old copy is stamped after the stamp
    // already sent, so it is not taken for an older change (same second, other content) and lost.
    func testHostWriteFromACopyReadBeforeTheStampIsNewerThanTheStampSent() throws {
        // The test's own add and the sync down's get pass; the sync up's three attempts are lost.
        let server = try DevServerProcess(["--twophase", "--faults", "POST /twophase/synchronise drop=after after=2 times=3"])
        let manager = try manager(server)
        let id = UUID().uuidString.lowercased()
        // Stamped 10 s ahead: every local stamp is "one second after the copy", whatever the clock.
        _ = try synchronise(server, ["add": ["todo": [["id": id, "title": "server", "last_update": Timestamp.formatSpaced(Clock.nowMillis() + 10_000)]]]])
        try sync(manager, up: false)
        try edit(id, title: "first edit")
        guard var stale = try local().first else { throw TestFailure("no entry") }
        try sync(manager, up: true, expect: .failed)
        XCTAssertEqual(try serverRows(server)[id]?["title"] as? String, "first edit")
        stale["title"] = "second edit"
        try upsert("todo", [stale])
        try sync(manager, up: true)
        XCTAssertEqual(try serverRows(server)[id]?["title"] as? String, "second edit")
        XCTAssertEqual(try local().first?["title"] as? String, "second edit")
    }

    // An edit made while phase 2 is in flight stays dirty and goes up with the next run.
    func testEditWhilePushInFlightStaysDirty() throws {
        let server = try DevServerProcess(["--twophase", "--twophase-seed", "1", "--faults", "POST /twophase/synchronise latency=1500 times=1"])
        let manager = try manager(server)
        try upsert("todo", [["title": "first", "__local__": true, "__locally_created__": true]])
        let id = try manager.syncUp(targetJSON: target, soupName: "todo", optionsJSON: nil, name: nil, callback: nil)
        // Wait until the engine stamped the entry (phase 1 done), then edit it.
        let deadline = Date().addingTimeInterval(10)
        while try local().first(where: { $0["title"] as? String == "first" })?["__twophase_stamp__"] == nil && Date() < deadline {
            usleep(20_000)
        }
        guard let stamped = try local().first(where: { $0["title"] as? String == "first" }), let uuid = stamped["id"] as? String else {
            throw TestFailure("the entry was not stamped")
        }
        try edit(uuid, title: "edited in flight")
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 30_000).status, .done)
        let entry = try local().first { $0["id"] as? String == uuid }
        XCTAssertEqual(entry?["title"] as? String, "edited in flight")
        XCTAssertTrue(isBool(entry?["__local__"], true), "the edit made in flight lost its dirty flag")
        XCTAssertEqual(try serverRows(server)[uuid]?["title"] as? String, "first")
        try sync(manager, up: true)
        XCTAssertEqual(try serverRows(server)[uuid]?["title"] as? String, "edited in flight")
        XCTAssertEqual(try serverRows(server).count, 2)
    }

    // A server whose clock is ahead: another writer's change stamped by the server after the
    // row came down, then a local edit: the edit is the later one on the server's clock too and
    // wins (stamped on our own clock, 5 minutes behind, it would lose).
    func testClockOffsetLocalEditAfterAnotherChangeWins() throws {
        let server = try DevServerProcess(["--twophase", "--clock-offset", "300"])
        let manager = try manager(server)
        let id = UUID().uuidString.lowercased()
        // Rows sent without last_update are stamped by the server, on its clock.
        _ = try synchronise(server, ["add": ["todo": [["id": id, "title": "server"]]]])
        try sync(manager, up: false)
        usleep(2_200_000)
        _ = try synchronise(server, ["update": ["todo": [["id": id, "title": "another writer"]]]])
        usleep(100_000)
        try edit(id, title: "local, later")
        try sync(manager, up: true)
        XCTAssertEqual(try serverRows(server)[id]?["title"] as? String, "local, later")
        XCTAssertEqual(try local().first?["title"] as? String, "local, later")
    }

    // The REST client reads the server's clock from the Date header of every answer (its line
    // ends with CRLF, one Swift Character, which trimming once left in place: the clock was never
    // known, and stamps and LEAVE_IF_CHANGED comparisons fell back to ours).
    func testServerClockComesFromTheDateHeader() throws {
        let server = try DevServerProcess(["--clock-offset", "300"])
        let rest = RestClient(config: server.remote)
        XCTAssertNil(rest.serverNow)
        XCTAssertTrue(try rest.send("GET", "limits").isSuccess)
        let offset = (rest.serverNow ?? 0) - Clock.nowMillis()
        XCTAssertTrue(abs(offset - 300_000) < 2_000, "server clock offset \(offset) ms, expected about 300000")
    }

    // Bad targets are refused when the sync is created, with what to fix.
    func testTargetIsChecked() throws {
        let server = try DevServerProcess(["--twophase"])
        let manager = try manager(server)
        for bad in [#"{"type":"twophase"}"#, #"{"type":"twophase","tables":[{"name":"todo","timestampFormat":"unix"}]}"#,
                    #"{"type":"twophase","tables":[{"name":"todo","idKey":"uuid"}]}"#,
                    #"{"type":"twophase","tables":[{"name":"todo"},{"name":"other"}]}"#] {
            XCTAssertThrowsError(try manager.syncDown(targetJSON: bad, soupName: "todo", optionsJSON: nil, name: nil, callback: nil), bad) {
                XCTAssertEqual(($0 as? StoreError)?.code, .argument, bad)
            }
        }
    }
}
