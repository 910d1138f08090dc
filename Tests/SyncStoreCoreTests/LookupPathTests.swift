// docs/queries.md#query-specs — a host's spec read from its bytes (syncstore_query_page): a flat
// spec is parsed and planned once per soup and template, and later lookups with other key
// values only bind them. Every answer must equal the one jansson's reading of the same text
// gives, whatever was cached before it.
import XCTest
@testable import SyncStoreCore

final class LookupPathTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("things", #"[{"path":"name","type":"string"},{"path":"n","type":"integer"},{"path":"w","type":"floating"},{"path":"flag","type":"string"}]"#)
        var entries: [String] = []
        for k in 0..<40 {
            entries.append(#"{"name":"item\#(k % 13)","n":\#(k % 7),"w":\#(Double(k) / 4),"flag":\#(k % 3 == 0 ? "true" : "\"no\"")}"#)
        }
        try upsert("things", "[" + entries.joined(separator: ",") + "]")
    }

    /// The page through the bytes path, as syncstore_query_page takes it (a spec that is not
    /// flat is parsed as text), or the error, as text.
    private func viaBytes(_ spec: String, page: Int64 = 0, fallBack: Bool = true) -> String {
        let bytes = Array(spec.utf8)
        do {
            let found = try bytes.withUnsafeBufferPointer { try store.queryPage(soup: "things", specUTF8: $0, page: page) }
            guard let found else {
                guard fallBack else { return "not flat" }
                return try store.queryPage(soup: "things", spec: try QuerySpec.parse(text: spec), page: page).string
            }
            return found.string
        } catch let error as StoreError {
            return "error \(error.code): \(error.message)"
        } catch {
            return "error \(error)"
        }
    }

    /// The page for the spec as jansson reads it (no flat reader, no lookup cache).
    private func viaJansson(_ spec: String, page: Int64 = 0) -> String {
        do {
            let doc = try JSONDocument.parse(spec, what: "query spec")
            return try store.queryPage(soup: "things", spec: try QuerySpec.parse(doc.root), page: page).string
        } catch let error as StoreError {
            return "error \(error.code): \(error.message)"
        } catch {
            return "error \(error)"
        }
    }

    private func assertSame(_ spec: String, page: Int64 = 0, file: StaticString = #filePath, line: UInt = #line) {
        let expected = viaJansson(spec, page: page)
        XCTAssertEqual(viaBytes(spec, page: page), expected, spec, file: file, line: line)
        // Again: the second time the lookup comes from the cache.
        XCTAssertEqual(viaBytes(spec, page: page), expected, "again: \(spec)", file: file, line: line)
    }

    func testKeysChangeUnderOneTemplate() throws {
        for k in 0..<13 {
            assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":"item\#(k)","pageSize":3}"#)
        }
        for k in 0..<7 {
            assertSame(#"{"queryType":"exact","indexPath":"n","matchKey":\#(k),"orderPath":"w","order":"descending"}"#)
            assertSame(#"{"queryType":"range","indexPath":"w","beginKey":\#(k),"endKey":\#(Double(k) + 2.5)}"#)
        }
        for pattern in ["item1%", "%3", "_tem_", "x%"] {
            assertSame(#"{"queryType":"like","indexPath":"name","likeKey":"\#(pattern)"}"#)
        }
    }

    func testMatchKeysAreQualifiedWithTheirColumn() throws {
        // A match lookup's key binds as "column : (key)" for its indexPath, cached or not.
        try register("texts", #"[{"path":"title","type":"full_text"},{"path":"body","type":"full_text"}]"#)
        try upsert("texts", #"[{"title":"blue whale","body":"sea"},{"title":"sea lion","body":"blue"}]"#)
        for (path, key, titles) in [("title", "blue", ["blue whale"]), ("body", "blue", ["sea lion"]),
                                    ("title", "sea", ["sea lion"]), ("body", "sea", ["blue whale"])] {
            let spec = #"{"queryType":"match","indexPath":"\#(path)","matchKey":"\#(key)","orderPath":"title"}"#
            for _ in 0..<2 {
                let page = try Array(spec.utf8).withUnsafeBufferPointer { try store.queryPage(soup: "texts", specUTF8: $0, page: 0) }
                let found = try JSONDocument.parse(try XCTUnwrap(page).string, what: "page").root.elements.map { $0["title"]?.string }
                XCTAssertEqual(found, titles.map { Optional($0) }, spec)
            }
        }
    }

    func testKeyTypesAreNotConfused() throws {
        // One text but for the key's JSON type: each type is read as jansson reads it.
        for key in [#""3""#, "3", "3.0", "true", #""true""#, "null", "false"] {
            assertSame(#"{"queryType":"exact","indexPath":"n","matchKey":\#(key)}"#)
            assertSame(#"{"queryType":"exact","indexPath":"flag","matchKey":\#(key)}"#)
            assertSame(#"{"queryType":"range","indexPath":"n","beginKey":\#(key)}"#)
        }
    }

    func testOtherMembersAreNotKeys() throws {
        // Members that change the plan never share a template.
        for order in ["ascending", "descending"] {
            for size in [1, 2, 5] {
                assertSame(#"{"queryType":"range","indexPath":"n","beginKey":2,"order":"\#(order)","pageSize":\#(size)}"#)
                assertSame(#"{"queryType":"range","indexPath":"n","beginKey":2,"order":"\#(order)","pageSize":\#(size)}"#, page: 2)
            }
        }
        assertSame(#"{"queryType":"range","indexPath":"n","beginKey":2,"endKey":4}"#)
        assertSame(#"{"queryType":"range","indexPath":"n","beginKey":2,"endKey":null}"#)
        assertSame(#"{"queryType":"range","indexPath":"n","endKey":4}"#)
        // A key given twice: the later wins.
        assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":"item1","matchKey":"item2"}"#)
        assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":"item2","matchKey":"item1"}"#)
        assertSame(#"{"queryType":"exact","indexPath":"name","indexPath":"n","matchKey":3}"#)
        // Escapes in a key value and elsewhere, spacing.
        assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":"it\u0065m4"}"#)
        assertSame(#" { "queryType" : "exact" , "indexPath":"name","matchKey":"item4" } "#)
        assertSame(#"{"queryType":"exact","indexPath":"na\u006De","matchKey":"item4"}"#)
        assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":"item4","unknown":[1]}"#)
    }

    func testBadSpecsFailAlike() throws {
        for spec in [#"{"queryType":"exact","indexPath":"name"}"#, #"{"queryType":"exact","indexPath":"name","matchKey":null}"#,
                     #"{"queryType":"like","indexPath":"name","likeKey":null}"#, #"{"queryType":"sideways"}"#,
                     #"{"queryType":"exact","indexPath":"name","matchKey":"a","pageSize":0}"#,
                     #"{"queryType":"exact","indexPath":"a..b","matchKey":"a"}"#, #"{"queryType":"exact","indexPath":"name","matchKey":"a""#,
                     #"{"queryType":"match","matchKey":"a"}"#, "[]", "{}", #"{"queryType":"range","beginKey":1}"#] {
            assertSame(spec)
        }
        // The same template as a lookup that worked, then with a key that makes it invalid.
        assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":"item1"}"#)
        assertSame(#"{"queryType":"exact","indexPath":"name","matchKey":null}"#)
        XCTAssertTrue(viaBytes(#"{"queryType":"exact","indexPath":"name","matchKey":"a"}"#, page: -1).hasPrefix("error"))
        XCTAssertEqual(viaBytes(#"{"queryType":"exact","indexPath":"name","matchKey":"item1","pageSize":100000}"#, page: Int64.max / 2), "[]")
        XCTAssertEqual(viaBytes(#"{"queryType":"smart","smartSql":"select 1"}"#, fallBack: false), "not flat")
        XCTAssertEqual(viaBytes(#"{"queryType":"exact","indexPath":"name","matchKey":"item4","unknown":[1]}"#, fallBack: false), "not flat")
    }

    func testAlteredIndexesArePlannedAgain() throws {
        let spec = #"{"queryType":"exact","indexPath":"n","matchKey":"3"}"#
        assertSame(spec)
        // n becomes a string index: the text key now matches the stored text "3".
        try store.alterSoup("things", specsJSON: #"[{"path":"name","type":"string"},{"path":"n","type":"string"},{"path":"w","type":"floating"}]"#, reIndexData: true)
        assertSame(spec)
        XCTAssertNotEqual(viaBytes(spec), "[]")
        try store.removeSoup("things")
        XCTAssertTrue(viaBytes(spec).hasPrefix("error \(ErrorCode.notFound)"), viaBytes(spec))
    }

    /// Readers map at most the file's first 32 MB (docs/architecture.md, "Decisions"): each
    /// reader's mapped pages count in the host's RSS, so the cap is what bounds it.
    func testReadersMapAtMostTheFirst32MB() throws {
        let mapped = try store.readers.withReader { db in try db.scalarInt("PRAGMA mmap_size") }
        XCTAssertEqual(mapped, 32 << 20)
    }
}
