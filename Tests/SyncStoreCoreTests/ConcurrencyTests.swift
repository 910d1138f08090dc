// Concurrency (docs/smartstore.md#stores "a store is one SQLite database", used from any thread): writers
// are serialized, readers run beside a write (WAL) and see the last committed state.
import XCTest
import Foundation
import Glibc
import CSQLite
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

/// A thread-safe list of failures collected from worker threads.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ s: String) { lock.lock(); items.append(s); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}

// docs/smartstore.md, docs/queries.md concurrency
final class ConcurrencyTests: StoreTestCase {
    // Reads stalled behind SQLite's process-wide memory-statistics mutex whenever a sync's
    // writer was preempted holding it; the library turns the statistics off before SQLite starts
    // (SQLite then reports 0 bytes in use).
    func testSQLiteMemoryStatisticsAreOff() throws {
        let store = try self.store
        try store.registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        _ = try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"}]"#)
        var current: Int64 = -1, highest: Int64 = -1
        XCTAssertEqual(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highest, 0), SQLITE_OK)
        XCTAssertEqual(current, 0, "SQLite keeps memory statistics (and takes their mutex on every allocation)")
    }

    func testConcurrentUpsertsAndQueries() throws {
        let s = try store
        try s.registerSoup("s", specsJSON: #"[{"path":"writer","type":"integer"},{"path":"seq","type":"integer"},{"path":"t","type":"full_text"}]"#)
        let writers = 4, batches = 25, perBatch = 8
        let failures = Failures()
        let group = DispatchGroup()
        let queue = DispatchQueue(label: "workers", attributes: .concurrent)
        for w in 0..<writers {
            group.enter()
            queue.async {
                defer { group.leave() }
                for b in 0..<batches {
                    let batch = "[" + (0..<perBatch).map { #"{"writer":\#(w),"seq":\#(b * perBatch + $0),"t":"w\#(w) word"}"# }.joined(separator: ",") + "]"
                    do {
                        let out = try entries(s.upsert(soup: "s", entriesJSON: batch))
                        if out.count != perBatch { failures.add("writer \(w) got \(out.count) entries back") }
                        // Update what was just written (read-modify-write of own entries).
                        if b % 5 == 0, var first = out.first {
                            first["updated"] = true
                            _ = try s.upsert(soup: "s", entriesJSON: try jsonText(first))
                        }
                    } catch { failures.add("writer \(w): \(error)") }
                }
            }
        }
        for r in 0..<3 {
            group.enter()
            queue.async {
                defer { group.leave() }
                for i in 0..<40 {
                    do {
                        let spec = #"{"queryType":"exact","indexPath":"writer","matchKey":\#(i % writers),"pageSize":5}"#
                        let page = try CursorPage(s.querySoup("s", specJSON: spec))
                        if page.totalEntries % Int64(perBatch) != 0 { failures.add("reader \(r) saw a partial batch: \(page.totalEntries)") }
                        if page.totalPages > 1 { _ = try s.moveCursor(page.cursorId, toPage: 1) }
                        s.closeCursor(page.cursorId)
                        let smartPage = try CursorPage(s.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select count(*) from {s}","pageSize":1}"#))
                        if let n = int(smartPage.rows.first?.first), n % Int64(perBatch) != 0 { failures.add("smart reader saw \(n)") }
                        _ = try s.retrieve(soup: "s", ids: [1, 2, 3])
                        _ = try CursorPage(s.querySoup("s", specJSON: #"{"queryType":"match","indexPath":"t","matchKey":"word"}"#))
                    } catch { failures.add("reader \(r): \(error)") }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "workers did not finish")
        XCTAssertEqual(failures.all, [])
        XCTAssertEqual(try count("s"), Int64(writers * batches * perBatch))
        for w in 0..<writers {
            let page = try query("s", #"{"queryType":"exact","indexPath":"writer","matchKey":\#(w),"pageSize":1}"#)
            XCTAssertEqual(page.totalEntries, Int64(batches * perBatch))
        }
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"word"}"#).totalEntries, Int64(writers * batches * perBatch))
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"updated","matchKey":true}"#).totalEntries, Int64(writers * batches / 5))
        // Ids are unique and dense: no two writers got the same id.
        let all = try smart("select count(distinct {s:_soupEntryId}), min({s:_soupEntryId}), max({s:_soupEntryId}) from {s}").rows.first
        XCTAssertEqual(all?.compactMap { int($0) }, [Int64(writers * batches * perBatch), 1, Int64(writers * batches * perBatch)])
    }

    func testConcurrentSoupManagementAndQueries() throws {
        let s = try store
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            let name = "soup\(i % 3)"
            for round in 0..<10 {
                do {
                    try s.registerSoup(name, specsJSON: #"[{"path":"a","type":"string"}]"#)
                    _ = try s.upsert(soup: name, entriesJSON: #"{"a":"\#(round)"}"#)
                    _ = try CursorPage(s.querySoup(name, specJSON: "{}"))
                    if round % 3 == 2 { try s.removeSoup(name) }
                } catch let error as StoreError where error.code == .notFound {
                    // Another thread removed the soup between two calls: expected.
                } catch { failures.add("\(name): \(error)") }
            }
        }
        XCTAssertEqual(failures.all, [])
        // The store is consistent afterwards.
        let reopened = try reopenStore()
        for name in reopened.soupNames { XCTAssertNoThrow(try count(name, on: reopened)) }
    }

    /// Registering the same soup from several threads is a no-op for all but one (never an
    /// error), and a soup removed under a writer is "not found", never an SQL error.
    func testRacingRegisterAndRemoveOfOneSoup() throws {
        let s = try store
        let failures = Failures()
        for round in 0..<300 {
            DispatchQueue.concurrentPerform(iterations: 5) { t in
                do {
                    if t == 3 && round % 2 == 1 {
                        try s.removeSoup("r")
                    } else if t == 4 {
                        // Readers racing the removal: "not found" or a result, never an SQL error.
                        let page = try CursorPage(s.querySoup("r", specJSON: #"{"queryType":"exact","indexPath":"a","matchKey":"x"}"#))
                        s.closeCursor(page.cursorId)
                        _ = try s.retrieve(soup: "r", ids: [1, 2])
                    } else {
                        try s.registerSoup("r", specsJSON: #"[{"path":"a","type":"string"},{"path":"t","type":"full_text"}]"#)
                        _ = try s.upsert(soup: "r", entriesJSON: #"{"a":"x","t":"y"}"#)
                    }
                } catch let error as StoreError where error.code == .notFound {
                    // removed by the other thread between register and upsert: fine
                } catch { failures.add("round \(round) thread \(t): \(error)") }
            }
            if round % 2 == 1 { try? s.removeSoup("r") }
        }
        XCTAssertEqual(failures.all, [])
    }

    /// Queries racing alterSoup see the old or the new indexes, never an error.
    func testQueriesRacingAlterSoup() throws {
        let s = try store
        try s.registerSoup("a", specsJSON: #"[{"path":"k","type":"string"}]"#)
        _ = try s.upsert(soup: "a", entriesJSON: "[" + (0..<50).map { #"{"k":"k\#($0 % 5)","b":\#($0)}"# }.joined(separator: ",") + "]")
        let failures = Failures()
        let done = Flag()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            defer { group.leave() }
            var reads = 0
            while !done.isSet || reads < 50 {
                reads += 1
                do {
                    let page = try CursorPage(s.querySoup("a", specJSON: #"{"queryType":"range","indexPath":"b","beginKey":10,"endKey":19,"pageSize":100}"#))
                    if page.totalEntries != 10 { failures.add("saw \(page.totalEntries) entries") }
                    s.closeCursor(page.cursorId)
                    let k = try CursorPage(s.querySoup("a", specJSON: #"{"queryType":"exact","indexPath":"k","matchKey":"k1","selectPaths":["b"]}"#))
                    if k.totalEntries != 10 { failures.add("saw \(k.totalEntries) k1 entries") }
                    s.closeCursor(k.cursorId)
                    let smart = try CursorPage(s.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select count(*) from {a} where {a:b} between 10 and 19 and {a:k} = 'k1'"}"#))
                    if int(smart.rows.first?.first) != 2 { failures.add("smart saw \(smart.rows)") }
                    s.closeCursor(smart.cursorId)
                } catch { failures.add("\(error)") }
            }
        }
        for i in 0..<30 {
            let specs = i % 3 == 0 ? #"[{"path":"k","type":"string"}]"#
                : i % 3 == 1 ? #"[{"path":"k","type":"string"},{"path":"b","type":"integer"}]"#
                : #"[{"path":"b","type":"floating"},{"path":"k","type":"full_text"}]"#
            try s.alterSoup("a", specsJSON: specs, reIndexData: true)
        }
        done.set()
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(Array(Set(failures.all)).sorted().prefix(5), [])
    }

    func testHandlesOpenedAndClosedFromManyThreads() throws {
        let registry = StoreRegistry()
        let root = self.root
        let setup = try registry.open(root: root, config: try StoreConfig(name: "shared"))
        try registry.store(setup).registerSoup("s", specsJSON: #"[{"path":"t","type":"integer"}]"#)
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<15 {
                do {
                    let handle = try registry.open(root: root, config: try StoreConfig(name: "shared"))
                    let s = try registry.store(handle)
                    _ = try s.upsert(soup: "s", entriesJSON: #"{"t":\#(t),"i":\#(i)}"#)
                    let page = try CursorPage(s.querySoup("s", specJSON: #"{"queryType":"exact","indexPath":"t","matchKey":\#(t),"pageSize":2}"#, owner: handle))
                    if page.totalEntries != Int64(i + 1) { failures.add("thread \(t) saw \(page.totalEntries) of its entries after \(i + 1) writes") }
                    try registry.close(handle)
                    do { _ = try registry.store(handle); failures.add("closed handle still works") } catch let e as StoreError where e.code == .state {}
                } catch { failures.add("thread \(t): \(error)") }
            }
        }
        XCTAssertEqual(failures.all, [])
        XCTAssertEqual(try count("s", on: try registry.store(setup)), 8 * 15)
        try registry.close(setup)
        XCTAssertFalse(registry.isOpen(path: StoreRegistry.path(root: root, config: try StoreConfig(name: "shared"))))
    }

    func testAReaderIsNotBlockedByALongWrite() throws {
        let s = try store
        try s.registerSoup("big", specsJSON: #"[{"path":"k","type":"string"},{"path":"n","type":"integer"}]"#)
        _ = try s.upsert(soup: "big", entriesJSON: #"[{"k":"seed","n":-1},{"k":"seed","n":-2}]"#)
        let total = 100_000
        var text = "["
        text.reserveCapacity(total * 60)
        for i in 0..<total {
            if i > 0 { text += "," }
            text += #"{"k":"key\#(i)","n":\#(i),"pad":"xxxxxxxxxxxxxxxxxxxxxxxx"}"#
        }
        text += "]"
        let payload = text
        let done = Flag()
        let started = Flag()
        let failures = Failures()
        let writer = Thread {
            started.set()
            do { _ = try s.upsert(soup: "big", entriesJSON: payload) } catch { failures.add("writer: \(error)") }
            done.set()
        }
        writer.stackSize = 8 << 20
        writer.start()
        while !started.isSet { usleep(100) }
        usleep(20_000) // let the write get going
        // A probe connection tells when the write transaction is really open: BEGIN IMMEDIATE
        // fails with SQLITE_BUSY while another connection holds the write lock.
        var probe: OpaquePointer?
        XCTAssertEqual(sqlite3_open_v2(dbPath, &probe, SQLITE_OPEN_READWRITE, nil), SQLITE_OK)
        defer { sqlite3_close_v2(probe) }
        func writeInProgress() -> Bool {
            let rc = sqlite3_exec(probe, "BEGIN IMMEDIATE", nil, nil, nil)
            if rc == SQLITE_OK { sqlite3_exec(probe, "ROLLBACK", nil, nil, nil); return false }
            return rc & 0xff == SQLITE_BUSY
        }
        var completedDuringWrite = 0
        var sawPartial = false
        var queries = 0
        while !done.isSet {
            let before = writeInProgress()
            let page = try CursorPage(s.querySoup("big", specJSON: #"{"queryType":"range","indexPath":"n","pageSize":5}"#))
            let smartCount = try CursorPage(s.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select count(*) from {big}"}"#))
            _ = try s.retrieve(soup: "big", ids: [1])
            let size = try s.databaseSize()
            queries += 1
            if before && writeInProgress() {
                completedDuringWrite += 1
                if page.totalEntries != 2 || int(smartCount.rows.first?.first) != 2 { sawPartial = true }
                if size <= 0 { failures.add("database size \(size)") }
            }
            s.closeCursor(page.cursorId)
            s.closeCursor(smartCount.cursorId)
        }
        XCTAssertEqual(failures.all, [])
        XCTAssertGreaterThan(completedDuringWrite, 0, "no query completed while the write ran (\(queries) queries in all)")
        XCTAssertFalse(sawPartial, "a reader saw uncommitted rows of the running write")
        XCTAssertEqual(try count("big"), Int64(total + 2))
    }

    // A sync up whose last write failed (a full disk) joined its pending date read again in its
    // cleanup: a second pthread_join of one thread (AddressSanitizer: "Joining already joined
    // thread"; undefined without it, and it can wait forever on a thread that reused the id).
    // Prefetch joins its thread once; later joins give the same result.
    func testPrefetchJoinedTwiceJoinsItsThreadOnce() throws {
        for i in 0..<50 {
            let prefetch = Prefetch { i * 2 }
            XCTAssertEqual(try prefetch.join(), i * 2)
            // Threads started in between may take the joined thread's id.
            let others = (0..<4).map { _ in Prefetch { 0 } }
            XCTAssertEqual(try prefetch.join(), i * 2)
            for other in others { _ = try other.join() }
        }
    }
}

// docs/architecture.md#processes: a store is one SQLite file, which SQLite lets several processes open. Two store
// objects on one file (each with its own writer connection and caches) stand in for two
// processes: each sees what the other committed, ids never collide, a soup the other re-created
// is written to its new table.
final class SharedFileTests: StoreTestCase {
    func testTwoStoreObjectsOnOneFileStayConsistent() throws {
        let a = try SmartStore(path: dbPath)
        let b = try SmartStore(path: dbPath)
        try a.registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        XCTAssertTrue(b.soupExists("s"))
        try a.registerSoup("t", specsJSON: #"[{"path":"k","type":"string"}]"#)
        XCTAssertEqual(b.soupNames, ["s", "t"])
        try b.removeSoup("t")
        XCTAssertFalse(a.soupExists("t"))
        // b learns of the soup a registered.
        func ids(_ store: SmartStore, _ json: String) throws -> [Int64] {
            try entries(store.upsert(soup: "s", entriesJSON: json)).compactMap { int($0["_soupEntryId"]) }
        }
        XCTAssertEqual(try ids(b, #"[{"k":"b1"}]"#), [1])
        XCTAssertEqual(try ids(a, #"[{"k":"a1"},{"k":"a2"}]"#), [2, 3])
        XCTAssertEqual(try ids(b, #"[{"k":"b2"}]"#), [4])
        XCTAssertEqual(try ids(a, #"[{"k":"a3"}]"#), [5])
        // b re-creates the soup with another index; a reads and writes the new table and index.
        try b.removeSoup("s")
        try b.registerSoup("s", specsJSON: #"[{"path":"other","type":"integer"}]"#)
        _ = try b.upsert(soup: "s", entriesJSON: #"[{"other":7}]"#)
        let exact = #"{"queryType":"exact","indexPath":"other","matchKey":7,"pageSize":10}"#
        XCTAssertEqual(try CursorPage(a.querySoup("s", specJSON: exact)).totalEntries, 1)
        _ = try a.upsert(soup: "s", entriesJSON: #"[{"other":7}]"#)
        XCTAssertEqual(try CursorPage(b.querySoup("s", specJSON: exact)).totalEntries, 2)
        // b removes it: a's reads say NOT_FOUND, not an SQL error.
        try b.removeSoup("s")
        XCTAssertThrowsError(try a.querySoup("s", specJSON: exact)) { XCTAssertEqual(($0 as? StoreError)?.code, .notFound) }
    }

    // docs/architecture.md#processes: one sync engine per store file at a time (the others get BUSY, retryable),
    // so two processes never push the same creates or take each other's runs for crashed ones.
    func testOneSyncEnginePerFile() throws {
        let a = try SmartStore(path: dbPath)
        let b = try SmartStore(path: dbPath)
        let manager = try a.syncManager()
        XCTAssertThrowsError(try b.syncManager()) {
            XCTAssertEqual(($0 as? StoreError)?.code, .busy)
            XCTAssertEqual(($0 as? StoreError)?.retryable, true)
        }
        manager.close()
        XCTAssertNoThrow(try b.syncManager().close())
    }
}
