// The query page scanner (sync down's fast path): it must read exactly what jansson and
// SoupPath read from the same text, and never accept text jansson refuses, because the record
// text is stored as it arrived (docs/smartstore.md#upsert-retrieve-remove: entries are valid JSON; docs/sync.md#sync-down: query pages).
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

final class QueryPageScannerTests: XCTestCase {
    static let paths = [["Id"], ["Name"], ["Account", "Name"], ["Account", "Id"], ["Amount"], ["LastModifiedDate"]]
    let plan = ScanPlan(paths: QueryPageScannerTests.paths, reservedKeys: LocalFlags.storeKeys)!

    private func scan(_ text: String) -> ScannedPage? { ScannedPage.scan(Array(text.utf8), plan: plan) }

    private func expected(_ record: JSON, _ path: [String]) -> String { ScannedPage.comparable(record, at: path) }

    private func actual(_ page: ScannedPage, _ record: Int, _ slot: Int) -> String { page.comparable(record: record, slot: slot) }

    /// The scanner agrees with jansson on `text`: it refuses what jansson refuses (or leaves
    /// the record jansson refuses to the tree path), and reads the same values otherwise.
    private func assertAgrees(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let bytes = Array(text.utf8)
        XCTAssertNil(ScannedPage.disagreement(bytes, plan: plan), text, file: file, line: line)
        let page = ScannedPage.scan(bytes, plan: plan)
        guard let doc = try? RestClient.parse(bytes, method: "GET", path: "query"), !bytes.isEmpty else {
            if let page {
                let treeRecordFails = page.records.contains { r in
                    r.needsTree && (try? RestClient.parse(Array(bytes[Int(r.start)..<Int(r.end)]), method: "GET", path: "r")) == nil
                }
                XCTAssertTrue(treeRecordFails, "scanner accepted text jansson refuses: \(text.debugDescription)", file: file, line: line)
            }
            return
        }
        guard let page else { return }  // declining is always allowed (the tree path takes the page)
        guard let records = doc.root["records"], records.isArray else {
            XCTFail("scanner accepted a page without records: \(text)", file: file, line: line)
            return
        }
        XCTAssertEqual(page.records.count, records.count, file: file, line: line)
        XCTAssertEqual(page.totalSize, doc.root["totalSize"]?.int64, file: file, line: line)
        XCTAssertEqual(page.done, doc.root["done"]?.bool ?? true, file: file, line: line)
        XCTAssertEqual(page.nextRecordsUrl, doc.root["nextRecordsUrl"]?.string, file: file, line: line)
        for (k, record) in records.elements.enumerated() where k < page.records.count {
            let r = page.records[k]
            // The range is exactly the record's text.
            let slice = try? RestClient.parse(Array(bytes[Int(r.start)..<Int(r.end)]), method: "GET", path: "r")
            XCTAssertEqual(slice?.root.dump(), record.dump(), file: file, line: line)
            if r.needsTree { continue }
            for (slot, path) in Self.paths.enumerated() {
                XCTAssertEqual(actual(page, k, slot), expected(record, path), "record \(k) path \(path) in \(text)", file: file, line: line)
            }
        }
    }

    func testReadsAPlainPage() throws {
        let text = """
        {"totalSize":3,"done":false,"nextRecordsUrl":"/services/data/v62.0/query/01g-2000","records":[
         {"attributes":{"type":"Account","url":"/x"},"Id":"001A","Name":"Acme","Amount":12.5,"LastModifiedDate":"2026-01-02T03:04:05.000+0000"},
         {"Id":"001B","Name":null,"Account":{"Name":"Parent","Id":"001P"},"Amount":-7},
         { }
        ]}
        """
        let page = try XCTUnwrap(scan(text))
        XCTAssertEqual(page.records.count, 3)
        XCTAssertEqual(page.totalSize, 3)
        XCTAssertFalse(page.done)
        XCTAssertEqual(page.nextRecordsUrl, "/services/data/v62.0/query/01g-2000")
        XCTAssertEqual(actual(page, 0, 0), "s:001A")
        XCTAssertEqual(actual(page, 0, 4), "r:\((12.5).bitPattern)")
        XCTAssertEqual(actual(page, 1, 1), "null")
        XCTAssertEqual(actual(page, 1, 2), "s:Parent")
        XCTAssertEqual(actual(page, 1, 3), "s:001P")
        XCTAssertEqual(actual(page, 1, 4), "i:-7")
        XCTAssertEqual(actual(page, 2, 0), "null")
        XCTAssertFalse(page.records.contains(where: \.needsTree))
        assertAgrees(text)
    }

    func testDecodesEscapesAndUnicode() throws {
        let text = #"{"done":true,"records":[{"Id":"a\"b\\c\/d\n\u00e9\ud83d\ude00","Name":"caf\u00e9 ☕ 𝄞"}],"nextRecordsUrl":"\/next"}"#
        let page = try XCTUnwrap(scan(text))
        XCTAssertEqual(actual(page, 0, 0), "s:a\"b\\c/d\né😀")
        XCTAssertEqual(actual(page, 0, 1), "s:café ☕ 𝄞")
        XCTAssertEqual(page.nextRecordsUrl, "/next")
        assertAgrees(text)
    }

    // Records the fast path cannot store as sent go to the tree path, one by one.
    func testLeavesUnusualRecordsToTheTreePath() throws {
        let cases = [
            #"{"Id":"1","_soupEntryId":5}"#,                 // a key the store writes
            #"{"Id":"1","__local__":true}"#,
            #"{"Id":"1","Id":"2"}"#,                         // duplicate key on a path
            #"{"I\u0064":"1"}"#,                             // escaped key
            #"{"Id":"1","Account":[{"Name":"a"}]}"#,         // path through an array
            #"{"Id":{"x":1}}"#,                              // index on an object
            #"{"Id":"1","Amount":123456789012345678901}"#,   // beyond 64 bits
            #"{"Id":"1","Other":1e400}"#,                    // a real jansson refuses
        ]
        for record in cases {
            let text = #"{"records":[{"Id":"ok"},"# + record + "]}"
            let page = try XCTUnwrap(scan(text), record)
            XCTAssertEqual(page.records.map(\.needsTree), [false, true], record)
            assertAgrees(text)
        }
    }

    // Text jansson refuses is never accepted: it would be stored as an entry.
    func testRefusesInvalidText() {
        let cases = [
            #"{"records":[{"Id":"1"}]"#, #"{"records":[{"Id":"1"}]} x"#, #"{"records":[{"Id":"1",}]}"#,
            #"{"records":[{"Id":"1"},]}"#, #"{"records":[{"Id":01}]}"#, #"{"records":[{"Id":1.}]}"#,
            #"{"records":[{"Id":-}]}"#, #"{"records":[{"Id":"\x"}]}"#, #"{"records":[{"Id":"\u12"}]}"#,
            #"{"records":[{"Id":"\ud800"}]}"#, #"{"records":[{"Id":"\udc00x"}]}"#, #"{"records":[{"Id":tru}]}"#,
            "{\"records\":[{\"Id\":\"a\tb\"}]}", #"{"records":[{"Id" "1"}]}"#, #"{"records":[{Id:"1"}]}"#,
            #"{"records":[{"Id":"1"}],"records":[]}"#, #"{"records":{"Id":"1"}}"#, #"{"done":true}"#, "",
        ]
        for text in cases { XCTAssertNil(scan(text), text) }
        for bytes: [UInt8] in [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF], [0x00]] {
            let text = Array(#"{"records":[{"Id":""#.utf8) + bytes + Array(#""}]}"#.utf8)
            XCTAssertNil(ScannedPage.scan(text, plan: plan), "\(bytes)")
        }
    }

    // Strings are read eight bytes at a time: each byte that ends a plain run, at every offset
    // of the word, is read as jansson reads it (valid) or refused (invalid).
    func testEveryByteClassAtEveryOffsetOfALongString() throws {
        let valid = [#"\""#, #"\\"#, #"\n"#, #"\u00e9"#, #"\/"#, "é", "😀", "\u{7F}", "~", " ", "\u{7FF}"]
        for special in valid {
            for offset in 0..<18 {
                let value = String(repeating: "a", count: offset) + special + String(repeating: "b", count: 17 - offset)
                let text = #"{"records":[{"Id":"1","Name":"\#(value)"}]}"#
                assertAgrees(text)
                let page = try XCTUnwrap(scan(text), text)
                XCTAssertFalse(page.records[0].needsTree, text)
                let doc = try RestClient.parse(Array(text.utf8), method: "GET", path: "q")
                let record = try XCTUnwrap(doc.root["records"]?.elements.first)
                XCTAssertEqual(actual(page, 0, 1), expected(record, ["Name"]), text)
            }
        }
        let invalid: [[UInt8]] = [[0x01], [0x1F], [0x0A], [0xFF], [0x80], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80]]
        for bytes in invalid {
            for offset in 0..<18 {
                let text = Array(#"{"records":[{"Id":"1","Name":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: offset) + bytes
                    + Array(repeating: UInt8(ascii: "b"), count: 17 - offset) + Array(#""}]}"#.utf8)
                XCTAssertNil(ScannedPage.scan(text, plan: plan), "\(bytes) at \(offset)")
            }
        }
    }

    // Differential fuzz: random pages, then random byte edits of them, against jansson.
    func testAgreesWithJanssonOnRandomAndMutatedPages() {
        var rng = SeededRandom(state: 0x5eed)
        for _ in 0..<400 {
            let text = randomPage(&rng)
            assertAgrees(text)
            var bytes = Array(text.utf8)
            for _ in 0..<8 {
                var mutated = bytes
                let edits = 1 + Int(rng.next() % 3)
                for _ in 0..<edits where !mutated.isEmpty {
                    let at = Int(rng.next() % UInt64(mutated.count))
                    let pool: [UInt8] = Array("{}[]\",:\\u0123456789eE.-+ tfnrl\u{7f}".utf8) + [0xC3, 0xA9, 0xFF, 0x00, 0x0A]
                    switch rng.next() % 3 {
                    case 0: mutated[at] = pool[Int(rng.next() % UInt64(pool.count))]
                    case 1: mutated.remove(at: at)
                    default: mutated.insert(pool[Int(rng.next() % UInt64(pool.count))], at: at)
                    }
                }
                assertAgrees(String(decoding: mutated, as: UTF8.self))
                // Invalid UTF-8 must be refused as bytes too (String(decoding:) repairs it).
                if let page = ScannedPage.scan(mutated, plan: plan), !page.records.contains(where: \.needsTree) {
                    XCTAssertNotNil(try? RestClient.parse(mutated, method: "GET", path: "q"), "accepted bytes jansson refuses: \(mutated)")
                }
                bytes = rng.next() % 4 == 0 ? mutated : bytes
            }
        }
    }

    private func randomPage(_ rng: inout SeededRandom) -> String {
        var records: [String] = []
        for _ in 0..<Int(rng.next() % 5) {
            var members: [String] = []
            let keys = ["Id", "Name", "Account", "Amount", "LastModifiedDate", "Other", "attributes", "I\\u0064", "__local__", "a\\u0000"]
            for _ in 0..<Int(rng.next() % 6) {
                let key = keys[Int(rng.next() % UInt64(keys.count))]
                let value = key == "Account" && rng.next() % 2 == 0
                    ? "{\"Name\":\(randomValue(&rng, depth: 2)),\"Id\":\(randomValue(&rng, depth: 2))}"
                    : randomValue(&rng, depth: 0)
                members.append("\"\(key)\":\(value)")
            }
            records.append("{" + members.joined(separator: rng.next() % 4 == 0 ? " , " : ",") + "}")
        }
        var top = ["\"records\":[" + records.joined(separator: ",") + "]"]
        if rng.next() % 2 == 0 { top.append("\"totalSize\":\(rng.next() % 100)") }
        if rng.next() % 2 == 0 { top.append("\"done\":\(rng.next() % 2 == 0)") }
        if rng.next() % 2 == 0 { top.append("\"nextRecordsUrl\":\"\\/q\\/\(rng.next() % 100)\"") }
        top.shuffle(using: &rng)
        return "{" + top.joined(separator: ",") + "}"
    }

    private func randomValue(_ rng: inout SeededRandom, depth: Int) -> String {
        let scalars = ["null", "true", "false", "0", "-0", "17", "-9223372036854775808", "9223372036854775807",
                       "9223372036854775808", "1.5", "-2.25e10", "1E-5", "6.02e23", "\"\"", "\"plain\"",
                       "\"caf\\u00e9\"", "\"\\ud834\\udd1e\"", "{\"\\u0000\":1}", "[{\"k\\u0000\":2}]", "1\u{0}", "true\u{0}", "\"tab\\t\\\"q\\\"\"", "\"ünïcödé ☕\"", "\"2026-01-02T03:04:05.000Z\""]
        switch rng.next() % 10 {
        case 0 where depth < 3: return "[" + (0..<Int(rng.next() % 3)).map { _ in randomValue(&rng, depth: depth + 1) }.joined(separator: ",") + "]"
        case 1 where depth < 3: return "{\"Name\":\(randomValue(&rng, depth: depth + 1)),\"k\":\(randomValue(&rng, depth: depth + 1))}"
        default: return scalars[Int(rng.next() % UInt64(scalars.count))]
        }
    }
}
