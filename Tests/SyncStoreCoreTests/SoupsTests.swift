// docs/smartstore.md#soups-and-index-specs — Soups and index specs: registerSoup, names, specs, ids, alterSoup,
// reIndexSoup, array projection.
import XCTest
import CSQLite
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

let allFiveSpecs = #"[{"path":"name","type":"string"},{"path":"age","type":"integer"},{"path":"score","type":"floating"},{"path":"bio","type":"full_text"},{"path":"meta.tag","type":"json1"}]"#

// docs/smartstore.md#soups-and-index-specs
final class RegisterSoupTests: StoreTestCase {
    func testRegisterWithAllFiveIndexTypesAndSpecsRoundTripInOrder() throws {
        try register("people", allFiveSpecs)
        XCTAssertTrue(try store.soupExists("people"))
        let specs = try XCTUnwrap(try parseJSON(try store.indexSpecsJSON("people")) as? [[String: String]])
        XCTAssertEqual(specs, [["path": "name", "type": "string"], ["path": "age", "type": "integer"],
                               ["path": "score", "type": "floating"], ["path": "bio", "type": "full_text"],
                               ["path": "meta.tag", "type": "json1"]])
        XCTAssertEqual(try store.indexSpecs("people").map(\.type), [.string, .integer, .floating, .fullText, .json1])
        // Each index type answers a query on its path.
        try upsert("people", #"[{"name":"Ann","age":30,"score":1.5,"bio":"likes grey cats","meta":{"tag":"x"}},{"name":"Bob","age":40,"score":2.5,"bio":"dogs","meta":{"tag":"y"}}]"#)
        XCTAssertEqual(try query("people", #"{"queryType":"exact","indexPath":"name","matchKey":"Ann"}"#).entries.count, 1)
        XCTAssertEqual(try query("people", #"{"queryType":"exact","indexPath":"age","matchKey":40}"#).entries.first?["name"] as? String, "Bob")
        XCTAssertEqual(try query("people", #"{"queryType":"range","indexPath":"score","beginKey":2.0}"#).entries.first?["name"] as? String, "Bob")
        XCTAssertEqual(try query("people", #"{"queryType":"match","indexPath":"bio","matchKey":"cats"}"#).entries.first?["name"] as? String, "Ann")
        XCTAssertEqual(try query("people", #"{"queryType":"exact","indexPath":"meta.tag","matchKey":"y"}"#).entries.first?["name"] as? String, "Bob")
        // Specs survive reopening the file.
        let reopened = try reopenStore()
        XCTAssertEqual(try reopened.indexSpecsJSON("people"), try XCTUnwrap(String?(IndexSpec.listJSON([
            IndexSpec(path: "name", type: .string), IndexSpec(path: "age", type: .integer),
            IndexSpec(path: "score", type: .floating), IndexSpec(path: "bio", type: .fullText),
            IndexSpec(path: "meta.tag", type: .json1)]))))
    }

    func testRegisterErrors() throws {
        _ = try store
        try assertRejected(.argument, "empty name") { try register("", #"[{"path":"a","type":"string"}]"#) }
        try assertRejected(.argument, "empty specs") { try register("s", "[]") }
        try assertRejected(.argument, "empty specs (typed)") { try store.registerSoup("s", specs: []) }
        try assertRejected(.argument, "bad type") { try register("s", #"[{"path":"a","type":"text"}]"#) }
        try assertRejected(.argument, "type case") { try register("s", #"[{"path":"a","type":"STRING"}]"#) }
        try assertRejected(.argument, "missing type") { try register("s", #"[{"path":"a"}]"#) }
        try assertRejected(.argument, "type not a string") { try register("s", #"[{"path":"a","type":1}]"#) }
        try assertRejected(.argument, "duplicate path") { try register("s", #"[{"path":"a","type":"string"},{"path":"a","type":"integer"}]"#) }
        try assertRejected(.argument, "missing path") { try register("s", #"[{"type":"string"}]"#) }
        try assertRejected(.argument, "empty path") { try register("s", #"[{"path":"","type":"string"}]"#) }
        try assertRejected(.argument, "empty path component") { try register("s", #"[{"path":"a..b","type":"string"}]"#) }
        try assertRejected(.argument, "trailing dot") { try register("s", #"[{"path":"a.","type":"string"}]"#) }
        try assertRejected(.argument, "quote in path") { try register("s", #"[{"path":"a\"b","type":"string"}]"#) }
        try assertRejected(.argument, "specs not an array") { try register("s", #"{"path":"a","type":"string"}"#) }
        try assertRejected(.argument, "spec not an object") { try register("s", #"["a"]"#) }
        try assertRejected(.argument, "specs null") { try register("s", "null") }
        try assertRejected(.argument, "malformed") { try register("s", #"[{"path":"a","type":"string"}"#) }
        XCTAssertFalse(try store.soupExists("s"))
        XCTAssertEqual(try store.soupNames, [])
    }

    func testReRegisterIsANoOp() throws {
        try register("s", #"[{"path":"a","type":"string"}]"#)
        try upsert("s", #"{"a":"kept"}"#)
        try register("s", #"[{"path":"b","type":"integer"},{"path":"c","type":"string"}]"#)
        XCTAssertEqual(try store.indexSpecs("s"), [IndexSpec(path: "a", type: .string)])
        XCTAssertEqual(try count("s"), 1)
        // Even with invalid specs the error is about the specs, not the existing soup... but a valid
        // re-register after reopening is a no-op too.
        try register("s", #"[{"path":"a","type":"string"}]"#, on: try reopenStore())
        XCTAssertEqual(try count("s"), 1)
    }

    func testStoreConfigFileRegistersSoupsAndSkipsExistingOnes() throws {
        try register("existing", #"[{"path":"old","type":"string"}]"#)
        let config = #"""
            {"soups": [
              {"soupName": "accounts", "indexes": [{"path": "Id", "type": "string"}, {"path": "Name", "type": "full_text"}]},
              {"soupName": "existing", "indexes": [{"path": "new", "type": "integer"}]},
              {"soupName": "accounts", "indexes": [{"path": "Other", "type": "integer"}]}
            ]}
            """#
        let file = "\(root)/userstore.json"
        let handle = fopen(file, "wb")
        fputs(config, handle)
        fclose(handle)
        try store.loadStoreConfig(path: file)
        XCTAssertEqual(try store.soupNames, ["accounts", "existing"])
        XCTAssertEqual(try store.indexSpecs("accounts"), [IndexSpec(path: "Id", type: .string), IndexSpec(path: "Name", type: .fullText)])
        XCTAssertEqual(try store.indexSpecs("existing"), [IndexSpec(path: "old", type: .string)], "existing soups are skipped")
        try store.loadStoreConfig(path: file) // again: all skipped
        XCTAssertEqual(try store.soupNames, ["accounts", "existing"])
        assertStoreError(.notFound) { try store.loadStoreConfig(path: "\(root)/missing.json") }
    }

    func testSoupExistsRemoveSoupClearSoup() throws {
        XCTAssertFalse(try store.soupExists("s"))
        try register("s", #"[{"path":"a","type":"string"},{"path":"t","type":"full_text"}]"#)
        try register("other", #"[{"path":"a","type":"string"}]"#)
        try upsert("s", #"[{"a":"1","t":"hello"},{"a":"2","t":"world"}]"#)
        try upsert("other", #"[{"a":"1"}]"#)
        try store.clearSoup("s")
        XCTAssertTrue(try store.soupExists("s"))
        XCTAssertEqual(try count("s"), 0)
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"hello"}"#).totalEntries, 0, "clearSoup must empty the full-text index too")
        XCTAssertEqual(try store.indexSpecs("s").count, 2, "clearSoup keeps the indexes")
        XCTAssertEqual(try count("other"), 1, "clearSoup touches only its soup")
        try upsert("s", #"{"a":"3","t":"hello again"}"#)
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"hello"}"#).totalEntries, 1)
        assertStoreError(.notFound) { try store.clearSoup("missing") }

        try store.removeSoup("s")
        XCTAssertFalse(try store.soupExists("s"))
        XCTAssertEqual(try store.soupNames, ["other"])
        assertStoreError(.notFound) { try store.indexSpecs("s") }
        assertStoreError(.notFound) { try store.querySoup("s", specJSON: "{}") }
        try store.removeSoup("s") // removing a missing soup is OK
        XCTAssertEqual(try count("other"), 1)
        XCTAssertFalse(try reopenStore().soupExists("s"), "removal is persistent")
        // The soup's tables are gone from the file.
        let tables = try rawDump(dbPath).filter { $0.hasPrefix("schema t:table") }
        XCTAssertEqual(tables.count, 9, "soup_attrs, soup_index_map, soup_versions, sqlite_sequence, sync_mark_generation, sync_clean_soups, sync_ghost_marks, sync_stream_replay and the other soup's table: \(tables)")
    }

    func testHostileSoupNamesWorkEndToEnd() throws {
        let names = [
            "123This should-be a_valid.soup+name!?100",
            "O'Brien's \"quoted\" soup",
            "x; DROP TABLE soup_attrs; --",
            "Robert'); DROP TABLE soup_index_map;--",
            "braces {not} a token",
            "colon:in:name",
            "select * from soup_attrs",
            "日本語 ✓ 🍲",
            " ",
            "TABLE_1",
            "nul\u{0}inside",
            "tab\tnew\nline",
            String(repeating: "long", count: 500),
        ]
        for (i, name) in names.enumerated() {
            try register(name, #"[{"path":"k","type":"string"},{"path":"n","type":"integer"},{"path":"t","type":"full_text"}]"#)
            XCTAssertTrue(try store.soupExists(name), name)
            let stored = try upsert(name, #"[{"k":"a","n":\#(i),"t":"word\#(i)"},{"k":"b","n":100}]"#)
            XCTAssertEqual(ids(stored), [1, 2], name)
            XCTAssertEqual(try query(name, #"{"queryType":"exact","indexPath":"k","matchKey":"a"}"#).entries.first.flatMap { int($0["n"]) }, Int64(i), name)
            XCTAssertEqual(try query(name, #"{"queryType":"match","indexPath":"t","matchKey":"word\#(i)"}"#).totalEntries, 1, name)
            XCTAssertEqual(try entries(try store.retrieve(soup: name, ids: [2])).count, 1, name)
            XCTAssertEqual(try store.indexSpecs(name).count, 3, name)
        }
        XCTAssertEqual(try store.soupNames.sorted(), names.sorted())
        // Smart SQL can name every soup whose name has no braces.
        for (i, name) in names.enumerated() where !name.contains("{") && !name.contains("}") {
            let rows = try smart("select {\(name):n}, {\(name):_soup} from {\(name)} where {\(name):k} = 'a'").rows
            XCTAssertEqual(rows.count, 1, name)
            XCTAssertEqual(int(rows.first?.first), Int64(i), name)
            XCTAssertEqual((rows.first?.last as? Entry)?["k"] as? String, "a", name)
        }
        // Alter, clear and remove work on them too, and the metadata tables are intact.
        for name in names {
            try store.alterSoup(name, specsJSON: #"[{"path":"k","type":"string"},{"path":"z","type":"json1"}]"#, reIndexData: true)
            try store.clearSoup(name)
            XCTAssertEqual(try count(name), 0, name)
        }
        let reopened = try reopenStore()
        XCTAssertEqual(reopened.soupNames.sorted(), names.sorted())
        for name in names { try reopened.removeSoup(name) }
        XCTAssertEqual(reopened.soupNames, [])
    }

    func testHostileIndexPaths() throws {
        // Even positions get string indexes, odd ones json1 (read with json_extract).
        let paths = ["it's", "semi;colon", "sp ace", "dollar$", "a[0]", "日本", "back\\slash", "json'quote", "x", "json\\back\\slash"]
        var specs: [[String: String]] = []
        for (i, p) in paths.enumerated() { specs.append(["path": p, "type": i % 2 == 0 ? "string" : "json1"]) }
        try register("s", try jsonText(specs))
        var entry: [String: Any] = [:]
        for (i, p) in paths.enumerated() { entry[p] = "v\(i)" }
        try upsert("s", try jsonText(entry))
        for (i, p) in paths.enumerated() {
            let page = try query("s", try spec(["queryType": "exact", "indexPath": p, "matchKey": "v\(i)"]))
            XCTAssertEqual(page.totalEntries, 1, p)
            let rows = try smart("select {s:\(p)} from {s}").rows
            XCTAssertEqual(rows.first?.first as? String, "v\(i)", p)
        }
        // The same odd keys unindexed: read from the JSON in queries and Smart SQL.
        try register("u", #"[{"path":"id","type":"integer"}]"#)
        var odd: [String: Any] = ["id": 1]
        for (i, p) in paths.enumerated() { odd[p] = "w\(i)" }
        try upsert("u", try jsonText(odd))
        for (i, p) in paths.enumerated() {
            XCTAssertEqual(try query("u", try spec(["queryType": "exact", "indexPath": p, "matchKey": "w\(i)"])).totalEntries, 1, "unindexed \(p)")
            XCTAssertEqual(try query("u", try spec(["queryType": "range", "selectPaths": [p]])).rows.first?.first as? String, "w\(i)", "selectPaths \(p)")
            XCTAssertEqual(try smart("select {u:\(p)} from {u}").rows.first?.first as? String, "w\(i)", "smart \(p)")
        }
    }
}

// docs/smartstore.md#soups-and-index-specs
final class SoupEntryIdTests: StoreTestCase {
    func testIdsStartAtOneAlsoAfterRemoveAndReRegister() throws {
        try register("s", #"[{"path":"a","type":"string"}]"#)
        try register("t", #"[{"path":"a","type":"string"}]"#)
        XCTAssertEqual(ids(try upsert("s", #"[{"a":"1"},{"a":"2"},{"a":"3"}]"#)), [1, 2, 3])
        XCTAssertEqual(ids(try upsert("t", #"[{"a":"1"}]"#)), [1], "each soup counts from 1")
        try store.removeSoup("s")
        try register("s", #"[{"path":"a","type":"string"}]"#)
        XCTAssertEqual(ids(try upsert("s", #"[{"a":"x"}]"#)), [1])
        XCTAssertEqual(try count("s"), 1, "the re-registered soup starts empty")
        // And again on a reopened store.
        let s = try reopenStore()
        try s.removeSoup("s")
        try register("s", #"[{"path":"a","type":"string"}]"#, on: s)
        XCTAssertEqual(ids(try upsert("s", #"[{"a":"y"},{"a":"z"}]"#, on: s)), [1, 2])
    }

    func testIdsAreNeverReusedAfterDeletingTheLast() throws {
        try register("s", #"[{"path":"a","type":"string"}]"#)
        XCTAssertEqual(ids(try upsert("s", #"[{"a":"1"},{"a":"2"},{"a":"3"}]"#)), [1, 2, 3])
        try store.removeEntries(soup: "s", ids: [3])
        XCTAssertEqual(ids(try upsert("s", #"{"a":"4"}"#)), [4])
        try store.removeEntries(soup: "s", ids: [4])
        // A new SmartStore object must learn the high-water mark from the file.
        let s = try reopenStore()
        XCTAssertEqual(ids(try upsert("s", #"{"a":"5"}"#, on: s)), [5])
        try s.removeEntries(soup: "s", idsJSON: "[1,2,5]")
        XCTAssertEqual(ids(try upsert("s", #"{"a":"6"}"#, on: s)), [6])
        try s.clearSoup("s")
        XCTAssertEqual(ids(try upsert("s", #"{"a":"7"}"#, on: s)), [7], "clearSoup does not recycle ids")
        let s2 = try reopenStore()
        try s2.clearSoup("s")
        XCTAssertEqual(ids(try upsert("s", #"{"a":"8"}"#, on: s2)), [8])
    }
}

// docs/smartstore.md#soups-and-index-specs
final class AlterSoupTests: StoreTestCase {
    private func seed() throws {
        try register("s", #"[{"path":"name","type":"string"},{"path":"old","type":"integer"}]"#)
        try upsert("s", #"[{"name":"a","old":1,"age":10,"bio":"grey cat"},{"name":"b","old":2,"age":20,"bio":"black dog"}]"#)
    }

    func testAlterWithoutReIndexLeavesNewPathsEmptyUntilReIndexSoup() throws {
        try seed()
        try store.alterSoup("s", specsJSON: #"[{"path":"name","type":"string"},{"path":"age","type":"integer"},{"path":"bio","type":"full_text"}]"#, reIndexData: false)
        XCTAssertEqual(try store.indexSpecs("s").map(\.path), ["name", "age", "bio"])
        // Old rows: the new index columns are empty.
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"age","matchKey":10}"#).totalEntries, 0)
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"bio","matchKey":"grey"}"#).totalEntries, 0)
        XCTAssertEqual(try smart("select count(*) from {s} where {s:age} is null").rows.first.flatMap { int($0.first) }, 2)
        // Kept index still answers.
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"name","matchKey":"b"}"#).totalEntries, 1)
        // New rows are indexed at once.
        try upsert("s", #"{"name":"c","age":10,"bio":"grey mouse"}"#)
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"age","matchKey":10}"#).ids, [3])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"bio","matchKey":"grey"}"#).ids, [3])
        // reIndexSoup fills them.
        try store.reIndexSoup("s", pathsJSON: #"["age","bio"]"#)
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"age","matchKey":10}"#).ids, [1, 3])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"bio","matchKey":"grey"}"#).ids, [1, 3])
        // The dropped index path is now read from the JSON.
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"old","matchKey":2}"#).ids, [2])
    }

    // Query SQL is cached by the spec's shape; an alter must not leave a plan that reads the
    // path from the JSON once it has an (unfilled) index column.
    func testQueryPlansDoNotOutliveAnAlter() throws {
        try seed()
        let spec = #"{"queryType":"exact","indexPath":"age","matchKey":10}"#
        XCTAssertEqual(try query("s", spec).ids, [1], "read from the JSON")
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"age","matchKey":20}"#).ids, [2], "same shape, other key")
        try store.alterSoup("s", specsJSON: #"[{"path":"name","type":"string"},{"path":"age","type":"integer"}]"#, reIndexData: false)
        XCTAssertEqual(try query("s", spec).totalEntries, 0, "a plan made before the alter still read the JSON")
        try store.reIndexSoup("s", pathsJSON: #"["age"]"#)
        XCTAssertEqual(try query("s", spec).ids, [1])
    }

    func testAlterWithReIndexIndexesExistingRows() throws {
        try seed()
        try store.alterSoup("s", specsJSON: #"[{"path":"age","type":"integer"},{"path":"bio","type":"full_text"},{"path":"name","type":"string"}]"#, reIndexData: true)
        XCTAssertEqual(try store.indexSpecs("s").map(\.path), ["age", "bio", "name"], "specs in the new order")
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"age","matchKey":20}"#).ids, [2])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"bio","matchKey":"black"}"#).ids, [2])
        XCTAssertEqual(try smart("select count(*) from {s} where {s:age} is null").rows.first.flatMap { int($0.first) }, 0)
    }

    func testAlterKeepsEntriesAndIds() throws {
        try seed()
        let before = try entries(try store.retrieve(soup: "s", ids: [1, 2]))
        try store.alterSoup("s", specsJSON: #"[{"path":"age","type":"string"}]"#, reIndexData: true)
        let after = try entries(try store.retrieve(soup: "s", ids: [1, 2]))
        XCTAssertEqual(try jsonText(after), try jsonText(before))
        XCTAssertEqual(ids(try upsert("s", #"{"name":"c"}"#)), [3], "ids continue after alter")
        // Changing the type of a kept path re-creates its values.
        try store.alterSoup("s", specsJSON: #"[{"path":"age","type":"integer"}]"#, reIndexData: true)
        XCTAssertEqual(try query("s", #"{"queryType":"range","indexPath":"age","beginKey":15}"#).ids, [2])
        XCTAssertEqual(try reopenStore().indexSpecs("s"), [IndexSpec(path: "age", type: .integer)])
    }

    func testAlterIsAtomic() throws {
        try seed()
        let table = try XCTUnwrap(try store.soup("s")).table
        // Occupy the name the new index would get, from outside, so the alter fails midway
        // (after dropping the old column and creating the new one).
        let nextSlot = try XCTUnwrap(try store.soup("s")?.indexes.map(\.slot).max()) + 1
        try rawExec(dbPath, "CREATE TABLE blocker (x); CREATE INDEX \(table)_\(nextSlot)_idx ON blocker(x)")
        let before = try snapshot()
        do {
            try store.alterSoup("s", specsJSON: #"[{"path":"name","type":"string"},{"path":"age","type":"integer"},{"path":"bio","type":"full_text"}]"#, reIndexData: true)
            XCTFail("the alter should have failed on the occupied index name")
        } catch let error as StoreError {
            XCTAssertFalse(error.message.isEmpty)
        }
        XCTAssertEqual(try snapshot(), before, "a failed alter must leave specs and data as they were")
        XCTAssertEqual(try store.indexSpecs("s"), [IndexSpec(path: "name", type: .string), IndexSpec(path: "old", type: .integer)])
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"old","matchKey":2}"#).ids, [2])
        try upsert("s", #"{"name":"c","old":3}"#)
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"old","matchKey":3}"#).ids, [3])
        // Once the obstacle is gone the same alter works.
        try rawExec(dbPath, "DROP TABLE blocker")
        try store.alterSoup("s", specsJSON: #"[{"path":"name","type":"string"},{"path":"age","type":"integer"}]"#, reIndexData: true)
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"age","matchKey":20}"#).ids, [2])
    }

    func testRepeatedAltersSurviveReopening() throws {
        try register("s", #"[{"path":"a","type":"string"},{"path":"b","type":"integer"},{"path":"t","type":"full_text"}]"#)
        try upsert("s", #"[{"a":"x","b":1,"c":"p","t":"alpha"},{"a":"y","b":2,"c":"q","t":"beta"}]"#)
        try store.alterSoup("s", specsJSON: #"[{"path":"b","type":"integer"},{"path":"c","type":"string"},{"path":"t","type":"full_text"}]"#, reIndexData: true)
        try store.alterSoup("s", specsJSON: #"[{"path":"c","type":"string"},{"path":"a","type":"json1"},{"path":"u","type":"full_text"},{"path":"t","type":"full_text"}]"#, reIndexData: true)
        let s = try reopenStore()
        XCTAssertEqual(try s.indexSpecs("s").map(\.path), ["c", "a", "u", "t"])
        try upsert("s", #"{"a":"z","b":3,"c":"r","t":"gamma","u":"delta"}"#, on: s)
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"c","matchKey":"q"}"#, on: s).ids, [2])
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"c","matchKey":"r"}"#, on: s).ids, [3])
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"a","matchKey":"x"}"#, on: s).ids, [1])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"t","matchKey":"alpha OR gamma"}"#, on: s).ids, [1, 3])
        XCTAssertEqual(try query("s", #"{"queryType":"match","indexPath":"u","matchKey":"delta"}"#, on: s).ids, [3])
        XCTAssertEqual(try query("s", #"{"queryType":"match","matchKey":"beta"}"#, on: s).ids, [2])
        XCTAssertEqual(try query("s", #"{"queryType":"range","indexPath":"b","beginKey":2}"#, on: s).ids, [2, 3], "b is read from the JSON now")
        let rows = try smart("select {s:c}, {s:a}, {s:t}, {s:u} from {s} order by {s:_soupEntryId}", on: s).rows
        XCTAssertEqual(rows.map { $0[0] as? String }, ["p", "q", "r"])
        XCTAssertEqual(rows.map { $0[3] as? String }, [nil, nil, "delta"])
        // No leftover columns of dropped indexes.
        let table = try XCTUnwrap(s.soup("s")).table
        let schema = try rawDump(dbPath).filter { $0.hasPrefix("schema t:table | t:\(table) ") }
        XCTAssertEqual(schema.count, 1)
        let definition = try XCTUnwrap(schema.first?.components(separatedBy: "CREATE TABLE").last)
        XCTAssertEqual(definition.components(separatedBy: "\(table)_").count - 1, 3, "index columns of c, u, t only: \(definition)")
    }

    func testAlterErrors() throws {
        try seed()
        try assertRejected(.notFound) { try store.alterSoup("missing", specsJSON: #"[{"path":"a","type":"string"}]"#, reIndexData: true) }
        try assertRejected(.argument) { try store.alterSoup("s", specsJSON: "[]", reIndexData: true) }
        try assertRejected(.argument) { try store.alterSoup("s", specsJSON: #"[{"path":"a","type":"nope"}]"#, reIndexData: false) }
        try assertRejected(.argument) { try store.alterSoup("s", specsJSON: #"[{"path":"a","type":"string"},{"path":"a","type":"string"}]"#, reIndexData: false) }
        try assertRejected(.argument) { try store.alterSoup("s", specsJSON: "{", reIndexData: false) }
    }

    func testReIndexSoupErrors() throws {
        try seed()
        try assertRejected(.argument, "unindexed path") { try store.reIndexSoup("s", pathsJSON: #"["age"]"#) }
        try assertRejected(.argument, "one bad path fails all") { try store.reIndexSoup("s", pathsJSON: #"["name","age"]"#) }
        try assertRejected(.notFound) { try store.reIndexSoup("missing", pathsJSON: #"["name"]"#) }
        try assertRejected(.argument) { try store.reIndexSoup("s", pathsJSON: #""name""#) }
        try assertRejected(.argument) { try store.reIndexSoup("s", pathsJSON: "[1]") }
        try assertRejected(.argument) { try store.reIndexSoup("s", pathsJSON: "[") }
        XCTAssertNoThrow(try store.reIndexSoup("s", pathsJSON: #"["name","old"]"#))
        XCTAssertNoThrow(try store.reIndexSoup("s", pathsJSON: "[]"))
    }

    func testReIndexPicksUpChangedValues() throws {
        try register("s", #"[{"path":"v","type":"integer"}]"#)
        try upsert("s", #"[{"v":1},{"v":2}]"#)
        // Change the stored JSON behind the index's back, then re-index.
        try rawExec(dbPath, "UPDATE \(try XCTUnwrap(try store.soup("s")).table) SET soup = json_set(soup, '$.v', 7) WHERE id = 1")
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"v","matchKey":7}"#).totalEntries, 0)
        try store.reIndexSoup("s", paths: ["v"])
        XCTAssertEqual(try query("s", #"{"queryType":"exact","indexPath":"v","matchKey":7}"#).ids, [1])
    }
}

// docs/smartstore.md#soups-and-index-specs
final class ArrayProjectionTests: StoreTestCase {
    func testStringIndexThroughAnArrayHoldsTheJSONText() throws {
        try register("cats", #"[{"path":"colors","type":"string"},{"path":"cats.color","type":"string"},{"path":"name","type":"string"}]"#)
        try upsert("cats", #"[{"name":"one","colors":["grey"]},{"name":"two","colors":["grey","white"]},{"name":"three","colors":"grey"}]"#)
        XCTAssertEqual(strings(try query("cats", #"{"queryType":"exact","indexPath":"colors","matchKey":"[\"grey\"]"}"#).entries, "name"), ["one"])
        XCTAssertEqual(strings(try query("cats", #"{"queryType":"exact","indexPath":"colors","matchKey":["grey"]}"#).entries, "name"), ["one"])
        XCTAssertEqual(strings(try query("cats", #"{"queryType":"exact","indexPath":"colors","matchKey":"grey"}"#).entries, "name"), ["three"])
        XCTAssertEqual(strings(try query("cats", #"{"queryType":"like","indexPath":"colors","likeKey":"%white%"}"#).entries, "name"), ["two"])
    }

    func testPathOverAnArrayOfObjectsCollectsValues() throws {
        try register("owners", #"[{"path":"cats.color","type":"string"},{"path":"name","type":"string"},{"path":"cats.age","type":"integer"}]"#)
        try upsert("owners", #"[{"name":"ann","cats":[{"color":"black"},{"color":"white"},{"size":3},{"color":null}]},{"name":"bob","cats":[{"color":"grey"}]},{"name":"cy","cats":{"color":"black"}}]"#)
        XCTAssertEqual(strings(try query("owners", #"{"queryType":"exact","indexPath":"cats.color","matchKey":"[\"black\",\"white\"]"}"#).entries, "name"), ["ann"])
        XCTAssertEqual(strings(try query("owners", #"{"queryType":"exact","indexPath":"cats.color","matchKey":"[\"grey\"]"}"#).entries, "name"), ["bob"])
        XCTAssertEqual(strings(try query("owners", #"{"queryType":"exact","indexPath":"cats.color","matchKey":"black"}"#).entries, "name"), ["cy"], "a plain object is not collected")
        let rows = try smart("select {owners:name}, {owners:cats.color} from {owners} order by {owners:name}").rows
        XCTAssertEqual(rows.map { $0.last as? String }, [#"["black","white"]"#, #"["grey"]"#, "black"])
    }
}

/// Runs SQL on the store file through a separate connection (to set up failures).
func rawExec(_ path: String, _ sql: String) throws {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { throw TestFailure("cannot open \(path)") }
    defer { sqlite3_close_v2(db) }
    sqlite3_busy_timeout(db, 5000)
    var message: UnsafeMutablePointer<CChar>?
    if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
        let text = message.map { String(cString: $0) } ?? "?"
        sqlite3_free(message)
        throw TestFailure("rawExec failed: \(text)")
    }
}
