// Bad input across docs/smartstore.md#bad-input: malformed JSON, wrong JSON types, huge values. Every
// rejection is a StoreError with the right code and leaves a full dump of the store unchanged.
// (Invalid UTF-8 cannot be built as a Swift String; the C tests cover it at the ABI.)
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/smartstore.md#bad-input bad input
final class BadInputTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"k","type":"string"},{"path":"n","type":"integer"},{"path":"t","type":"full_text"}]"#)
        try upsert("s", #"[{"k":"a","n":1,"t":"hello"},{"k":"b","n":2,"t":"world"}]"#)
    }

    private let malformed = ["", " ", "{", "[", "[{]", #"{"a":}"#, #"{"a" 1}"#, "[1,]", #"{"a":1,}"#, "nul", "tru",
                             #"{'a':1}"#, #"{"a":1}}"#, #"[{"a":1}] [{"b":2}]"#, #"{"a":"\x"}"#, #"{"a":"\uZZZZ"}"#,
                             "{\"a\":\"raw\ncontrol\"}", "NaN", #"{"a":NaN}"#, #"{"a":Infinity}"#, "01", #"{"a":1e}"#]

    func testMalformedJSONEverywhere() throws {
        for text in malformed {
            try assertRejected(.argument, "entries \(text.debugDescription)") { try store.upsert(soup: "s", entriesJSON: text) }
            try assertRejected(.argument, "specs \(text.debugDescription)") { try store.registerSoup("new", specsJSON: text) }
            try assertRejected(.argument, "alter \(text.debugDescription)") { try store.alterSoup("s", specsJSON: text, reIndexData: true) }
            try assertRejected(.argument, "reindex \(text.debugDescription)") { try store.reIndexSoup("s", pathsJSON: text) }
            try assertRejected(.argument, "retrieve \(text.debugDescription)") { try store.retrieve(soup: "s", idsJSON: text) }
            try assertRejected(.argument, "remove \(text.debugDescription)") { try store.removeEntries(soup: "s", idsJSON: text) }
            try assertRejected(.argument, "removeByQuery \(text.debugDescription)") { try store.removeByQuery(soup: "s", specJSON: text) }
            try assertRejected(.argument, "query \(text.debugDescription)") { try store.querySoup("s", specJSON: text) }
            try assertRejected(.argument, "smart \(text.debugDescription)") { try store.runSmartQuery(specJSON: text) }
            try assertRejected(.argument, "store config file \(text.debugDescription)") { try store.loadStoreConfig(json: text) }
            if !text.isEmpty {  // "" is the default store (an optional JSON argument)
                assertStoreError(.argument, "storeConfig \(text.debugDescription)") { try StoreConfig.parse(text) }
            }
        }
        XCTAssertFalse(try store.soupExists("new"))
    }

    func testTextAfterANulCharacterIsNotIgnored() throws {
        // A raw NUL is not JSON; what follows it must not be silently dropped.
        for text in ["{\"k\":\"a\"}\u{0}{\"k\":\"b\"}", "[{\"k\":\"a\"}]\u{0}", "{\"k\":\"a\u{0}b\"}"] {
            try assertRejected(.argument, text.debugDescription) { try store.upsert(soup: "s", entriesJSON: text) }
            try assertRejected(.argument, text.debugDescription) { try store.querySoup("s", specJSON: text) }
        }
        assertStoreError(.argument) { try StoreConfig.parse("true\u{0}") }
    }

    func testMalformedErrorsSayWhere() throws {
        let error = assertStoreError(.argument) { try store.upsert(soup: "s", entriesJSON: "[{\"k\":\"a\"},\n {\"k\": }]") }
        XCTAssertTrue(error?.message.contains("line 2") ?? false, error?.message ?? "")
    }

    func testWrongJSONTypes() throws {
        // Entries must be objects.
        for text in ["1", #""text""#, "true", "null", "[1,2]", #"[{"k":"ok"},"x"]"#, "[[]]", "[null]"] {
            try assertRejected(.argument, "entries \(text)") { try store.upsert(soup: "s", entriesJSON: text) }
        }
        // Ids must be integers.
        for text in [#"["1"]"#, "[1.5]", "[true]", "[null]", "[[1]]", #"{"id":1}"#, #""1""#, "1.0", "[1e3]"] {
            try assertRejected(.argument, "retrieve \(text)") { try store.retrieve(soup: "s", idsJSON: text) }
            try assertRejected(.argument, "remove \(text)") { try store.removeEntries(soup: "s", idsJSON: text) }
        }
        // Specs must be arrays of {path, type}.
        for text in [#"{"path":"a","type":"string"}"#, #""a""#, "1", "null", "true", "[[]]", #"[{"path":["a"],"type":"string"}]"#,
                     #"[{"path":"a","type":["string"]}]"#, #"[null]"#] {
            try assertRejected(.argument, "register \(text)") { try store.registerSoup("new", specsJSON: text) }
            try assertRejected(.argument, "alter \(text)") { try store.alterSoup("s", specsJSON: text, reIndexData: false) }
        }
        // Query specs must be objects with well-typed members.
        for text in ["[]", "1", #""exact""#, #"{"indexPath":["k"]}"#, #"{"pageSize":"5"}"#, #"{"pageSize":true}"#, #"{"order":1}"#,
                     #"{"smartSql":1,"queryType":"smart"}"#, #"{"selectPaths":{"k":1}}"#, #"{"queryType":null,"pageSize":0}"#] {
            try assertRejected(.argument, "query \(text)") { try store.querySoup("s", specJSON: text) }
        }
        // A store config file needs {"soups": [...]}.
        for text in ["[]", #"{"soups":{}}"#, #"{"soups":[{"indexes":[]}]}"#, #"{"soups":[{"soupName":"x"}]}"#,
                     #"{"soups":[{"soupName":"x","indexes":[]}]}"#, #"{"soups":[{"soupName":"","indexes":[{"path":"a","type":"string"}]}]}"#,
                     #"{"soups":[{"soupName":"ok","indexes":[{"path":"a","type":"string"}]},{"soupName":"bad","indexes":[{"path":"a","type":"zzz"}]}]}"#] {
            try assertRejected(.argument, "store config \(text)") { try store.loadStoreConfig(json: text) }
        }
        XCTAssertFalse(try store.soupExists("ok"), "a bad store config registers nothing")
    }

    func testNonStringQueryTypeIsRejected() throws {
        // A queryType that is not a string must not silently become "range" (which would return everything).
        try assertRejected(.argument) { try store.querySoup("s", specJSON: #"{"queryType":1}"#) }
        try assertRejected(.argument) { try store.querySoup("s", specJSON: #"{"queryType":{"exact":1}}"#) }
        try assertRejected(.argument) { try store.removeByQuery(soup: "s", specJSON: #"{"queryType":["exact"],"indexPath":"k","matchKey":"a"}"#) }
    }

    func testHugeStringValueRoundTrips() throws {
        let big = String(repeating: "0123456789abcdef", count: 5 * 1024 * 1024 / 16)
        let stored = try upsert("s", try jsonText(["k": "big", "t": "huge text", "payload": big]))
        let id = try XCTUnwrap(ids(stored).first)
        let back = try XCTUnwrap(try entries(try store.retrieve(soup: "s", ids: [id])).first)
        XCTAssertEqual((back["payload"] as? String)?.count, big.count)
        XCTAssertEqual(back["payload"] as? String, big)
        // A huge value in an indexed path is indexed too.
        try upsert("s", try jsonText(["k": big]))
        XCTAssertEqual(try query("s", try spec(["queryType": "exact", "indexPath": "k", "matchKey": big])).totalEntries, 1)
    }

    func testIntegerBeyondInt64IsRejected() throws {
        for text in [#"{"k":"x","n":9223372036854775808}"#, #"{"k":"x","n":-9223372036854775809}"#, #"{"k":"x","n":99999999999999999999999}"#] {
            try assertRejected(.argument, text) { try store.upsert(soup: "s", entriesJSON: text) }
        }
        try assertRejected(.argument) { try store.retrieve(soup: "s", idsJSON: "[18446744073709551616]") }
        // The extremes that fit are stored exactly.
        let stored = try upsert("s", #"[{"k":"max","n":9223372036854775807},{"k":"min","n":-9223372036854775808}]"#)
        // (Checked on the text: Foundation reads Int64.min as a decimal.)
        let back = try store.retrieve(soup: "s", ids: ids(stored)).string
        XCTAssertTrue(back.contains(#""n":9223372036854775807"#), back)
        XCTAssertTrue(back.contains(#""n":-9223372036854775808"#), back)
        XCTAssertEqual(try query("s", #"{"queryType":"range","indexPath":"n","beginKey":9223372036854775807}"#).entries.count, 1)
        // Huge _soupEntryId values are not found, not a crash.
        try assertRejected(.notFound) { try store.upsert(soup: "s", entriesJSON: #"{"_soupEntryId":9223372036854775807}"#) }
        XCTAssertEqual(try entries(try store.retrieve(soup: "s", ids: [Int64.max, Int64.min, 0, -1])).count, 0)
    }

    func testDeepNestingAndOddValues() throws {
        // Deeply nested input: jansson limits depth; either it is stored or rejected, never a crash.
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        do { _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"deep","v":\#(deep)}"#) } catch let error as StoreError {
            XCTAssertEqual(error.code, .argument)
        }
        // NUL characters inside strings survive.
        let stored = try upsert("s", #"{"k":"nul\u0000inside"}"#)
        let back = try entries(try store.retrieve(soup: "s", ids: ids(stored)))
        XCTAssertEqual(back.first?["k"] as? String, "nul\u{0}inside")
        // Empty keys and odd keys are data.
        let odd = try upsert("s", #"{"":1,"a.b":2,"k":"odd"}"#)
        XCTAssertEqual(int(try entries(try store.retrieve(soup: "s", ids: ids(odd))).first?["a.b"]), 2)
    }

    func testEmptyAndMissingNames() throws {
        try assertRejected(.notFound) { try store.upsert(soup: "", entriesJSON: "{}") }
        try assertRejected(.notFound) { try store.querySoup("", specJSON: "{}") }
        try assertRejected(.notFound) { try store.clearSoup("") }
        try assertRejected(.notFound) { try store.indexSpecsJSON("") }
        XCTAssertFalse(try store.soupExists(""))
    }
}

/// The snapshot used by every "store unchanged" assertion must see any change.
// docs/smartstore.md#bad-input bad input
final class SnapshotSelfTests: StoreTestCase {
    func testSnapshotSeesEveryKindOfChange() throws {
        try register("s", #"[{"path":"k","type":"string"},{"path":"t","type":"full_text"}]"#)
        try upsert("s", #"{"k":"a","t":"one"}"#)
        var before = try snapshot()
        XCTAssertEqual(try snapshot(), before, "a snapshot is stable")
        try upsert("s", #"{"_soupEntryId":1,"k":"a","t":"one"}"#) // same content, new date
        sleepMillis(2)
        XCTAssertNotEqual(try snapshot(), before, "an update changes the snapshot")
        before = try snapshot()
        try store.registerSoup("other", specsJSON: #"[{"path":"x","type":"integer"}]"#)
        XCTAssertNotEqual(try snapshot(), before, "a new soup changes the snapshot")
        before = try snapshot()
        try rawExec(dbPath, "UPDATE \(try XCTUnwrap(try store.soup("s")).table)_fts SET \(try XCTUnwrap(try store.soup("s")).table)_1 = 'changed'")
        XCTAssertNotEqual(try snapshot().raw, before.raw, "a full-text change shows in the raw dump")
        before = try snapshot()
        try rawExec(dbPath, "UPDATE soup_index_map SET type = 'integer' WHERE path = 'k'")
        XCTAssertNotEqual(try snapshot().raw, before.raw, "a metadata change shows in the raw dump")
    }
}
