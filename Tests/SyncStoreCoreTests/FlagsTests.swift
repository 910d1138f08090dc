// docs/smartstore.md#local-change-flags — Local-change flags (__local__, __locally_created__, __locally_updated__,
// __locally_deleted__, __last_error__, __sync_id__): set as booleans or strings, queryable
// both when indexed as string and when not indexed.
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/smartstore.md#local-change-flags
final class LocalFlagsTests: StoreTestCase {
    private let flags = ["__local__", "__locally_created__", "__locally_updated__", "__locally_deleted__"]

    private let records = #"""
        [{"Id":"bool-true","__local__":true,"__locally_created__":true,"__locally_updated__":true,"__locally_deleted__":true,"__sync_id__":3,"__last_error__":"{\"message\":\"boom\",\"errorCode\":\"INVALID_FIELD\"}"},
         {"Id":"string-true","__local__":"true","__locally_created__":"true","__locally_updated__":"true","__locally_deleted__":"true","__sync_id__":3},
         {"Id":"bool-false","__local__":false,"__locally_created__":false,"__locally_updated__":false,"__locally_deleted__":false,"__sync_id__":4},
         {"Id":"string-false","__local__":"false","__locally_created__":"false","__locally_updated__":"false","__locally_deleted__":"false"},
         {"Id":"no-flags"}]
        """#

    private func ids(_ page: CursorPage) -> [String] { strings(page.entries, "Id").sorted() }

    func testFlagsIndexedAsStringAcceptBooleansAndStringsAlike() throws {
        let specs = (["Id"] + flags + ["__sync_id__", "__last_error__"]).map { #"{"path":"\#($0)","type":"string"}"# }
        try register("accounts", "[" + specs.joined(separator: ",") + "]")
        try upsert("accounts", records)
        for flag in flags {
            for key in [#""true""#, "true"] {
                let page = try query("accounts", #"{"queryType":"exact","indexPath":"\#(flag)","matchKey":\#(key)}"#)
                XCTAssertEqual(ids(page), ["bool-true", "string-true"], "\(flag) = \(key)")
            }
            for key in [#""false""#, "false"] {
                let page = try query("accounts", #"{"queryType":"exact","indexPath":"\#(flag)","matchKey":\#(key)}"#)
                XCTAssertEqual(ids(page), ["bool-false", "string-false"], "\(flag) = \(key)")
            }
            // The SDK's own Smart SQL compares with the string 'true'.
            let rows = try smart("select {accounts:Id} from {accounts} where {accounts:\(flag)} = 'true' order by {accounts:Id}").rows
            XCTAssertEqual(rows.map { $0.first as? String }, ["bool-true", "string-true"], flag)
        }
        // The stored entries keep what the host wrote (booleans stay booleans).
        let stored = try entries(try store.retrieve(soup: "accounts", ids: [1, 2]))
        XCTAssertTrue(isBool(stored[0]["__local__"], true))
        XCTAssertEqual(stored[1]["__local__"] as? String, "true")
        // __sync_id__ and __last_error__ are ordinary fields.
        XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"__sync_id__","matchKey":3}"#)), ["bool-true", "string-true"])
        let error = try query("accounts", #"{"queryType":"like","indexPath":"__last_error__","likeKey":"%INVALID_FIELD%"}"#)
        XCTAssertEqual(ids(error), ["bool-true"])
        // Dirty records: all whose __local__ is true, whichever form.
        XCTAssertEqual(try smart("select count(*) from {accounts} where {accounts:__local__} in ('true', '1')").rows.first.flatMap { int($0.first) }, 2)
    }

    func testFlagsUnindexedAreQueryable() throws {
        try register("accounts", #"[{"path":"Id","type":"string"}]"#)
        try upsert("accounts", records)
        for flag in flags {
            XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"\#(flag)","matchKey":true}"#)), ["bool-true"], flag)
            XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"\#(flag)","matchKey":"true"}"#)), ["string-true"], flag)
            XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"\#(flag)","matchKey":false}"#)), ["bool-false"], flag)
            XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"\#(flag)","matchKey":"false"}"#)), ["string-false"], flag)
            // In Smart SQL both forms are reachable: json_extract gives 1 for true.
            let rows = try smart("select {accounts:Id} from {accounts} where {accounts:\(flag)} in (1, 'true') order by {accounts:Id}").rows
            XCTAssertEqual(rows.map { $0.first as? String }, ["bool-true", "string-true"], flag)
        }
        XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"__sync_id__","matchKey":3}"#)), ["bool-true", "string-true"])
        XCTAssertEqual(ids(try query("accounts", #"{"queryType":"like","indexPath":"__last_error__","likeKey":"%boom%"}"#)), ["bool-true"])
    }

    /// The engine reads a flag two ways: in Swift (which entries a sync up sends as creates or
    /// deletes) and in SQL (which entries are dirty). Every form must read the same in both.
    func testFlagReadInSwiftAgreesWithTheDirtySQL() throws {
        let forms = ["true", "false", "1", "0", "2", "-1", #""true""#, #""1""#, #""yes""#, #""TRUE""#, "null", "1.0", "2.5", "{}"]
        var set: [String] = []
        for (i, form) in forms.enumerated() {
            let soup = "flags\(i)"
            try register(soup, #"[{"path":"Id","type":"string"}]"#)
            let entry = try upsert(soup, #"[{"Id":"f","__local__":\#(form)}]"#)
            let doc = try JSONDocument.parse(#"{"__local__":\#(form)}"#, what: "flag")
            let dirty = try store.entryCounts(soup: soup).dirty
            XCTAssertEqual(entry.count, 1)
            XCTAssertEqual(LocalFlags.isSet(doc.root["__local__"]), dirty == 1, "__local__: \(form)")
            if dirty == 1 { set.append(form) }
        }
        XCTAssertEqual(set, ["true", "1", #""true""#, #""1""#, "1.0"])
    }

    func testFlagsAsIntegerAndJson1Indexes() throws {
        try register("accounts", #"[{"path":"Id","type":"string"},{"path":"__local__","type":"integer"},{"path":"__locally_created__","type":"json1"}]"#)
        try upsert("accounts", records)
        XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"__local__","matchKey":true}"#)), ["bool-true"])
        XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"__locally_created__","matchKey":true}"#)), ["bool-true"])
        XCTAssertEqual(ids(try query("accounts", #"{"queryType":"exact","indexPath":"__locally_created__","matchKey":"true"}"#)), ["string-true"])
    }
}
