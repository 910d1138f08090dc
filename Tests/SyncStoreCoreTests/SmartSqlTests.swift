// docs/queries.md#smart-sql — Smart SQL: token forms, the SDK example, aliases and self-joins, quoted
// strings, MATCH literals, error positions, and refusal of anything but one SELECT.
import XCTest
import Foundation
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/queries.md#smart-sql
final class SmartSqlTokenTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("contacts", #"[{"path":"LastName","type":"string"},{"path":"Title","type":"string"},{"path":"Age","type":"integer"},{"path":"Address.City","type":"json1"}]"#)
        try upsert("contacts", """
            [{"FirstName":"Ann","LastName":"Smith","Title":"Engineer","Age":30,"Address":{"City":"Paris"}},
             {"FirstName":"Ben","LastName":"Smith","Title":"Executive","Age":45,"Address":{"City":"Rome"}},
             {"FirstName":"Cy","LastName":"Jones","Title":"Editor","Age":9,"Address":{"City":"Paris"}},
             {"FirstName":"Di","LastName":"Brown","Title":"Manager","Age":10,"Address":{"City":"Oslo"}}]
            """)
    }

    func testTheSdkExample() throws {
        let rows = try smart("select {contacts:LastName}, count(*) from {contacts} where {contacts:Title} like 'E%' group by {contacts:LastName}").rows
        let result = Dictionary(uniqueKeysWithValues: rows.compactMap { row -> (String, Int64)? in
            guard let name = row.first as? String, let n = int(row.last) else { return nil }
            return (name, n)
        })
        XCTAssertEqual(result, ["Smith": 2, "Jones": 1])
        XCTAssertEqual(rows.count, 2)
    }

    func testSoupToken() throws {
        XCTAssertEqual(try smart("select count(*) from {contacts}").rows.first.flatMap { int($0.first) }, 4)
    }

    func testIndexedUnindexedAndJson1Paths() throws {
        // Indexed (string, integer), unindexed (FirstName), json1 (Address.City), nested unindexed.
        let rows = try smart("select {contacts:LastName}, {contacts:Age}, {contacts:FirstName}, {contacts:Address.City} from {contacts} where {contacts:Address.City} = 'Paris' order by {contacts:Age}").rows
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows.map { $0[2] as? String }, ["Cy", "Ann"], "integer index orders numerically (9 before 30)")
        XCTAssertEqual(rows.map { int($0[1]) }, [9, 30])
        XCTAssertEqual(rows.map { $0[3] as? String }, ["Paris", "Paris"])
        XCTAssertEqual(try smart("select {contacts:FirstName} from {contacts} where {contacts:Age} >= 10 and {contacts:Age} < 45").rows.map { $0.first as? String }.sorted { ($0 ?? "") < ($1 ?? "") }, ["Ann", "Di"])
        // The unindexed path compares with JSON values too.
        XCTAssertEqual(try smart("select {contacts:LastName} from {contacts} where {contacts:FirstName} = 'Di'").rows.first?.first as? String, "Brown")
    }

    func testSoupTokenReturnsParsedObjects() throws {
        let rows = try smart("select {contacts:_soup}, {contacts:FirstName} from {contacts} order by {contacts:_soupEntryId}").rows
        XCTAssertEqual(rows.count, 4)
        let first = try XCTUnwrap(rows.first?.first as? Entry, "{soup:_soup} must be a JSON object, not a string")
        XCTAssertEqual(first["FirstName"] as? String, "Ann")
        XCTAssertEqual(int(first["_soupEntryId"]), 1)
        XCTAssertEqual((first["Address"] as? Entry)?["City"] as? String, "Paris")
        XCTAssertEqual(rows.first?.last as? String, "Ann", "other text columns stay strings")
        // Through an alias too.
        let aliased = try smart("select c.{contacts:_soup} from {contacts} as c where c.{contacts:_soupEntryId} = 2").rows
        XCTAssertEqual((aliased.first?.first as? Entry)?["FirstName"] as? String, "Ben")
    }

    func testSystemColumns() throws {
        sleepMillis(3) // the setUp entries must be strictly older than `before`
        let before = nowMillis()
        try upsert("contacts", #"{"FirstName":"Eve","LastName":"Late"}"#)
        let rows = try smart("select {contacts:_soupEntryId}, {contacts:_soupCreatedDate}, {contacts:_soupLastModifiedDate}, {contacts:_soup} from {contacts} where {contacts:_soupEntryId} = 5").rows
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(int(row[0]), 5)
        XCTAssertGreaterThanOrEqual(int(row[1]) ?? 0, before)
        XCTAssertEqual(int(row[2]), int((row[3] as? Entry)?["_soupLastModifiedDate"]))
        XCTAssertEqual(try smart("select max({contacts:_soupEntryId}) from {contacts}").rows.first.flatMap { int($0.first) }, 5)
        XCTAssertEqual(try smart("select count(*) from {contacts} where {contacts:_soupLastModifiedDate} >= \(before)").rows.first.flatMap { int($0.first) }, 1)
    }

    func testSelfJoinWithAliases() throws {
        try register("employees", #"[{"path":"name","type":"string"},{"path":"employeeId","type":"string"},{"path":"managerId","type":"string"}]"#)
        try upsert("employees", #"[{"name":"Boss","employeeId":"1","dept":"HQ"},{"name":"Alice","employeeId":"2","managerId":"1","dept":"R&D"},{"name":"Bob","employeeId":"3","managerId":"1","dept":"Ops"},{"name":"Carl","employeeId":"4","managerId":"2","dept":"R&D"}]"#)
        let rows = try smart("select mgr.{employees:name}, e.{employees:name}, e.{employees:dept}, e.{employees:_soupEntryId} from {employees} as mgr, {employees} as e where mgr.{employees:employeeId} = e.{employees:managerId} order by e.{employees:name}").rows
        XCTAssertEqual(rows.map { "\($0[0] as? String ?? "?")>\($0[1] as? String ?? "?")" }, ["Boss>Alice", "Boss>Bob", "Alice>Carl"])
        XCTAssertEqual(rows.map { $0[2] as? String }, ["R&D", "Ops", "R&D"], "unindexed paths through an alias")
        XCTAssertEqual(rows.map { int($0[3]) }, [2, 3, 4])
        // Quoted alias and a join between two soups.
        let quoted = try smart(#"select "m".{employees:name} from {employees} "m" where "m".{employees:employeeId} = '4'"#).rows
        XCTAssertEqual(quoted.first?.first as? String, "Carl")
        for (open, close) in [("[", "]"), ("`", "`"), ("\"", "\"")] {
            let m = "\(open)m x\(close)"
            let rows = try smart("select \(m).{employees:name}, \(m).{employees:_soupEntryId}, \(m).{employees:dept} from {employees} as \(m) where \(m).{employees:employeeId} = '4'").rows
            XCTAssertEqual(rows.first?.first as? String, "Carl", m)
            XCTAssertEqual(rows.first.flatMap { int($0[1]) }, 4, m)
            XCTAssertEqual(rows.first?.last as? String, "R&D", m)
        }
        let join = try smart("select {employees:name}, {contacts:LastName} from {employees}, {contacts} where {employees:_soupEntryId} = {contacts:_soupEntryId} order by {employees:_soupEntryId}").rows
        XCTAssertEqual(join.map { $0[1] as? String }, ["Smith", "Smith", "Jones", "Brown"])
    }

    func testBracesInsideQuotedStringsAreLeftAlone() throws {
        try upsert("contacts", #"[{"LastName":"{contacts:Title}","Title":"x"},{"LastName":"{nosuch}","Title":"y"}]"#)
        XCTAssertEqual(try smart("select {contacts:Title} from {contacts} where {contacts:LastName} = '{contacts:Title}'").rows.first?.first as? String, "x")
        XCTAssertEqual(try smart("select {contacts:Title} from {contacts} where {contacts:LastName} = '{nosuch}'").rows.first?.first as? String, "y")
        XCTAssertEqual(try smart("select {contacts:Title} from {contacts} where {contacts:LastName} = 'it''s {a} }{ test'").rows.count, 0)
        XCTAssertEqual(try smart(#"select {contacts:Title} as "{weird} name" from {contacts} where {contacts:Title} = 'y'"#).rows.first?.first as? String, "y")
        XCTAssertEqual(try smart("select {contacts:Title} from {contacts} where {contacts:Title} = 'y' -- {not a token}").rows.count, 1)
        XCTAssertEqual(try smart("select /* {nor} this */ {contacts:Title} from {contacts} where {contacts:Title} = 'y'").rows.count, 1)
        XCTAssertEqual(try smart("select {contacts:Title} as [{bracketed}] from {contacts} where {contacts:Title} = 'y'").rows.count, 1)
        XCTAssertEqual(try smart("select {contacts:Title} as `{backtick}` from {contacts} where {contacts:Title} = 'y'").rows.count, 1)
    }

    func testJsonTableFunctionsAreAllowed() throws {
        try upsert("contacts", #"{"FirstName":"Tag","LastName":"Tagged","tags":["a","b","c"]}"#)
        let rows = try smart("select j.value from {contacts}, json_each({contacts:_soup}, '$.tags') as j where {contacts:LastName} = 'Tagged' order by j.value").rows
        XCTAssertEqual(rows.map { $0.first as? String }, ["a", "b", "c"])
        XCTAssertEqual(try smart("select count(*) from json_tree('{\"x\":[1,2]}')").rows.first.flatMap { int($0.first) }, 4)
    }

    func testWithClauseThatOnlyReadsIsAllowed() throws {
        let rows = try smart("with paris as (select {contacts:FirstName} as n from {contacts} where {contacts:Address.City} = 'Paris') select n from paris order by n").rows
        XCTAssertEqual(rows.map { $0.first as? String }, ["Ann", "Cy"])
        XCTAssertEqual(try smart("select 1 + 1;").rows.first.flatMap { int($0.first) }, 2, "a trailing ';' is fine")
    }

    func testSmartQueryPaging() throws {
        let first = try CursorPage(store.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select {contacts:FirstName} from {contacts} order by {contacts:FirstName}","pageSize":3}"#))
        XCTAssertEqual(first.totalEntries, 4)
        XCTAssertEqual(first.totalPages, 2)
        XCTAssertEqual(first.rows.map { $0.first as? String }, ["Ann", "Ben", "Cy"])
        let second = try CursorPage(store.moveCursor(first.cursorId, toPage: 1))
        XCTAssertEqual(second.rows.map { $0.first as? String }, ["Di"])
    }
}

// docs/queries.md#smart-sql — the SDK's own Smart SQL test cases (Android SmartSqlTest), checked on results.
final class SmartSqlSdkCompatibilityTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("employees", #"[{"path":"firstName","type":"string"},{"path":"lastName","type":"string"},{"path":"deptCode","type":"string"},{"path":"employeeId","type":"string"},{"path":"managerId","type":"string"},{"path":"salary","type":"integer"},{"path":"education","type":"json1"},{"path":"isManager","type":"json1"}]"#)
        try register("departments", #"[{"path":"deptCode","type":"string"},{"path":"name","type":"string"},{"path":"budget","type":"integer"}]"#)
        try upsert("employees", """
            [{"firstName":"Christine","lastName":"Haas","deptCode":"A00","employeeId":"00010","salary":200000,"education":"MIT","isManager":true,"address":{"city":"San Francisco","zipcode":"94105"}},
             {"firstName":"Michael","lastName":"Thompson","deptCode":"B01","employeeId":"00020","managerId":"00010","salary":120000,"education":"Stanford","isManager":false},
             {"firstName":"Sally","lastName":"Kwan","deptCode":"C01","employeeId":"00310","managerId":"00010","salary":100000,"education":"MIT","isManager":false,"address":{"city":"Oakland"}},
             {"firstName":"Göktuğ","lastName":"Null","deptCode":null,"employeeId":"101"},
             {"firstName":"보배","lastName":"Empty","deptCode":"","employeeId":"102"},
             {"firstName":"Eve","lastName":"Missing","employeeId":"103","education":"{ { { } } "}]
            """)
        try upsert("departments", #"[{"deptCode":"A00","name":"Spiffy","budget":1000000},{"deptCode":"B01","name":"Planning","budget":2000000}]"#)
    }

    private func column(_ sql: String) throws -> [String?] { try smart(sql).rows.map { $0.first as? String } }

    func testJoinAndConcatenation() throws {
        let rows = try smart("select {departments:name}, {employees:firstName} || ' ' || {employees:lastName} from {employees}, {departments} where {departments:deptCode} = {employees:deptCode} order by {departments:name}, {employees:lastName}").rows
        XCTAssertEqual(rows.map { "\($0[0] as? String ?? "?")/\($0[1] as? String ?? "?")" }, ["Planning/Michael Thompson", "Spiffy/Christine Haas"])
    }

    func testSelfJoinOnJson1Fields() throws {
        let rows = try smart("select mgr.{employees:education}, e.{employees:education} from {employees} as mgr, {employees} as e where mgr.{employees:education} = e.{employees:education} and mgr.{employees:employeeId} <> e.{employees:employeeId}").rows
        XCTAssertEqual(rows.count, 2, "Haas and Kwan share MIT, both ways")
        let notEqual = try smart("select mgr.{employees:salary},e.{employees:salary} from {employees} as mgr, {employees} as e where e.{employees:lastName} = 'Thompson' and not (mgr.{employees:employeeId}<>e.{employees:managerId})").rows
        XCTAssertEqual(notEqual.map { $0.compactMap { int($0) } }, [[200000, 120000]])
    }

    func testTableQualifiedJson1Column() throws {
        XCTAssertEqual(try column("select {employees}.{employees:education} from {employees} where {employees}.{employees:education} is not null order by {employees}.{employees:education}"),
                       ["MIT", "MIT", "Stanford", "{ { { } } "])
        XCTAssertEqual(try column("select e.{employees:education} from {employees} as e, {departments} where {departments:name} = 'Spiffy' and e.{employees:lastName} = 'Haas'"), ["MIT"])
    }

    func testNonIndexedNestedPaths() throws {
        XCTAssertEqual(try column("select {employees:address.zipcode} from {employees} where {employees:address.city} = 'San Francisco'"), ["94105"])
    }

    func testNullMissingAndEmptyFields() throws {
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:deptCode} is not null order by {employees:employeeId}"), ["00010", "00020", "00310", "102"])
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:deptCode} is null order by {employees:employeeId}"), ["101", "103"])
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:deptCode} = '' order by {employees:employeeId}"), ["102"])
    }

    func testBooleansInJson1Fields() throws {
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:isManager} = 1"), ["00010"])
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:isManager} = 0 order by {employees:employeeId}"), ["00020", "00310"])
    }

    func testNonAsciiLike() throws {
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:firstName} like '%ğ%'"), ["101"])
        XCTAssertEqual(try column("select {employees:employeeId} from {employees} where {employees:firstName} like '%배%'"), ["102"])
    }

    func testQuotedCurlyBraces() throws {
        XCTAssertEqual(try column("select {employees:lastName} from {employees} where {employees:education} like ' { { { } } '"), [])
        XCTAssertEqual(try column("select {employees:lastName} from {employees} where {employees:education} like '{ { { } } '"), ["Missing"])
        XCTAssertEqual(try smart("select {employees:lastName}, '{a:b}', {employees:firstName} from {employees} where {employees:address.city} = 'Oakland'").rows.first?[1] as? String, "{a:b}")
    }

    func testAggregates() throws {
        XCTAssertEqual(try smart("select count(*) from {employees}").rows.first.flatMap { int($0.first) }, 6)
        XCTAssertEqual(try smart("select sum({departments:budget}) from {departments}").rows.first.flatMap { int($0.first) }, 3000000)
    }
}

// docs/queries.md#smart-sql
final class SmartSqlMatchTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("animals", #"[{"path":"name","type":"full_text"},{"path":"color","type":"full_text"},{"path":"legs","type":"integer"}]"#)
        try upsert("animals", #"[{"name":"grey cat","color":"grey"},{"name":"green frog","color":"green"},{"name":"black dog","color":"black grey"},{"name":"gremlin","color":"black"}]"#)
    }

    func testMatchLiteralTokensBecomeFtsColumns() throws {
        let sql = "select {animals:name} from {animals} where {animals:_soupEntryId} in (select rowid from {animals}_fts where {animals}_fts match '{animals:name}:gr*') order by {animals:name}"
        XCTAssertEqual(try smart(sql).rows.map { $0.first as? String }, ["green frog", "gremlin", "grey cat"])
        let color = "select {animals:name} from {animals} where {animals:_soupEntryId} in (select rowid from {animals}_fts where {animals}_fts match '{animals:color}:grey') order by {animals:name}"
        XCTAssertEqual(try smart(color).rows.map { $0.first as? String }, ["black dog", "grey cat"], "the column filter is applied")
        let not = "select {animals:name} from {animals} where {animals:_soupEntryId} in (select rowid from {animals}_fts where {animals}_fts MATCH '{animals:color}:black NOT {animals:color}:grey')"
        XCTAssertEqual(try smart(not).rows.map { $0.first as? String }, ["gremlin"])
    }

    func testFullTextSmartQueriesSurviveSchemaChanges() throws {
        let sql = "select count(*) from {animals}_fts where {animals}_fts match '{animals:name}:gr*'"
        XCTAssertEqual(try smart(sql).rows.first.flatMap { int($0.first) }, 3)
        // Schema changes make every connection reload its schema and reconnect FTS tables.
        try register("other", #"[{"path":"t","type":"full_text"}]"#)
        try upsert("other", #"{"t":"grape"}"#)
        XCTAssertEqual(try smart(sql).rows.first.flatMap { int($0.first) }, 3)
        try store.alterSoup("animals", specsJSON: #"[{"path":"name","type":"full_text"},{"path":"legs","type":"integer"}]"#, reIndexData: true)
        XCTAssertEqual(try smart(sql).rows.first.flatMap { int($0.first) }, 3)
        XCTAssertEqual(try smart("select count(*) from {other}_fts where {other}_fts match '{other:t}:gr*'").rows.first.flatMap { int($0.first) }, 1)
        // Many readers in parallel, each connecting the FTS tables for the first time.
        let s = try store
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let spec = try jsonText(["queryType": "smart", "smartSql": sql, "pageSize": 10] as [String: Any])
                let page = try CursorPage(s.runSmartQuery(specJSON: spec))
                if int(page.rows.first?.first) != 3 { failures.add("wrong count \(page.rows)") }
            } catch { failures.add("\(error)") }
        }
        XCTAssertEqual(failures.all, [])
    }

    func testMatchLiteralErrors() throws {
        let notFullText = "select * from {animals}_fts where {animals}_fts match '{animals:legs}:1'"
        let error = try assertRejected(.argument) { try smart(notFullText) }
        XCTAssertTrue(error?.message.contains("full_text") ?? false, error?.message ?? "")
        try assertRejected(.argument) { try smart("select * from {animals}_fts where {animals}_fts match '{nosuch:name}:x'") }
        try assertRejected(.argument) { try smart("select * from {animals}_fts where {animals}_fts match '{animals:name:x'") }
    }
}

// docs/queries.md#smart-sql
final class SmartSqlResultValueTests: StoreTestCase {
    func testEveryResultValueBecomesValidJSON() throws {
        try register("s", #"[{"path":"a","type":"string"}]"#)
        try upsert("s", #"{"a":"x","nested":{"b":[1,2]}}"#)
        let row = try XCTUnwrap(try smart("select null, 1, -2.5, 'text', x'00ff', 1e999, -1e999, cast(x'ff41' as text), {s:nested}, {s:nested.b}, zeroblob(3) from {s}").rows.first)
        XCTAssertEqual(row.count, 11)
        XCTAssertTrue(row[0] is NSNull)
        XCTAssertEqual(int(row[1]), 1)
        XCTAssertEqual(double(row[2]), -2.5)
        XCTAssertEqual(row[3] as? String, "text")
        XCTAssertTrue(row[4] is NSNull, "blobs have no JSON form")
        XCTAssertTrue(row[5] is NSNull, "infinity has no JSON form")
        XCTAssertTrue(row[6] is NSNull)
        XCTAssertEqual(row[7] as? String, "\u{FFFD}A", "invalid UTF-8 is repaired")
        XCTAssertEqual(row[8] as? String, #"{"b":[1,2]}"#, "json_extract of an object is its JSON text")
        XCTAssertEqual(row[9] as? String, "[1,2]")
        XCTAssertTrue(row[10] is NSNull)
    }

    func testHeavyOrOddQueriesFailCleanly() throws {
        try register("s", #"[{"path":"a","type":"string"}]"#)
        try assertRejected(.argument) { try smart("select randomblob(2000000000)") }
        try assertRejected(.argument) { try smart("select no_such_function(1)") }
        try assertRejected(.argument) { try smart("select {s:a} from {s} where nosuchcolumn = 1") }
        try assertRejected(.argument) { try smart("select * from no_such_table") }
        // Reading the catalog is only reading.
        XCTAssertEqual(try smart("select count(*) from sqlite_master where name = 'soup_attrs'").rows.first.flatMap { int($0.first) }, 1)
    }
}

// docs/queries.md#smart-sql
final class SmartSqlRefusalTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"name","type":"string"},{"path":"t","type":"full_text"}]"#)
        try upsert("s", #"[{"name":"a","t":"one"},{"name":"b","t":"two"}]"#)
    }

    func testUnknownSoupAndMalformedTokensNameThePosition() throws {
        let cases: [(String, String)] = [
            ("select * from {nosuch}", "position 14"),
            ("select {nosuch:name} from {s}", "position 7"),
            ("select {s:name} from {s} where {s:} = 1", "position 31"),
            ("select {} from {s}", "position 7"),
            ("select {s:name from {s}", "position 7"),
            ("select {s:name} from {s}}", "position 24"),
            ("select {s:a..b} from {s}", "position 7"),
            ("select {s:name} from {s", "position 21"),
            ("select {s:name} from {s} where {s:name} = 'unterminated", "position 42"),
        ]
        for (sql, position) in cases {
            let error = try assertRejected(.argument, sql) { try smart(sql) }
            XCTAssertTrue(error?.message.contains(position) ?? false, "\(sql): \(error?.message ?? "")")
        }
    }

    func testOnlyASingleSelectIsAccepted() throws {
        let refused = [
            "select * from {s}; select * from {s}",
            "select * from {s}; delete from {s}",
            "select 1; drop table {s}",
            "delete from {s}",
            "DELETE FROM {s} WHERE 1",
            "insert into {s} (soup, created, lastModified) values ('{}', 0, 0)",
            "update {s} set soup = '{}'",
            "replace into {s} (id, soup, created, lastModified) values (1, '{}', 0, 0)",
            "drop table {s}",
            "create table evil (x)",
            "alter table {s} add column x",
            "attach database ':memory:' as evil",
            "select 1; attach database ':memory:' as evil",
            "detach database main",
            "pragma writable_schema = 1",
            "PRAGMA table_info(soup_attrs)",
            "vacuum",
            "reindex",
            "analyze",
            "begin",
            "commit",
            "savepoint x",
            "with x as (select 1) delete from {s}",
            "with x as (select 1) insert into {s} (soup, created, lastModified) select '{}', 0, 0 from x",
            "with x as (select 1) update {s} set soup = '{}'",
            "with recursive c(x) as (select 1 union all select x + 1 from c) select x from c limit 5",
            "with c(x) as (select 1 union all select x + 1 from c) select x from c limit 5",
            "select * from {s} where {s:name} = ?",
            "select * from {s} where {s:name} = ?1",
            "select * from {s} where {s:name} = :name",
            "select * from {s} where {s:name} = @name",
            "select * from {s} where {s:name} = $name",
            "select load_extension('/tmp/evil.so')",
            "select {s:name} from {s",
            "select {s:name}} from {s}",
            "select * from {s} where 1 = 1) union all select * from (select 1",
            "/* comment */ delete from {s}",
            "select * from pragma_table_info('soup_attrs')",
            "select name from pragma_database_list",
            "select * from pragma_compile_options",
            "select * from {s} where exists (select 1 from PRAGMA_index_list('soup_attrs'))",
            "explain select * from {s}",
            "explain query plan select * from {s}",
            "values (1)",
            "",
            "   ",
            ";",
        ]
        for sql in refused {
            if sql.trimmingCharacters(in: .whitespaces).isEmpty {
                // An empty smartSql is refused at the spec level.
                try assertRejected(.argument, "empty") { try store.runSmartQuery(specJSON: try spec(["queryType": "smart", "smartSql": sql])) }
                continue
            }
            try assertRejected(.argument, sql) { try smart(sql) }
        }
        XCTAssertEqual(try count("s"), 2)
        XCTAssertEqual(try store.soupNames, ["s"])
    }

    func testDangerousFunctionsAreRefused() throws {
        // This SQLite is built with ENABLE_FTS3_TOKENIZER: fts3_tokenizer() leaks native pointers
        // and, with two arguments, registers a pointer as code to call. Smart SQL must not reach it.
        for sql in ["select hex(fts3_tokenizer('simple'))",
                    "select fts3_tokenizer('evil', x'4141414141414141')",
                    "select {s:name} from {s} where fts3_tokenizer('porter') is not null",
                    "select FTS3_TOKENIZER('simple')",
                    "select load_extension('libevil')"] {
            try assertRejected(.argument, sql) { try smart(sql) }
        }
    }

    func testStringsThatLookLikeStatementsAreData() throws {
        try upsert("s", #"{"name":"x; delete from s; attach"}"#)
        XCTAssertEqual(try smart("select {s:name} from {s} where {s:name} = 'x; delete from s; attach'").rows.count, 1)
        XCTAssertEqual(try count("s"), 3)
    }
}

// Hostile Smart SQL must not hang the host: a statement past its time limit ("timeoutMs" in
// the spec, 30 s by default) is stopped with ARGUMENT and the store is unchanged and usable.
final class SmartSqlTimeLimitTests: StoreTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"n","type":"integer"}]"#)
        try upsert("s", "[" + (0..<400).map { #"{"n":\#($0)}"# }.joined(separator: ",") + "]")
    }

    private func spec(_ sql: String, timeoutMs: Int?, pageSize: Int = 10) throws -> String {
        var fields: [String: Any] = ["queryType": "smart", "smartSql": sql, "pageSize": pageSize]
        if let timeoutMs { fields["timeoutMs"] = timeoutMs }
        return try jsonText(fields)
    }

    func testAJoinPastItsTimeLimitIsStopped() throws {
        // 400^4 = 2.6e10 rows to count: hours without a limit.
        let sql = "select count(*) from {s} a, {s} b, {s} c, {s} d where a.{s:n} + b.{s:n} + c.{s:n} + d.{s:n} = -1"
        let started = nowMillis()
        let error = try assertRejected(.argument) { try store.runSmartQuery(specJSON: try spec(sql, timeoutMs: 150)) }
        XCTAssertLessThan(nowMillis() - started, 5_000)
        XCTAssertTrue(error?.message.contains("150 ms") ?? false, error?.message ?? "")
        XCTAssertTrue(error?.message.contains("timeoutMs") ?? false, error?.message ?? "")
        // The reader connection is usable afterwards, with no limit left behind.
        XCTAssertEqual(try smart("select count(*) from {s} a, {s} b").rows.first.flatMap { int($0.first) }, 160_000)
    }

    func testAPageStepIsLimitedToo() throws {
        // Opened while the soup is small (10^4 sorted rows: instant), paged after it grew
        // (400^4 rows to sort before any page).
        try register("t", #"[{"path":"n","type":"integer"}]"#)
        try upsert("t", "[" + (0..<10).map { #"{"n":\#($0)}"# }.joined(separator: ",") + "]")
        let sql = "select a.{t:n} from {t} a, {t} b, {t} c, {t} d order by a.{t:n} + b.{t:n} + c.{t:n} + d.{t:n}"
        let cursor = try CursorPage(store.runSmartQuery(specJSON: try spec(sql, timeoutMs: 500, pageSize: 1)))
        XCTAssertEqual(cursor.totalEntries, 10_000)
        try upsert("t", "[" + (10..<400).map { #"{"n":\#($0)}"# }.joined(separator: ",") + "]")
        let started = nowMillis()
        try assertRejected(.argument) { try store.moveCursor(cursor.cursorId, toPage: 5) }
        XCTAssertLessThan(nowMillis() - started, 5_000)
        try store.closeCursor(cursor.cursorId)
    }

    func testTheLimitIsValidated() throws {
        for bad in [0, -5, 3_600_001] {
            try assertRejected(.argument) { try store.runSmartQuery(specJSON: try spec("select 1", timeoutMs: bad)) }
        }
        XCTAssertEqual(try QuerySpec.parse(JSONDocument.parse(#"{"queryType":"smart","smartSql":"select 1"}"#).root).timeoutMs, 30_000)
    }
}
