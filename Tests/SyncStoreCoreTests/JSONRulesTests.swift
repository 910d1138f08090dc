// The one JSON rule (JSONRules; the header's "JSON" convention): no NUL byte, no U+0000 in an
// object key, entries nested at most SYNCSTORE_JSON_MAX_DEPTH levels, NULL or "" for optional
// JSON arguments. Server pages are served byte for byte by a canned HTTP server on 127.0.0.1,
// since no real server would send them; each breaking page must fail its run by the record's
// Id and leave nothing of the page stored. A store written by an earlier version that holds
// such an entry (written here with plain SQLite) must keep answering.
import XCTest
import Foundation
import Glibc
import CSQLite
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

/// Serves canned bodies on 127.0.0.1: each GET of a query path gets the next page in order.
final class CannedPageServer: @unchecked Sendable {
    private let fd: Int32
    private let pages: [[UInt8]]
    private let lock = NSLock()
    private var served = 0
    private var thread: Thread?
    let port: UInt16

    init(pages: [[UInt8]]) throws {
        self.pages = pages
        let sock = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard sock >= 0, bound == 0, listen(sock, 8) == 0 else { throw TestFailure("cannot listen on 127.0.0.1") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &length) }
        }
        fd = sock
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in serve() }
        self.thread = thread
        thread.start()
    }

    deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

    var remote: RemoteConfig { RemoteConfig(instanceURL: "http://127.0.0.1:\(port)", accessToken: "t") }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var request: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !request.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                let n = read(client, &chunk, chunk.count)
                if n <= 0 { break }
                request.append(contentsOf: chunk[0..<n])
            }
            let line = String(decoding: request.prefix(while: { $0 != 13 }), as: UTF8.self)
            var body: [UInt8]? = nil
            if line.hasPrefix("GET ") && line.contains("/query") {
                lock.lock()
                if served < pages.count { body = pages[served]; served += 1 }
                lock.unlock()
            }
            let status = body == nil ? "404 Not Found" : "200 OK"
            let payload = body ?? Array(#"[{"errorCode":"NOT_FOUND","message":"no such page"}]"#.utf8)
            let head = "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\nConnection: close\r\n\r\n"
            let all = Array(head.utf8) + payload
            _ = all.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            close(client)
        }
    }
}

final class JSONRulesTests: StoreTestCase {
    private func nested(_ depth: Int, leaf: String = "1") -> String {
        // `depth` containers: objects and arrays alternating, the outermost an object.
        var text = leaf
        for level in stride(from: depth, to: 0, by: -1) { text = level % 2 == 1 ? #"{"d":\#(text)}"# : "[\(text)]" }
        return text
    }

    /// A record `{"Id": id, ...rest}` of `depth` levels (the record itself is level 1).
    private func record(_ id: String, depth: Int = 1, extra: String = "") -> String {
        let inner = depth > 1 ? #","deep":\#(nested(depth - 1))"# : ""
        return #"{"Id":"\#(id)","LastModifiedDate":"2026-01-02T03:04:05.000+0000"\#(inner)\#(extra)}"#
    }

    private func page(_ records: [String], next: String? = nil) -> [UInt8] {
        let tail = next.map { #","done":false,"nextRecordsUrl":"\#($0)""# } ?? #","done":true"#
        return Array((#"{"totalSize":\#(records.count),"records":["# + records.joined(separator: ",") + "]" + tail + "}").utf8)
    }

    /// Runs a soql sync down of `pages` into soup "c" (indexed on Id) and returns its end state.
    private func syncDown(_ pages: [[UInt8]]) throws -> SyncState {
        let server = try CannedPageServer(pages: pages)
        let store = try self.store
        if !(try store.soupExists("c")) { try store.registerSoup("c", specsJSON: #"[{"path":"Id","type":"string"}]"#) }
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT Id FROM Contact"}"#, soupName: "c",
                                      optionsJSON: nil, name: nil, callback: nil)
        return try withExtendedLifetime(server) { try manager.wait(id: id, timeoutMs: 30_000) }
    }

    private func storedIds() throws -> [String] {
        try query("c", #"{"queryType":"range","indexPath":"Id","selectPaths":["Id"],"pageSize":100}"#).items
            .compactMap { ($0 as? [Any])?.first as? String }
    }

    // 1. U+0000 in an object key, at a record's top level, nested, or inside an array element:
    // the scanner leaves the record to jansson, which refuses it; the run fails naming the
    // record's Id and the rule, and nothing of that page is stored (its good records included).
    func testNulInAnObjectKeyFailsTheRunByIdAndStoresNothingOfThePage() throws {
        let plan = try XCTUnwrap(ScanPlan(paths: [["Id"]], reservedKeys: LocalFlags.storeKeys, idSlot: 0))
        let keys = [#""a\u0000""#, #""\u0000""#]
        for (n, placement) in [#","K":1"#, #","o":{"x":{"K":1}}"#, #","l":[1,{"K":true}]"#].enumerated() {
            for key in keys {
                let bad = record("bad\(n)", extra: placement.replacingOccurrences(of: #""K""#, with: key))
                let text = page([record("good\(n)"), bad])
                let scanned = try XCTUnwrap(ScannedPage.scan(text, plan: plan), bad)
                XCTAssertEqual(scanned.records.map(\.needsTree), [false, true], bad)
                XCTAssertThrowsError(try JSONDocument.parse(bytes: text, length: text.count), bad)
            }
            let state = try syncDown([page([record("first\(n)")], next: "/services/data/v62.0/query/p2"),
                                      page([record("good\(n)"), record("bad\(n)", extra: placement.replacingOccurrences(of: #""K""#, with: keys[0]))])])
            XCTAssertEqual(state.status, .failed)
            XCTAssertTrue(state.error.contains("'bad\(n)'") && state.error.contains("U+0000"), state.error)
            let ids = try storedIds()
            XCTAssertTrue(ids.contains("first\(n)"), "the page before is stored")
            XCTAssertFalse(ids.contains("good\(n)") || ids.contains("bad\(n)"), "nothing of the bad page: \(ids)")
        }
    }

    // 2. A raw NUL byte after a number or literal: jansson's lexer would drop it, so the bytes
    // path refuses it before jansson; the page is malformed, the run fails, nothing stored.
    func testRawNulAfterANumberOrLiteralIsMalformed() throws {
        for value in ["1", "true", "null", "false", "-2.5"] {
            let text = Array(#"{"records":[{"Id":"n","v":"#.utf8) + Array(value.utf8) + [0] + Array("}]}".utf8)
            assertStoreError(.server, value) { try RestClient.parse(text, method: "GET", path: "query") }
            let state = try syncDown([text])
            XCTAssertEqual(state.status, .failed, value)
            XCTAssertTrue(state.error.contains("NUL byte"), state.error)
            XCTAssertEqual(try storedIds(), [])
        }
        assertStoreError(.argument) { try store.upsert(soup: "c", entriesJSON: "{\"Id\":1\u{0}}") }
    }

    // 3. Nesting: an entry may nest SYNCSTORE_JSON_MAX_DEPTH levels, no more, from every entry.
    func testEntriesDeeperThanTheLimitAreRefusedByIdEverywhere() throws {
        XCTAssertEqual(JSONRules.maxDepth, 1000)
        let store = try self.store
        try store.registerSoup("c", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        // Host upserts: at the limit is stored and readable by SQLite's JSON functions; one more is not.
        try store.upsert(soup: "c", entriesJSON: record("atLimit", depth: JSONRules.maxDepth))
        for text in [record("over", depth: JSONRules.maxDepth + 1), "[\(record("over", depth: JSONRules.maxDepth + 1))]",
                     record("over", depth: 2001), record("over", depth: 2040)] {
            let error = assertStoreError(.argument) { try store.upsert(soup: "c", entriesJSON: text, externalIdPath: "Id") }
            XCTAssertTrue(error?.message.contains("'over'") ?? false, error?.message ?? "")
            XCTAssertTrue(error?.message.contains("1000") ?? false, error?.message ?? "")
        }
        // A sync down record 1001 or 2001..2045 deep (jansson reads pages up to 2048 deep,
        // SQLite 2000).
        for depth in [JSONRules.maxDepth + 1, 2001, 2045] {
            let state = try syncDown([page([record("ok\(depth)"), record("deep\(depth)", depth: depth)])])
            XCTAssertEqual(state.status, .failed)
            XCTAssertEqual(state.errorCode, ErrorCode.server.rawValue)
            XCTAssertTrue(state.error.contains("'deep\(depth)'") && state.error.contains("1000"), state.error)
            XCTAssertFalse(try storedIds().contains("ok\(depth)"), "nothing of the page is stored")
        }
        // The soup still answers everything, unindexed paths and Smart SQL included.
        XCTAssertEqual(try storedIds(), ["atLimit"])
        XCTAssertEqual(try query("c", #"{"queryType":"exact","indexPath":"deep.d","matchKey":"x","pageSize":5}"#).totalEntries, 0)
        let smart = try store.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select count(*) from {c} where {c:LastModifiedDate} is not null","pageSize":1}"#).string
        XCTAssertTrue(smart.contains("[[1]]"), smart)
    }

    // The same page spelled with \u escapes in its keys ("records", "Id", the nested keys) is
    // the same page: a record deeper than the limit fails the run by its Id, nothing stored;
    // so does one a custom target's fetch_page answers, up to jansson's own limit.
    func testDeepRecordsAreRefusedWhateverTheKeysSpelling() throws {
        func escaped(_ key: String) -> String { key.unicodeScalars.map { "\\u" + String(repeating: "0", count: 4 - String($0.value, radix: 16).count) + String($0.value, radix: 16) }.joined() }
        let store = try self.store
        try store.registerSoup("c", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        // Escapes in the page's keys, in the records' own keys, in the nested keys, or all.
        let spellings: [(page: Bool, own: Bool, nested: Bool)] = [(true, false, false), (false, true, false), (false, false, true), (true, true, true)]
        for depth in [JSONRules.maxDepth + 1, 2001, 2045] {
            for spelling in spellings {
                var deep = record("deep\(depth)", depth: depth), good = record("ok\(depth)")
                if spelling.own {
                    deep = deep.replacingOccurrences(of: #""Id""#, with: "\"\(escaped("Id"))\"")
                    good = good.replacingOccurrences(of: #""Id""#, with: "\"\(escaped("Id"))\"")
                }
                if spelling.nested { deep = deep.replacingOccurrences(of: #""d""#, with: "\"\(escaped("d"))\"") }
                let key = { (k: String) in spelling.page ? escaped(k) : k }
                let text = #"{"\#(key("totalSize"))":2,"\#(key("records"))":[\#(good),\#(deep)],"\#(key("done"))":true}"#
                XCTAssertNoThrow(try JSONDocument.parse(text, limitDepth: false), "the page is valid JSON")
                let state = try syncDown([Array(text.utf8)])
                XCTAssertEqual(state.status, .failed, "\(depth) \(spelling)")
                XCTAssertEqual(state.errorCode, ErrorCode.server.rawValue, state.error)
                XCTAssertTrue(state.error.contains("'deep\(depth)'") && state.error.contains("1000"), state.error)
                XCTAssertEqual(try storedIds(), [], "nothing of the page is stored")
            }
        }
        let manager = try store.syncManager()
        for depth in [JSONRules.maxDepth + 1, 2001, 2046, 2047] {
            let pageText = #"{"records":[{"Id":"fine"},\#(record("deep\(depth)", depth: depth))]}"#
            try manager.registerCustomTarget("deep\(depth)", CustomTargetCallbacks(fetchPage: { _, _, _ in pageText }))
            let id = try manager.syncDown(targetJSON: #"{"type":"deep\#(depth)"}"#, soupName: "c", optionsJSON: nil, name: nil, callback: nil)
            let state = try manager.wait(id: id, timeoutMs: 30_000)
            XCTAssertEqual(state.status, .failed, "\(depth)")
            XCTAssertEqual(state.errorCode, ErrorCode.argument.rawValue, state.error)
            XCTAssertTrue(state.error.contains("1000") || state.error.contains("depth"), state.error)
            XCTAssertEqual(try storedIds(), [], "nothing of the page is stored")
        }
    }

    // A store written by an earlier version holding entries SQLite (too deep) or jansson (U+0000
    // key) cannot read: it opens, answers queries over unindexed paths and Smart SQL, and such an
    // entry can be replaced by an upsert; what must parse it names it by _soupEntryId.
    func testAStoreHoldingAnUnreadableEntryStillAnswers() throws {
        let store = try self.store
        try store.registerSoup("c", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        try store.upsert(soup: "c", entriesJSON: #"[{"Id":"a","n":1},{"Id":"b","n":2}]"#)
        let info = try XCTUnwrap(store.soup("c"))
        let (table, idColumn) = (info.table, info.indexes[0].columnName)
        _ = try reopenStore()
        // Written the way an earlier version stored them: plain SQLite, no checks.
        var db: OpaquePointer?
        XCTAssertEqual(sqlite3_open(dbPath, &db), SQLITE_OK)
        let deep = #"{"Id":"deep","n":3,"v":\#(nested(2001)),"_soupEntryId":10}"#
        let nulKey = #"{"Id":"nulkey","n":4,"a\u0000":1,"_soupEntryId":11}"#
        for (id, text, key) in [(10, deep, "deep"), (11, nulKey, "nulkey")] {
            XCTAssertEqual(sqlite3_exec(db, "INSERT INTO \(table) (id, soup, created, lastModified, \(idColumn)) VALUES (\(id), '\(text)', 1, 1, '\(key)')", nil, nil, nil), SQLITE_OK)
        }
        sqlite3_close(db)

        let reopened = try reopenStore()
        XCTAssertEqual(try query("c", #"{"queryType":"range","indexPath":"n","beginKey":0,"pageSize":10}"#).totalEntries, 3,
                       "an unindexed path: the deep entry reads as null, the others answer")
        XCTAssertEqual(try query("c", #"{"queryType":"exact","indexPath":"n","matchKey":4,"pageSize":10}"#).totalEntries, 1)
        let smart = try reopened.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select {c:Id}, {c:n} from {c} order by {c:_soupEntryId}","pageSize":10}"#).string
        XCTAssertTrue(smart.contains(#"["deep",null]"#) && smart.contains(#"["nulkey",4]"#), smart)
        // The whole entries still come back as stored.
        let whole = try reopened.retrieve(soup: "c", ids: [10, 11]).string
        XCTAssertTrue(whole.hasPrefix(#"[{"Id":"deep""#) && whole.contains(#"{"Id":"nulkey","n":4,"a\u0000":1"#), String(whole.prefix(200)))
        // What must parse the entry with jansson names it.
        let error = assertStoreError(.argument) { try reopened.reIndexSoup("c", pathsJSON: #"["Id"]"#) }
        XCTAssertTrue(error?.message.contains("Entry 11 (_soupEntryId)") ?? false, error?.message ?? "")
        // Rewriting them by their Id replaces them (the lookup reads their flags through SQL).
        try reopened.upsert(soup: "c", entriesJSON: #"[{"Id":"deep","n":5},{"Id":"nulkey","n":6}]"#, externalIdPath: "Id")
        XCTAssertEqual(try query("c", #"{"queryType":"range","indexPath":"n","beginKey":5,"pageSize":10}"#).totalEntries, 2)
        XCTAssertEqual(try reopened.entryCounts(soup: "c").dirty, 0)
        try reopened.reIndexSoup("c", pathsJSON: #"["Id"]"#)
    }

    // 5. Optional JSON arguments take NULL or "" for "not given"; whitespace alone is malformed.
    func testEmptyAndBlankStrings() throws {
        XCTAssertEqual(try StoreConfig.parse(""), try StoreConfig())
        XCTAssertEqual(try StoreConfig.parse(nil), try StoreConfig())
        XCTAssertEqual(try SyncOptions.parse("").1, try SyncOptions.parse(nil).1)
        for blank in [" ", "\n", " \t "] {
            assertStoreError(.argument, blank.debugDescription) { try StoreConfig.parse(blank) }
            assertStoreError(.argument, blank.debugDescription) { try SyncOptions.parse(blank) }
            assertStoreError(.argument, blank.debugDescription) { try SyncUpTarget.parsed(blank) }
        }
        XCTAssertEqual(try SyncTarget.up(text: "", soupName: "s").text, try SyncTarget.up(text: nil, soupName: "s").text)
    }
}
