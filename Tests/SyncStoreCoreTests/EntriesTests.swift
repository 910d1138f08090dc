// docs/smartstore.md#upsert-retrieve-remove — Upsert, retrieve, remove: _soupEntryId and external-id upserts, batch
// atomicity, timestamps, retrieve order, removal by ids and by query.
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/smartstore.md#upsert-retrieve-remove
final class UpsertTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"Id","type":"string"},{"path":"n","type":"integer"},{"path":"t","type":"full_text"},{"path":"j","type":"json1"}]"#)
    }

    func testCreateThenUpdateViaSoupEntryId() throws {
        let created = try upsert("s", #"[{"Id":"a","n":1,"t":"alpha"},{"Id":"b","n":2,"t":"beta"}]"#)
        XCTAssertEqual(ids(created), [1, 2])
        XCTAssertEqual(strings(created, "Id"), ["a", "b"], "upsert returns the stored entries in input order")
        XCTAssertNotNil(int(created[0]["_soupLastModifiedDate"]))
        var first = created[0]
        first["n"] = 10
        first["t"] = "gamma"
        let updated = try upsert("s", try jsonText(first))
        XCTAssertEqual(ids(updated), [1])
        XCTAssertEqual(try count("s"), 2, "an update must not create")
        let stored = try entries(try store.retrieve(soup: "s", ids: [1]))
        XCTAssertEqual(int(stored.first?["n"]), 10)
        // Index values follow the update.
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"n","matchKey":10}"#).ids, [1])
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"n","matchKey":1}"#).ids, [])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"t","matchKey":"gamma"}"#).ids, [1])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"t","matchKey":"alpha"}"#).ids, [], "the old full-text value is gone")
        // An explicit null _soupEntryId creates.
        XCTAssertEqual(ids(try upsert("s", #"{"_soupEntryId":null,"Id":"c"}"#)), [3])
        // A single object (not an array) is accepted.
        XCTAssertEqual(ids(try upsert("s", #"{"Id":"d"}"#)), [4])
        XCTAssertEqual(ids(try upsert("s", "[]")), [], "an empty batch is fine")
    }

    func testUnknownSoupEntryIdIsNotFound() throws {
        try upsert("s", #"{"Id":"a"}"#)
        let error = try assertRejected(.notFound) { try upsert("s", #"{"_soupEntryId":42,"Id":"x"}"#) }
        XCTAssertTrue(error?.message.contains("42") ?? false, error?.message ?? "")
        try assertRejected(.argument, "non-integer id") { try upsert("s", #"{"_soupEntryId":"1","Id":"x"}"#) }
        try assertRejected(.argument, "fractional id") { try upsert("s", #"{"_soupEntryId":1.5,"Id":"x"}"#) }
    }

    func testExternalIdPath() throws {
        // No match creates.
        XCTAssertEqual(ids(try upsert("s", #"[{"Id":"001A","n":1},{"Id":"001B","n":2}]"#, externalIdPath: "Id")), [1, 2])
        // One match updates (keeping the _soupEntryId), even without _soupEntryId in the input.
        let updated = try upsert("s", #"{"Id":"001A","n":100}"#, externalIdPath: "Id")
        XCTAssertEqual(ids(updated), [1])
        XCTAssertEqual(try count("s"), 2)
        XCTAssertEqual(int(try entries(try store.retrieve(soup: "s", ids: [1])).first?["n"]), 100)
        // Two entries with the same new external id in one batch: the second updates the first.
        XCTAssertEqual(ids(try upsert("s", #"[{"Id":"001C","n":3},{"Id":"001C","n":4}]"#, externalIdPath: "Id")), [3, 3])
        XCTAssertEqual(try count("s"), 3)
        // An integer index works as external id too, and so does a json1 index.
        XCTAssertEqual(ids(try upsert("s", #"{"Id":"other","n":2}"#, externalIdPath: "n")), [2])
        try upsert("s", #"[{"Id":"j1","j":"k1"}]"#)
        XCTAssertEqual(ids(try upsert("s", #"{"Id":"j1-updated","j":"k1"}"#, externalIdPath: "j")), [4])
        XCTAssertEqual(try count("s"), 4)
        // "_soupEntryId" as external id path is the default behaviour.
        XCTAssertEqual(ids(try upsert("s", #"{"_soupEntryId":2,"Id":"again"}"#, externalIdPath: "_soupEntryId")), [2])
    }

    func testExternalIdErrors() throws {
        try upsert("s", #"[{"Id":"dup","n":1},{"Id":"dup","n":2},{"Id":"one","n":3}]"#)
        try assertRejected(.conflict, "several matches") { try upsert("s", #"{"Id":"dup","n":9}"#, externalIdPath: "Id") }
        try assertRejected(.argument, "null value") { try upsert("s", #"{"Id":null,"n":9}"#, externalIdPath: "Id") }
        try assertRejected(.argument, "missing value") { try upsert("s", #"{"n":9}"#, externalIdPath: "Id") }
        try assertRejected(.argument, "unindexed path") { try upsert("s", #"{"Other":"x"}"#, externalIdPath: "Other") }
        // A bad entry late in the batch rolls back the good ones before it.
        try assertRejected(.conflict) { try upsert("s", #"[{"Id":"new1"},{"Id":"one","n":33},{"Id":"dup"}]"#, externalIdPath: "Id") }
        try assertRejected(.argument) { try upsert("s", #"[{"Id":"new2"},{"n":5}]"#, externalIdPath: "Id") }
    }

    func testUpsertIntoMissingSoupIsNotFound() throws {
        try assertRejected(.notFound) { try upsert("nope", #"{"a":1}"#) }
        try assertRejected(.notFound) { try upsert("nope", #"{"a":1}"#, externalIdPath: "a") }
        try assertRejected(.notFound) { try store.retrieve(soup: "nope", ids: [1]) }
        try assertRejected(.notFound) { try store.removeEntries(soup: "nope", ids: [1]) }
        try assertRejected(.notFound) { try store.removeByQuery(soup: "nope", specJSON: "{}") }
    }

    func testAFailingEntryLeavesTheWholeBatchUnwritten() throws {
        try upsert("s", #"[{"Id":"a","n":1,"t":"one"}]"#)
        try assertRejected(.notFound) {
            try upsert("s", #"[{"Id":"b","n":2,"t":"two"},{"_soupEntryId":1,"Id":"a2","t":"changed"},{"_soupEntryId":77}]"#)
        }
        try assertRejected(.argument) { try upsert("s", #"[{"Id":"b"},5]"#) }
        try assertRejected(.argument) { try upsert("s", #"[{"Id":"b"},{"_soupEntryId":true}]"#) }
        XCTAssertEqual(strings(try entries(try store.retrieve(soup: "s", ids: [1])), "Id"), ["a"])
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"two OR changed"}"#).totalEntries, 0)
        // The store keeps working, with ids following the committed state.
        XCTAssertEqual(ids(try upsert("s", #"{"Id":"b"}"#)), [2])
    }

    func testLastModifiedDateIsSetAndAdvanced() throws {
        let start = nowMillis()
        let first = try upsert("s", #"{"Id":"a"}"#)
        let end = nowMillis()
        let lm1 = try XCTUnwrap(int(first.first?["_soupLastModifiedDate"]))
        XCTAssertGreaterThanOrEqual(lm1, start)
        XCTAssertLessThanOrEqual(lm1, end)
        sleepMillis(5)
        var entry = try XCTUnwrap(first.first)
        entry["_soupLastModifiedDate"] = 1 // hosts cannot set it
        let second = try upsert("s", try jsonText(entry))
        let lm2 = try XCTUnwrap(int(second.first?["_soupLastModifiedDate"]))
        XCTAssertGreaterThan(lm2, lm1)
        let stored = try entries(try store.retrieve(soup: "s", ids: [1]))
        XCTAssertEqual(int(stored.first?["_soupLastModifiedDate"]), lm2, "the stored entry carries the date")
        // Smart SQL sees the same value; created stays at the first write.
        let row = try XCTUnwrap(try smart("select {s:_soupLastModifiedDate}, {s:_soupCreatedDate} from {s}").rows.first)
        XCTAssertEqual(int(row[0]), lm2)
        XCTAssertEqual(int(row[1]), lm1)
        // Range queries on the system paths work.
        XCTAssertEqual(try query("s", try spec(["queryType": "range", "indexPath": "_soupLastModifiedDate", "beginKey": lm2])).ids, [1])
        XCTAssertEqual(try query("s", try spec(["queryType": "range", "indexPath": "_soupCreatedDate", "endKey": lm1 - 1])).ids, [])
    }

    func testCreatedDateIsQueryableInSmartSql() throws {
        let before = nowMillis()
        try upsert("s", #"[{"Id":"a"},{"Id":"b"}]"#)
        sleepMillis(5)
        let mid = nowMillis()
        sleepMillis(2)
        try upsert("s", #"{"Id":"c"}"#)
        let rows = try smart("select {s:Id}, {s:_soupCreatedDate} from {s} order by {s:_soupEntryId}").rows
        XCTAssertEqual(rows.map { $0[0] as? String }, ["a", "b", "c"])
        for row in rows { XCTAssertGreaterThanOrEqual(int(row[1]) ?? 0, before) }
        let late = try smart("select {s:Id} from {s} where {s:_soupCreatedDate} > \(mid)").rows
        XCTAssertEqual(late.map { $0[0] as? String }, ["c"])
    }

    func testRetrieveOrderAndMissingIdsSkipped() throws {
        try upsert("s", #"[{"Id":"a"},{"Id":"b"},{"Id":"c"}]"#)
        XCTAssertEqual(strings(try entries(try store.retrieve(soup: "s", ids: [3, 99, 1, -5, 1])), "Id"), ["c", "a", "a"])
        XCTAssertEqual(strings(try entries(try store.retrieve(soup: "s", idsJSON: "[2]")), "Id"), ["b"])
        XCTAssertEqual(strings(try entries(try store.retrieve(soup: "s", idsJSON: "2")), "Id"), ["b"], "a bare id is accepted")
        XCTAssertEqual(try entries(try store.retrieve(soup: "s", ids: [])).count, 0)
        assertStoreError(.argument) { try store.retrieve(soup: "s", idsJSON: #"["1"]"#) }
        assertStoreError(.argument) { try store.retrieve(soup: "s", idsJSON: "[1.5]") }
        assertStoreError(.argument) { try store.retrieve(soup: "s", idsJSON: "[null]") }
        assertStoreError(.argument) { try store.retrieve(soup: "s", idsJSON: "[1,") }
    }

    func testEntriesRoundTripExactly() throws {
        let input: [String: Any] = ["Id": "x", "nested": ["a": [1, 2, ["b": NSNull()]], "empty": [:] as [String: Any]],
                                    "unicode": "日本語 ✓ 🍲 \u{0} \"q\" \\", "real": 1.25, "neg": -7, "flag": false]
        let stored = try XCTUnwrap(try upsert("s", try jsonText(input)).first)
        let back = try XCTUnwrap(try entries(try store.retrieve(soup: "s", ids: [1])).first)
        XCTAssertEqual(try jsonText(back), try jsonText(stored))
        var expected = input
        expected["_soupEntryId"] = 1
        expected["_soupLastModifiedDate"] = stored["_soupLastModifiedDate"]
        XCTAssertEqual(try jsonText(back), try jsonText(expected))
    }
}

// docs/smartstore.md#upsert-retrieve-remove
final class RemoveTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"k","type":"string"},{"path":"n","type":"integer"},{"path":"t","type":"full_text"}]"#)
    }

    func testRemoveByIds() throws {
        try upsert("s", #"[{"k":"a","t":"one"},{"k":"b","t":"two"},{"k":"c","t":"three"}]"#)
        try store.removeEntries(soup: "s", ids: [1, 3, 99])
        XCTAssertEqual(strings(try entries(try store.retrieve(soup: "s", ids: [1, 2, 3])), "k"), ["b"])
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"one OR three"}"#).totalEntries, 0, "full-text rows go too")
        try store.removeEntries(soup: "s", idsJSON: "[2]")
        XCTAssertEqual(try count("s"), 0)
        try assertRejected(.argument) { try store.removeEntries(soup: "s", idsJSON: #"["2"]"#) }
    }

    func testRemoveByQueryDeletesAllMatchingRows() throws {
        let batch = (0..<57).map { #"{"k":"\#($0 % 3 == 0 ? "x" : "y")","n":\#($0),"t":"word\#($0 % 2) tail"}"# }
        try upsert("s", "[" + batch.joined(separator: ",") + "]")
        let removed = try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"exact","indexPath":"k","matchKey":"y","pageSize":5}"#)
        XCTAssertEqual(removed, 38, "every match is removed, not just one page")
        XCTAssertEqual(try count("s"), 19)
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"k","matchKey":"y"}"#).totalEntries, 0)
        // By range.
        XCTAssertEqual(try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"range","indexPath":"n","beginKey":30,"endKey":45,"pageSize":1}"#), 6)
        // By match (the condition reads the full-text table that the removal also edits).
        let evenBefore = try query("s", #"{"queryType":"match","indexPath":"t","matchKey":"word0"}"#).totalEntries
        XCTAssertGreaterThan(evenBefore, 2)
        XCTAssertEqual(try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"match","indexPath":"t","matchKey":"word0","pageSize":2}"#), Int(evenBefore))
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"word0"}"#).totalEntries, 0)
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"tail"}"#).totalEntries, try count("s"), "the full-text index matches the table")
        // Like; then all (range without keys).
        _ = try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"like","indexPath":"k","likeKey":"z%"}"#)
        XCTAssertGreaterThan(try count("s"), 0)
        let remaining = Int(try count("s"))
        XCTAssertEqual(try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"range","pageSize":1}"#), remaining)
        XCTAssertEqual(try count("s"), 0)
    }

    func testRemoveByQueryRejectsSmartAndBadSpecs() throws {
        try upsert("s", #"[{"k":"a"}]"#)
        try assertRejected(.argument) { try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"smart","smartSql":"select 1"}"#) }
        try assertRejected(.argument) { try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"exact","indexPath":"k"}"#) }
        try assertRejected(.argument) { try store.removeByQuery(soup: "s", specJSON: "[]") }
        try assertRejected(.argument) { try store.removeByQuery(soup: "s", specJSON: #"{"queryType":"match","matchKey":"\"unterminated"}"#) }
    }
}
