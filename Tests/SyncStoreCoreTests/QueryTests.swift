// docs/queries.md#query-specs — Query specs and cursors: exact, range, like, match, order, orderPath,
// selectPaths, pageSize, cursor paging, numeric comparisons, unindexed paths.
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/queries.md#query-specs
final class QuerySpecTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("animals", #"[{"path":"name","type":"string"},{"path":"legs","type":"integer"},{"path":"weight","type":"floating"},{"path":"description","type":"full_text"},{"path":"color","type":"full_text"},{"path":"kind","type":"json1"}]"#)
        try upsert("animals", """
            [{"name":"cat","legs":4,"weight":4.5,"description":"grey tabby cat","color":"grey","kind":"mammal","zone":"house"},
             {"name":"dog","legs":4,"weight":30.25,"description":"black dog","color":"black","kind":"mammal","zone":"house"},
             {"name":"spider","legs":8,"weight":0.01,"description":"black widow","color":"black","kind":"arachnid","zone":"shed"},
             {"name":"bird","legs":2,"weight":0.5,"description":"green parrot","color":"green","kind":"bird","zone":"tree"},
             {"name":"panther","legs":4,"weight":60,"description":"black cat big","color":"black tabby","kind":"mammal","zone":"jungle"},
             {"name":"greyhound","legs":4,"weight":27,"description":"fast dog","color":"grey","kind":"mammal","zone":"track"}]
            """)
    }

    private func names(_ spec: String) throws -> [String] { strings(try query("animals", spec).entries, "name") }

    func testExact() throws {
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"name","matchKey":"dog"}"#), ["dog"])
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"legs","matchKey":8}"#), ["spider"])
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"legs","matchKey":4,"orderPath":"name"}"#), ["cat", "dog", "greyhound", "panther"])
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"weight","matchKey":0.5}"#), ["bird"])
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"kind","matchKey":"arachnid"}"#), ["spider"])
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"name","matchKey":"Dog"}"#), [], "exact is case-sensitive")
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"name","matchKey":"do"}"#), [])
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"_soupEntryId","matchKey":3}"#), ["spider"])
    }

    func testRange() throws {
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"legs","beginKey":4,"orderPath":"_soupEntryId"}"#), ["cat", "dog", "spider", "panther", "greyhound"])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"legs","endKey":4,"orderPath":"_soupEntryId"}"#), ["cat", "dog", "bird", "panther", "greyhound"])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"weight","beginKey":0.5,"endKey":27}"#), ["bird", "cat", "greyhound"], "both keys, inclusive, ordered by indexPath")
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"name","beginKey":"d","endKey":"gz"}"#), ["dog", "greyhound"])
        // Neither key: everything, ordered by the index path.
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"name"}"#), ["bird", "cat", "dog", "greyhound", "panther", "spider"])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"name","beginKey":null,"endKey":null}"#), ["bird", "cat", "dog", "greyhound", "panther", "spider"])
        // No spec keys at all: all entries by _soupEntryId.
        XCTAssertEqual(try query("animals", "{}").ids, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"weight","beginKey":100}"#), [])
    }

    func testLike() throws {
        XCTAssertEqual(try names(#"{"queryType":"like","indexPath":"name","likeKey":"%er%"}"#), ["panther", "spider"])
        XCTAssertEqual(try names(#"{"queryType":"like","indexPath":"name","likeKey":"gr%"}"#), ["greyhound"])
        XCTAssertEqual(try names(#"{"queryType":"like","indexPath":"name","likeKey":"_og"}"#), ["dog"])
        XCTAssertEqual(try names(#"{"queryType":"like","indexPath":"zone","likeKey":"%u%"}"#), ["cat", "dog", "panther"], "like on an unindexed path")
    }

    func testMatch() throws {
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"color","matchKey":"gr*","orderPath":"name"}"#), ["cat", "bird", "greyhound"].sorted())
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"color","matchKey":"black NOT tabby","orderPath":"name"}"#), ["dog", "spider"])
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"color","matchKey":"green OR tabby","orderPath":"name"}"#), ["bird", "panther"])
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"color","matchKey":"black AND tabby"}"#), ["panther"])
        // The term is qualified with the column: "tabby" is in cat's description but not its color.
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"color","matchKey":"tabby"}"#), ["panther"])
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"description","matchKey":"tabby"}"#), ["cat"])
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":"description","matchKey":"cat NOT grey"}"#), ["panther"])
        // Null indexPath: all full_text columns.
        XCTAssertEqual(try names(#"{"queryType":"match","matchKey":"tabby","orderPath":"name"}"#), ["cat", "panther"])
        XCTAssertEqual(try names(#"{"queryType":"match","indexPath":null,"matchKey":"green OR widow","orderPath":"name"}"#), ["bird", "spider"])
        // Errors: not a full_text path, no full_text in the soup, bad FTS syntax, missing key.
        assertStoreError(.argument) { try query("animals", #"{"queryType":"match","indexPath":"name","matchKey":"cat"}"#) }
        assertStoreError(.argument) { try query("animals", #"{"queryType":"match","indexPath":"color","matchKey":"\"open"}"#) }
        assertStoreError(.argument) { try query("animals", #"{"queryType":"match","indexPath":"color"}"#) }
        try register("plain", #"[{"path":"a","type":"string"}]"#)
        assertStoreError(.argument) { try query("plain", #"{"queryType":"match","matchKey":"x"}"#) }
    }

    func testOrderAndOrderPath() throws {
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"weight","order":"ascending"}"#), ["spider", "bird", "cat", "greyhound", "dog", "panther"])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"weight","order":"descending"}"#), ["panther", "dog", "greyhound", "cat", "bird", "spider"])
        // orderPath differs from indexPath.
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"legs","matchKey":4,"orderPath":"weight","order":"descending"}"#), ["panther", "dog", "greyhound", "cat"])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"legs","beginKey":4,"orderPath":"name","order":"descending"}"#), ["spider", "panther", "greyhound", "dog", "cat"])
        // Order by an unindexed path and by system paths.
        XCTAssertEqual(try names(#"{"queryType":"range","orderPath":"zone","order":"ascending"}"#).first, "cat")
        XCTAssertEqual(try query("animals", #"{"queryType":"range","orderPath":"_soupEntryId","order":"descending"}"#).ids, [6, 5, 4, 3, 2, 1])
        XCTAssertEqual(try query("animals", #"{"queryType":"range","order":"descending"}"#).ids, [6, 5, 4, 3, 2, 1])
        assertStoreError(.argument) { try query("animals", #"{"queryType":"range","order":"up"}"#) }
    }

    func testSelectPaths() throws {
        let page = try query("animals", #"{"queryType":"exact","indexPath":"legs","matchKey":4,"orderPath":"name","selectPaths":["name","weight","zone","_soupEntryId"]}"#)
        XCTAssertEqual(page.rows.count, 4)
        XCTAssertEqual(page.rows.map { $0[0] as? String }, ["cat", "dog", "greyhound", "panther"])
        XCTAssertEqual(page.rows.map { double($0[1]) }, [4.5, 30.25, 27, 60])
        XCTAssertEqual(page.rows.map { $0[2] as? String }, ["house", "house", "track", "jungle"], "unindexed paths are read from the JSON")
        XCTAssertEqual(page.rows.map { int($0[3]) }, [1, 2, 6, 5])
        // _soup gives the whole entry as an object.
        let whole = try query("animals", #"{"queryType":"exact","indexPath":"name","matchKey":"bird","selectPaths":["_soup"]}"#).rows
        XCTAssertEqual((whole.first?.first as? Entry)?["color"] as? String, "green")
        // A missing path gives null.
        let missing = try query("animals", #"{"queryType":"exact","indexPath":"name","matchKey":"bird","selectPaths":["nope"]}"#).rows
        XCTAssertTrue(missing.first?.first is NSNull)
        assertStoreError(.argument) { try query("animals", #"{"selectPaths":"name"}"#) }
        assertStoreError(.argument) { try query("animals", #"{"selectPaths":[1]}"#) }
    }

    func testNumericComparisonsAreNumeric() throws {
        try register("nums", #"[{"path":"i","type":"integer"},{"path":"f","type":"floating"},{"path":"s","type":"string"}]"#)
        try upsert("nums", #"[{"i":10,"f":10.5,"s":"10","u":10},{"i":9,"f":9.75,"s":"9","u":9},{"i":100,"f":100.125,"s":"100","u":100},{"i":-1,"f":-0.5,"s":"-1","u":-1}]"#)
        func values(_ spec: String, _ key: String) throws -> [Double] { try query("nums", spec).entries.compactMap { double($0[key]) } }
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"i"}"#, "i"), [-1, 9, 10, 100])
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"i","beginKey":10}"#, "i"), [10, 100], "9 < 10")
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"i","endKey":9}"#, "i"), [-1, 9])
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"f","beginKey":9.8,"endKey":100.2}"#, "f"), [10.5, 100.125])
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"f","order":"descending"}"#, "f"), [100.125, 10.5, 9.75, -0.5])
        // Unindexed numbers are compared as numbers too (read from the JSON).
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"u","beginKey":10}"#, "u"), [10, 100])
        XCTAssertEqual(try values(#"{"queryType":"range","orderPath":"u"}"#, "u"), [-1, 9, 10, 100])
        // A string index compares as text (documented SDK behaviour).
        XCTAssertEqual(try query("nums", #"{"queryType":"range","indexPath":"s"}"#).entries.compactMap { $0["s"] as? String }, ["-1", "10", "100", "9"])
        // Integer keys given as strings still compare numerically on integer indexes.
        XCTAssertEqual(try values(#"{"queryType":"range","indexPath":"i","beginKey":"10"}"#, "i"), [10, 100])
    }

    func testUnindexedPathsAreQueryable() throws {
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"zone","matchKey":"house"}"#), ["cat", "dog"])
        XCTAssertEqual(try names(#"{"queryType":"range","indexPath":"zone","beginKey":"shed"}"#), ["spider", "greyhound", "bird"], "ordered by zone")
        try upsert("animals", #"{"name":"deep","nested":{"a":{"b":"x"}}}"#)
        XCTAssertEqual(try names(#"{"queryType":"exact","indexPath":"nested.a.b","matchKey":"x"}"#), ["deep"])
    }
}

// docs/queries.md#query-specs
final class CursorTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"n","type":"integer"}]"#)
        try upsert("s", "[" + (1...25).map { #"{"n":\#($0)}"# }.joined(separator: ",") + "]")
    }

    func testPagingAndTotals() throws {
        let first = try query("s", #"{"queryType":"range","indexPath":"n","pageSize":10}"#)
        XCTAssertEqual(first.totalEntries, 25)
        XCTAssertEqual(first.totalPages, 3)
        XCTAssertEqual(first.pageSize, 10)
        XCTAssertEqual(first.currentPageIndex, 0)
        XCTAssertEqual(first.ids, Array(1...10))
        let second = try CursorPage(store.moveCursor(first.cursorId, toPage: 1))
        XCTAssertEqual(second.currentPageIndex, 1)
        XCTAssertEqual(second.ids, Array(11...20))
        XCTAssertEqual(second.cursorId, first.cursorId)
        let last = try CursorPage(store.moveCursor(first.cursorId, toPage: 2))
        XCTAssertEqual(last.ids, Array(21...25))
        // Clamped.
        let beyond = try CursorPage(store.moveCursor(first.cursorId, toPage: 99))
        XCTAssertEqual(beyond.currentPageIndex, 2)
        XCTAssertEqual(beyond.ids, Array(21...25))
        let before = try CursorPage(store.moveCursor(first.cursorId, toPage: -3))
        XCTAssertEqual(before.currentPageIndex, 0)
        XCTAssertEqual(before.ids, Array(1...10))
        XCTAssertEqual(try CursorPage(store.moveCursor(first.cursorId, toPage: Int64.max)).currentPageIndex, 2)
        XCTAssertEqual(try CursorPage(store.moveCursor(first.cursorId, toPage: Int64.min)).currentPageIndex, 0)
        // Default page size is 10.
        XCTAssertEqual(try query("s", "{}").pageSize, 10)
        XCTAssertEqual(try query("s", #"{"pageSize":25}"#).totalPages, 1)
        XCTAssertEqual(try query("s", #"{"pageSize":1}"#).totalPages, 25)
    }

    func testEmptyResult() throws {
        let page = try query("s", #"{"queryType":"exact","indexPath":"n","matchKey":999}"#)
        XCTAssertEqual(page.totalEntries, 0)
        XCTAssertEqual(page.totalPages, 0)
        XCTAssertEqual(page.items.count, 0)
        let moved = try CursorPage(store.moveCursor(page.cursorId, toPage: 3))
        XCTAssertEqual(moved.currentPageIndex, 0)
        XCTAssertEqual(moved.items.count, 0)
    }

    func testCloseThenMoveIsNotFound() throws {
        let page = try query("s", #"{"pageSize":5}"#)
        try store.closeCursor(page.cursorId)
        assertStoreError(.notFound) { try store.moveCursor(page.cursorId, toPage: 1) }
        try store.closeCursor(page.cursorId) // closing twice is fine
        assertStoreError(.notFound) { try store.moveCursor(12345, toPage: 0) }
        // Other cursors stay open.
        let a = try query("s", #"{"pageSize":5}"#)
        let b = try query("s", #"{"pageSize":5}"#)
        XCTAssertNotEqual(a.cursorId, b.cursorId)
        try store.closeCursor(a.cursorId)
        XCTAssertEqual(try CursorPage(store.moveCursor(b.cursorId, toPage: 1)).ids, Array(6...10))
    }

    func testCursorOverARemovedOrAlteredSoupFailsCleanly() throws {
        let page = try query("s", #"{"queryType":"range","indexPath":"n","pageSize":5}"#)
        try store.alterSoup("s", specsJSON: #"[{"path":"m","type":"integer"}]"#, reIndexData: true)
        // The plan named a column that is gone: an error, not a crash, and the cursor can be closed.
        do { _ = try store.moveCursor(page.cursorId, toPage: 1) } catch is StoreError {}
        try store.closeCursor(page.cursorId)
        let other = try query("s", #"{"queryType":"range","pageSize":5}"#)
        try store.removeSoup("s")
        let error = assertStoreError(.notFound) { try store.moveCursor(other.cursorId, toPage: 1) }
        XCTAssertTrue(error?.message.contains("query again") ?? false, error?.message ?? "")
        try register("s", #"[{"path":"n","type":"integer"}]"#)
        assertStoreError(.notFound, "a re-registered soup is a different soup") { try store.moveCursor(other.cursorId, toPage: 0) }
    }

    func testPagesAreRequeriedButTotalEntriesStays() throws {
        let page = try query("s", #"{"queryType":"range","indexPath":"n","beginKey":20,"pageSize":4}"#)
        XCTAssertEqual(page.totalEntries, 6)
        XCTAssertEqual(page.totalPages, 2)
        try upsert("s", #"[{"n":26},{"n":27}]"#)
        let second = try CursorPage(store.moveCursor(page.cursorId, toPage: 1))
        XCTAssertEqual(second.totalEntries, 6, "totalEntries is counted at open")
        XCTAssertEqual(second.totalPages, 2)
        XCTAssertEqual(second.entries.compactMap { int($0["n"]) }, [24, 25, 26, 27], "the page is re-queried: new entries show up")
        // A removal shows too.
        try store.removeEntries(soup: "s", ids: [20])
        let first = try CursorPage(store.moveCursor(page.cursorId, toPage: 0))
        XCTAssertEqual(first.entries.compactMap { int($0["n"]) }, [21, 22, 23, 24])
    }

    func testQuerySoupRejectsSmartAndRunSmartQueryRejectsOthers() throws {
        try assertRejected(.argument) { try store.querySoup("s", specJSON: #"{"queryType":"smart","smartSql":"select 1"}"#) }
        for spec in [#"{"queryType":"exact","indexPath":"n","matchKey":1}"#, #"{"queryType":"range"}"#, "{}",
                     #"{"queryType":"like","indexPath":"n","likeKey":"1"}"#, #"{"queryType":"smart"}"#] {
            try assertRejected(.argument, spec) { try store.runSmartQuery(specJSON: spec) }
        }
        XCTAssertEqual(try smart("select count(*) from {s}").rows.first.flatMap { int($0.first) }, 25)
    }

    func testBadQuerySpecs() throws {
        let bad = [
            #"{"queryType":"fuzzy"}"#, #"{"queryType":1}"#,
            #"{"queryType":"exact","matchKey":1}"#, #"{"queryType":"exact","indexPath":"n"}"#,
            #"{"queryType":"exact","indexPath":"n","matchKey":null}"#,
            #"{"queryType":"like","indexPath":"n"}"#, #"{"queryType":"like","likeKey":"x"}"#,
            #"{"queryType":"range","beginKey":1}"#,
            #"{"pageSize":0}"#, #"{"pageSize":-1}"#, #"{"pageSize":"10"}"#, #"{"pageSize":1.5}"#, #"{"pageSize":100000000000}"#,
            #"{"indexPath":5}"#, #"{"indexPath":""}"#, #"{"indexPath":"a..b"}"#, #"{"orderPath":"a."}"#,
            #"{"order":"DESC"}"#, "[]", "null", "1", #""range""#, "{", #"{"queryType":"range"} x"#,
        ]
        for spec in bad { try assertRejected(.argument, spec) { try store.querySoup("s", specJSON: spec) } }
        try assertRejected(.notFound) { try store.querySoup("missing", specJSON: "{}") }
    }
}
