// docs/smartstore.md#upsert-retrieve-remove — the write path's bookkeeping: _soupEntryId is
// never reused (the engine keeps each soup table's sequence itself), the WAL is copied into
// the database file by the store's checkpointer while the store stays open, and the entry
// dates are indexed when a query first needs them (docs/queries.md#entry-dates).
import XCTest
@testable import SyncStoreCore

final class WritePathTests: StoreTestCase {
    private func create(_ n: Int, on s: SmartStore) throws -> [Int64] {
        ids(try entries(s.upsert(soup: "s", entriesJSON: try jsonText((0..<n).map { ["k": "v\($0)"] }))))
    }

    func testAnIdIsNeverGivenTwiceAcrossRemovesClearsReopensAndStores() throws {
        try register("s", #"[{"path":"k","type":"string"}]"#)
        XCTAssertEqual(try create(3, on: try store), [1, 2, 3])
        try store.removeEntries(soup: "s", ids: [3])
        // A new store object reads the sequence from the file, not from its own cache.
        XCTAssertEqual(try create(1, on: try reopenStore()), [4])
        try store.removeEntries(soup: "s", ids: [4])
        try store.clearSoup("s")
        XCTAssertEqual(try create(2, on: try reopenStore()), [5, 6])
        // Another store object on the same file (as another process) continues the same sequence.
        let other = try SmartStore(path: dbPath)
        try other.removeEntries(soup: "s", ids: [6])
        XCTAssertEqual(try create(1, on: other), [7])
        try store.removeEntries(soup: "s", ids: [7])
        XCTAssertEqual(try create(1, on: try store), [8])
        // A failed call gives out nothing.
        assertStoreError(.argument) { try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"},{"_soupEntryId":"x"}]"#) }
        XCTAssertEqual(try create(1, on: try reopenStore()), [9])
        // A soup removed and registered again starts from 1.
        try store.removeSoup("s")
        try register("s", #"[{"path":"k","type":"string"}]"#)
        XCTAssertEqual(try create(2, on: try store), [1, 2])
        XCTAssertEqual(try create(1, on: try reopenStore()), [3])
    }

    /// Writes `megabytes` of entries (100 KB each) in batches of 50.
    private func write(megabytes: Int, on s: SmartStore) throws {
        let text = String(repeating: "x", count: 100_000)
        for batch in 0..<(megabytes / 5) {
            let list = (0..<50).map { ["k": "b\(batch)-\($0)", "t": text] }
            _ = try s.upsert(soup: "s", entriesJSON: try jsonText(list))
        }
    }

    private func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Past WalCheckpointer.threshold frames (32 MB) the WAL is copied into the database file on
    /// the checkpointer's thread; without it nothing would copy it before WalCheckpointer.limit.
    private func assertCheckpointed(_ s: SmartStore, atLeast bytes: Int, _ what: String) {
        XCTAssertTrue(waitUntil(20) { self.fileSize(self.dbPath) >= bytes },
                      "\(what): the database file holds \(fileSize(dbPath)) bytes, the WAL \(fileSize(dbPath + "-wal"))")
    }

    func testTheWalIsCopiedIntoTheFileWhileTheStoreStaysOpen() throws {
        try register("s", #"[{"path":"k","type":"string"}]"#)
        let s = try store
        try write(megabytes: 40, on: s)
        assertCheckpointed(s, atLeast: 30_000_000, "plaintext")
        XCTAssertEqual(try count("s"), 400)
    }

    func testAnEncryptedStoreIsCheckpointedBeforeAndAfterAChangeOfKey() throws {
        var s: SmartStore? = try SmartStore(path: dbPath, key: try StoreKey("one", kdfIter: 1000))
        try register("s", #"[{"path":"k","type":"string"}]"#, on: s)
        try write(megabytes: 40, on: try XCTUnwrap(s))
        assertCheckpointed(try XCTUnwrap(s), atLeast: 30_000_000, "before the change of key")
        try s?.changeKey(to: try StoreKey("two", kdfIter: 1000))
        try write(megabytes: 40, on: try XCTUnwrap(s))
        assertCheckpointed(try XCTUnwrap(s), atLeast: 60_000_000, "after the change of key")
        s?.checkpointForClose()
        s = nil
        let reopened = try SmartStore(path: dbPath, key: try StoreKey("two", kdfIter: 1000))
        XCTAssertEqual(try count("s", on: reopened), 800)
    }

    /// The entry-date indexes of soup `soup`'s table, as the file has them.
    private func dateIndexes(_ soup: String) throws -> [String] {
        let table = try XCTUnwrap(try store.soup(soup)).table
        let db = try Connection(file: try DatabaseFile(path: dbPath, key: nil), readOnly: true)
        let rows = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND (name LIKE '%created%' OR name LIKE '%lastModified%') ORDER BY name")
        try rows.bind([.text(table)])
        var names: [String] = []
        while try rows.step() { names.append(rows.text(0).replacingOccurrences(of: "\(table)_", with: "")) }
        return names
    }

    func testAnEntryDateIsIndexedByTheFirstQueryOnIt() throws {
        try register("s", #"[{"path":"k","type":"string"}]"#)
        let first = try upsert("s", #"[{"k":"a"},{"k":"b"}]"#)
        let stamp = try XCTUnwrap(int(first.first?["_soupLastModifiedDate"]))
        XCTAssertEqual(try dateIndexes("s"), [], "a new soup's dates are not indexed")
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"k","matchKey":"a"}"#).ids, [1])
        XCTAssertEqual(try dateIndexes("s"), [], "a query on another path indexes no date")

        let range = try spec(["queryType": "range", "indexPath": "_soupLastModifiedDate", "beginKey": stamp, "pageSize": 5])
        XCTAssertEqual(try query("s", range).ids, [1, 2])
        XCTAssertEqual(try dateIndexes("s"), ["lastModified_idx"])
        // The lookup path (a page, no cursor) and its cached plan answer the same.
        for _ in 0..<2 { XCTAssertEqual(ids(try entries(try store.queryPage(soup: "s", specJSON: range, page: 0))), [1, 2]) }

        let ordered = try smart("select {s:k} from {s} order by {s:_soupCreatedDate} desc, {s:_soupEntryId} desc").rows
        XCTAssertEqual(ordered.map { $0[0] as? String }, ["b", "a"])
        XCTAssertEqual(try dateIndexes("s"), ["created_idx", "lastModified_idx"])
        // Kept in the file: another store object finds them, and writes keep them current.
        let later = try upsert("s", #"{"k":"c"}"#, on: try reopenStore())
        let laterStamp = try XCTUnwrap(int(later.first?["_soupLastModifiedDate"]))
        XCTAssertEqual(try query("s", try spec(["queryType": "range", "indexPath": "_soupCreatedDate", "beginKey": laterStamp])).ids, [3])
        XCTAssertEqual(try dateIndexes("s"), ["created_idx", "lastModified_idx"])
        // A soup registered again starts without them.
        try store.removeSoup("s")
        try register("s", #"[{"path":"k","type":"string"}]"#)
        XCTAssertEqual(try dateIndexes("s"), [])
    }

    func testADateQueryDuringAWriteRunsWithoutTheIndexAndALaterOneBuildsIt() throws {
        try register("s", #"[{"path":"k","type":"string"}]"#)
        _ = try upsert("s", #"{"k":"a"}"#)
        sleepMillis(3)
        _ = try upsert("s", #"{"k":"b"}"#)
        let s = try store
        let writing = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let writer = Thread {
            _ = try? s.write { _ in
                writing.signal()
                release.wait()
            }
        }
        writer.start()
        writing.wait()
        let ordered = #"{"queryType":"range","indexPath":"_soupLastModifiedDate","order":"descending"}"#
        // Answered while the write holds its lock: the read does not wait for it.
        XCTAssertEqual(try query("s", ordered).ids, [2, 1])
        XCTAssertEqual(try dateIndexes("s"), [])
        release.signal()
        XCTAssertTrue(waitUntil { writer.isFinished })
        XCTAssertEqual(try query("s", ordered).ids, [2, 1])
        XCTAssertEqual(try dateIndexes("s"), ["lastModified_idx"])
    }

    func testADateQueryDuringAnotherProcesssWriteDoesNotWaitForIt() throws {
        try register("s", #"[{"path":"k","type":"string"}]"#)
        _ = try upsert("s", #"[{"k":"a"},{"k":"b"}]"#)
        // A connection of its own holds SQLite's write lock, as another process's write would.
        let other = try Connection(file: try DatabaseFile(path: dbPath, key: nil), readOnly: false)
        try other.execute("BEGIN IMMEDIATE")
        let started = nowMillis()
        XCTAssertEqual(try smart("select {s:k} from {s} order by {s:_soupCreatedDate}, {s:_soupEntryId}").rows.map { $0[0] as? String }, ["a", "b"])
        XCTAssertLessThan(nowMillis() - started, 1000, "the query waited for the other write")
        XCTAssertEqual(try dateIndexes("s"), [])
        try other.execute("COMMIT")
        other.close()
        XCTAssertEqual(try smart("select {s:k} from {s} order by {s:_soupCreatedDate}, {s:_soupEntryId}").rows.map { $0[0] as? String }, ["a", "b"])
        XCTAssertEqual(try dateIndexes("s"), ["created_idx"])
    }

    func testAReadOnlyStoreAnswersDateQueriesWithoutTheIndex() throws {
        try register("s", #"[{"path":"k","type":"string"}]"#)
        _ = try upsert("s", #"[{"k":"a"},{"k":"b"}]"#)
        (try store).checkpointForClose()
        let readOnly = try SmartStore(path: dbPath, readOnly: true)
        XCTAssertEqual(try smart("select {s:k} from {s} order by {s:_soupLastModifiedDate}, {s:_soupEntryId}", on: readOnly).rows.map { $0[0] as? String }, ["a", "b"])
        XCTAssertEqual(try dateIndexes("s"), [])
    }
}
