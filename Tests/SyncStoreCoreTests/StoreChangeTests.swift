// The store's one seam for the layers above (StoreCompanion): after each commit its companions
// hear what changed, per soup and kind, and who changed it; never of a rolled-back transaction.
import Foundation
import XCTest
@testable import SyncStoreCore
@testable import SyncStoreSync

/// A companion that keeps every change it is told of.
private final class ChangeLog: StoreCompanion, @unchecked Sendable {
    private let lock = Lock()
    private var changes: [StoreChange] = []
    /// Called once from inside the next didCommit (a write there must not deadlock).
    var onNext: ((StoreChange) -> Void)?

    var all: [StoreChange] { lock.withLock { changes } }
    func hostWillUpsert(_ entries: [JSON], soup: SoupInfo, inside db: Connection) throws {}
    func hostWillReplace(_ entry: JSON, existing: Int64, soup: SoupInfo, stored: StoredEntry) throws {}
    func handleClosing(_ owner: Int, last: Bool) throws {}
    var isCallbackThread: Bool { false }
    func paused<T>(_ body: () throws -> T) throws -> T { try body() }

    func didCommit(_ change: StoreChange) {
        let next: ((StoreChange) -> Void)? = lock.withLock {
            changes.append(change)
            defer { onNext = nil }
            return onNext
        }
        next?(change)
    }
}

final class StoreChangeTests: StoreTestCase {
    private var log = ChangeLog()

    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"k","type":"string"}]"#)
        try register("t", #"[{"path":"k","type":"string"}]"#)
        log = try store.companion(ChangeLog.self) { ChangeLog() }
    }

    private func upsert(_ soup: String, _ json: String) throws -> [Int64] {
        let out = try store.upsert(soup: soup, entriesJSON: json)
        return (try parseJSON(out.string) as? [[String: Any]] ?? []).compactMap { ($0["_soupEntryId"] as? NSNumber)?.int64Value }
    }

    func testEachCommitNamesItsSoupKindsIdsAndOrigin() throws {
        let ids = try upsert("s", #"[{"k":"a"},{"k":"b"}]"#)
        _ = try upsert("s", #"{"_soupEntryId":\#(ids[0]),"k":"a2"}"#)
        try store.removeEntries(soup: "s", ids: [ids[1], 999_999])
        let changes = log.all
        XCTAssertEqual(changes.count, 3)
        XCTAssertEqual(changes.map(\.origin), Array(repeating: .host(owner: 0), count: 3))
        XCTAssertEqual(changes.map(\.sequence), changes.map(\.sequence).sorted())
        XCTAssertEqual(Set(changes.map(\.sequence)).count, 3)
        XCTAssertEqual(changes[0].soups.keys.sorted(), ["s"])
        XCTAssertEqual(changes[0].soups["s"]?.inserted.ids, ids)
        XCTAssertEqual(changes[0].soups["s"]?.updated.count, 0)
        XCTAssertEqual(changes[1].soups["s"]?.updated.ids, [ids[0]])
        XCTAssertEqual(changes[1].soups["s"]?.inserted.count, 0)
        // Only what was there is reported deleted.
        XCTAssertEqual(changes[2].soups["s"]?.deleted.ids, [ids[1]])
    }

    func testNothingIsToldOfARolledBackOrEmptyWrite() throws {
        // The second entry is not an object: the whole call fails and nothing is stored.
        XCTAssertThrowsError(try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"}, 3]"#))
        let depth = JSONRules.maxDepth + 5
        let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        XCTAssertThrowsError(try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"}, {"k":\#(deep)}]"#))
        try store.removeEntries(soup: "s", ids: [12345])
        XCTAssertEqual(log.all.count, 0)
        XCTAssertEqual(try store.entryCounts(soup: "s").entries, 0)
    }

    func testClearDropAndEngineWrites() throws {
        _ = try upsert("s", #"[{"k":"a"}]"#)
        try store.clearSoup("s")
        try store.removeSoup("t")
        // A write of the engine (as a sync makes them) says so.
        let info = try store.requireSoup("s")
        try store.write { db in
            try store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
                var sink: TextBuffer? = nil
                let doc = try JSONDocument.parse(#"{"k":"from the engine"}"#)
                try writer.upsert(doc.root, index: 0, now: 1, into: &sink)
            }
        }
        let changes = log.all
        XCTAssertEqual(changes.count, 4)
        XCTAssertEqual(changes[1].soups["s"]?.cleared, true)
        XCTAssertEqual(changes[2].soups["t"]?.dropped, true)
        XCTAssertEqual(changes[3].origin, .engine(run: nil))
        XCTAssertEqual(changes[3].soups["s"]?.inserted.count, 1)
    }

    func testABigWriteIsOneChangeWithBoundedIds() throws {
        let entries = (0..<(StoreChange.keptLimit + 500)).map { #"{"k":"\#($0)"}"# }.joined(separator: ",")
        _ = try upsert("s", "[\(entries)]")
        let changes = log.all
        XCTAssertEqual(changes.count, 1)
        let inserted = try XCTUnwrap(changes[0].soups["s"]?.inserted)
        XCTAssertEqual(inserted.count, StoreChange.keptLimit + 500)
        XCTAssertEqual(inserted.ids.count, StoreChange.keptLimit)
        XCTAssertTrue(inserted.cut)
    }

    func testACompanionMayWriteWhenToldOfACommit() throws {
        let store = try self.store
        log.onNext = { _ in _ = try? store.upsert(soup: "t", entriesJSON: #"{"k":"echo"}"#) }
        _ = try upsert("s", #"{"k":"a"}"#)
        let changes = log.all
        XCTAssertEqual(changes.count, 2)
        XCTAssertEqual(changes[1].soups["t"]?.inserted.count, 1)
        XCTAssertGreaterThan(changes[1].sequence, changes[0].sequence)
    }
}
