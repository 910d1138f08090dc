// Host upserts stored from their text (SmartStore.upsertScanning) against the tree path: the
// same answers, the same stored text and index values, byte for byte, for every form an entry
// can take (compact or spaced, escapes, reals, -0, duplicate keys, unicode, nesting, reserved
// keys, replacements by external id, a "sent" mark), and the same errors.
import Foundation
import XCTest
@testable import SyncStoreCore
@testable import SyncStoreSync

final class ScannedUpsertTests: StoreTestCase {
    private let specs = #"[{"path":"Id","type":"string"},{"path":"n","type":"integer"},{"path":"r","type":"floating"},{"path":"a.b","type":"string"},{"path":"t","type":"full_text"},{"path":"_soupEntryId","type":"integer"},{"path":"flag","type":"string"}]"#

    private let batches: [String] = [
        #"[{"Id":"a1","n":1,"r":2,"a":{"b":"x"},"t":"hello world","flag":true}]"#,
        #"{"Id":"a2","n":-5}"#,
        #"[ {"Id": "a3", "n": 3} , {"Id":"a4"} ]"#,
        #"[{"Id":"a5","r":1.5},{"Id":"a6","r":0.1},{"Id":"a7","r":1e2},{"Id":"a8","n":-0}]"#,
        #"[{"Id":"a9","s":"tab\tquote\"back\\slash\/ \u00e9 é 😀 \u0041"},{"Id":"a10","s":"line\nfeed"}]"#,
        #"[{"Id":"a11","d":1,"d":2},{"Id":"a12","nested":{"k":1,"k":2}},{"Id":"a13","list":[1,{"x":[]},{}],"empty":{}}]"#,
        #"[{},{"Id":"a14","a":{"b":{"c":1}}},{"Id":"a15","a":[{"b":"in array"}]}]"#,
        #"[{"Id":"a16","__sync_create_sent__":"x","__local__":true,"__locally_created__":true}]"#,
        #"[{"Id":"a17","_soupLastModifiedDate":5},{"Id":"a18","n":9223372036854775807},{"Id":"a19","big":12345678901234567890}]"#,
        #"[{"Id":"a1","n":100},{"Id":"a20","n":20},{"Id":"a20","n":21}]"#,
    ]

    /// The answer and the stored rows of each batch, the timestamps masked.
    private func run(scanning: Bool, externalIdPath: String?) throws -> [String] {
        let store = try reopenStore()
        store.scansHostUpserts = scanning
        try? store.removeSoup("s")
        try store.registerSoup("s", specsJSON: specs)
        var log: [String] = []
        for batch in batches {
            do {
                log.append(mask(try store.upsert(soup: "s", entriesJSON: batch, externalIdPath: externalIdPath).string))
            } catch let error as StoreError {
                log.append("error \(error.code) \(error.message)")
            }
        }
        let info = try store.requireSoup("s")
        let columns = info.columnIndexes.map(\.columnName).joined(separator: ", ")
        let rows = try store.readers.withReader { db -> [String] in
            let statement = try db.prepare("SELECT id, soup, \(columns) FROM \(info.table) ORDER BY id")
            var rows: [String] = []
            while try statement.step() {
                var row: [String] = []
                for i in 0..<statement.columnCount {
                    row.append(statement.isNull(i) ? "NULL" : "\(statement.type(i)):\(statement.text(i))")
                }
                rows.append(mask(row.joined(separator: " | ")))
            }
            return rows
        }
        let text = try store.queryPage(soup: "s", specJSON: #"{"queryType":"match","indexPath":"t","matchKey":"hello"}"#, page: 0).string
        return log + rows + [mask(text)]
    }

    private func mask(_ text: String) -> String {
        text.replacingOccurrences(of: #""_soupLastModifiedDate":\d+"#, with: "\"_soupLastModifiedDate\":T", options: .regularExpression)
    }

    func testScannedUpsertsEqualTheTreePathByteForByte() throws {
        for path in [nil, "Id"] {
            let tree = try run(scanning: false, externalIdPath: path)
            let scanned = try run(scanning: true, externalIdPath: path)
            XCTAssertEqual(tree.count, scanned.count)
            for (a, b) in zip(tree, scanned) { XCTAssertEqual(a, b, "external id path \(path ?? "none")") }
        }
    }

    func testBadEntriesFailAsBeforeAndStoreNothing() throws {
        let store = try self.store
        try store.registerSoup("s", specsJSON: specs)
        for bad in [#"[{"Id":"x"}, 3]"#, #"[{"Id":"x"}"#, #"{"Id":"\ud800"}"#, "[{\"Id\":\"\u{1}\"}]", #"[{"Id":"x"}] extra"#, #""text""#] {
            var messages: [String] = []
            for scanning in [false, true] {
                store.scansHostUpserts = scanning
                XCTAssertThrowsError(try store.upsert(soup: "s", entriesJSON: bad), bad) { messages.append("\($0)") }
            }
            XCTAssertEqual(messages.count, 2)
            XCTAssertEqual(messages.first, messages.last, bad)
        }
        XCTAssertEqual(try store.queryPage(soup: "s", specJSON: #"{"queryType":"range","pageSize":10}"#, page: 0).string, "[]")
    }

    /// The scanner reads strings eight bytes at a time: each byte that ends that (a quote, an
    /// escape, a control byte, UTF-8 past ASCII, and the edges 0x1F/0x20, 0x7E/0x7F) at every
    /// offset of the word, in keys and values, read alike by both paths.
    func testEverySpecialByteAtEveryOffsetOfAString() throws {
        let specials = [#"\""#, #"\\"#, #"\n"#, #"\u00e9"#, #"\/"#, "é", "😀", "\u{7F}", "~", " ", "\u{1F}", "\u{1}", "\u{80}", "\u{7FF}"]
        var valid: [String] = [], invalid: [String] = []
        for special in specials {
            for offset in 0..<18 {
                let text = String(repeating: "a", count: offset) + special + String(repeating: "b", count: 17 - offset)
                let entry = #"{"Id":"\#(text)","\#(text)":1,"n":\#(offset)}"#
                if special.unicodeScalars.allSatisfy({ $0.value >= 0x20 }) { valid.append(entry) } else { invalid.append(entry) }
            }
        }
        let store = try self.store
        var answers: [[String]] = []
        for scanning in [false, true] {
            store.scansHostUpserts = scanning
            try? store.removeSoup("s")
            try store.registerSoup("s", specsJSON: specs)
            var log = [mask(try store.upsert(soup: "s", entriesJSON: "[" + valid.joined(separator: ",") + "]").string)]
            for entry in invalid {
                XCTAssertThrowsError(try store.upsert(soup: "s", entriesJSON: entry), entry) { log.append("\($0)") }
            }
            answers.append(log)
        }
        XCTAssertEqual(answers[0].count, 1 + invalid.count)
        XCTAssertEqual(answers[0], answers[1])
    }
}
