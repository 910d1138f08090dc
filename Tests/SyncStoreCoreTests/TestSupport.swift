// Shared fixtures for the SmartStore core tests (docs/smartstore.md, docs/queries.md).
// Every test gets a fresh temporary directory (mkdtemp) holding real SQLite files.
import XCTest
import Foundation
import Glibc
import CSQLite
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

/// Base class: a fresh temp directory per test and one store file in it.
class StoreTestCase: XCTestCase {
    private(set) var root = ""
    private var openedStore: SmartStore?

    override func setUpWithError() throws {
        try super.setUpWithError()
        // As the C ABI does: every store opened gets the sync engine's companion.
        SyncCompanion.install()
        var template = Array("/tmp/syncstore-coretests-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else { throw XCTSkip("mkdtemp failed: \(String(cString: strerror(errno)))") }
        root = String(cString: made)
    }

    override func tearDownWithError() throws {
        openedStore = nil
        if !root.isEmpty { try? FileManager.default.removeItem(atPath: root) }
        try super.tearDownWithError()
    }

    var dbPath: String { "\(root)/store.db" }

    /// The test's store (created on first use).
    var store: SmartStore {
        get throws {
            if let openedStore { return openedStore }
            let s = try SmartStore(path: dbPath)
            openedStore = s
            return s
        }
    }

    /// Drops the test's store object so a new SmartStore on the same file starts from disk.
    func reopenStore() throws -> SmartStore {
        openedStore = nil
        return try store
    }
}

// MARK: - JSON helpers (Foundation's parser, independent of the jansson code under test)

func parseJSON(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> Any {
    guard let data = text.data(using: .utf8) else { throw TestFailure("not UTF-8") }
    return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
}

func jsonText(_ value: Any) throws -> String {
    let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys])
    return String(decoding: data, as: UTF8.self)
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

typealias Entry = [String: Any]

func entries(_ buffer: TextBuffer) throws -> [Entry] {
    guard let list = try parseJSON(buffer.string) as? [Entry] else {
        throw TestFailure("expected a JSON array of objects, got \(buffer.string.prefix(300))")
    }
    return list
}

func int(_ value: Any?) -> Int64? {
    guard let n = value as? NSNumber else { return nil }
    // Booleans are NSNumbers too; do not read them as integers.
    let kind = String(cString: n.objCType)
    if kind == "c" || kind == "d" || kind == "f" { return nil }
    return n.int64Value
}

/// True only for a JSON boolean (not the numbers 0/1).
func isBool(_ value: Any?, _ expected: Bool) -> Bool {
    guard let n = value as? NSNumber, String(cString: n.objCType) == "c" else { return false }
    return n.boolValue == expected
}

func double(_ value: Any?) -> Double? {
    guard let n = value as? NSNumber, String(cString: n.objCType) != "c" else { return nil }
    return n.doubleValue
}

func ids(_ list: [Entry]) -> [Int64] { list.compactMap { int($0["_soupEntryId"]) } }

func strings(_ list: [Entry], _ key: String) -> [String] { list.map { ($0[key] as? String) ?? "<\(String(describing: $0[key]))>" } }

/// A cursor as returned by querySoup / runSmartQuery / moveCursor.
struct CursorPage {
    let cursorId: Int64
    let currentPageIndex: Int64
    let pageSize: Int64
    let totalEntries: Int64
    let totalPages: Int64
    let items: [Any]

    init(_ buffer: TextBuffer) throws {
        guard let object = try parseJSON(buffer.string) as? [String: Any] else {
            throw TestFailure("cursor is not an object: \(buffer.string.prefix(300))")
        }
        let keys = ["cursorId", "currentPageIndex", "pageSize", "totalEntries", "totalPages"]
        var values: [Int64] = []
        for key in keys {
            guard let v = int(object[key]) else { throw TestFailure("cursor lacks integer \(key): \(buffer.string.prefix(300))") }
            values.append(v)
        }
        guard let items = object["currentPageOrderedEntries"] as? [Any] else {
            throw TestFailure("cursor lacks currentPageOrderedEntries")
        }
        cursorId = values[0]; currentPageIndex = values[1]; pageSize = values[2]
        totalEntries = values[3]; totalPages = values[4]
        self.items = items
    }

    var entries: [Entry] { items.compactMap { $0 as? Entry } }
    var rows: [[Any]] { items.compactMap { $0 as? [Any] } }
    var ids: [Int64] { entries.compactMap { int($0["_soupEntryId"]) } }
}

// MARK: - Error assertions

/// Asserts that `body` throws a StoreError with `code`; returns it for message checks.
@discardableResult
func assertStoreError<T>(_ code: ErrorCode, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
                         _ body: () throws -> T) -> StoreError? {
    do {
        let value = try body()
        XCTFail("expected StoreError(\(code)) but the call succeeded with \(value). \(message)", file: file, line: line)
        return nil
    } catch let error as StoreError {
        XCTAssertEqual(error.code, code, "wrong code; message: \(error.message). \(message)", file: file, line: line)
        XCTAssertFalse(error.message.isEmpty, "an error must say what was wrong", file: file, line: line)
        return error
    } catch {
        XCTFail("expected StoreError(\(code)), got \(error). \(message)", file: file, line: line)
        return nil
    }
}

// MARK: - Store snapshots: every table's rows, read with a separate raw SQLite connection

/// A full dump of the database file: schema and every row of every table (including FTS
/// shadow tables and sqlite_sequence), read through its own read-only connection.
func rawDump(_ path: String) throws -> [String] {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
        throw TestFailure("cannot open \(path) for a dump")
    }
    defer { sqlite3_close_v2(db) }
    func query(_ sql: String) throws -> [[String]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw TestFailure("dump query failed: \(String(cString: sqlite3_errmsg(db))) in \(sql)")
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            var row: [String] = []
            for i in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, i) {
                case SQLITE_NULL: row.append("NULL")
                case SQLITE_INTEGER: row.append("i:\(sqlite3_column_int64(statement, i))")
                case SQLITE_FLOAT: row.append("f:\(sqlite3_column_double(statement, i))")
                case SQLITE_BLOB:
                    let n = Int(sqlite3_column_bytes(statement, i))
                    let p = sqlite3_column_blob(statement, i)?.assumingMemoryBound(to: UInt8.self)
                    row.append("b:" + (p.map { Array(UnsafeBufferPointer(start: $0, count: n)) } ?? []).map { String($0, radix: 16) }.joined())
                default:
                    let p = sqlite3_column_text(statement, i)
                    row.append("t:" + (p.map { String(cString: $0) } ?? ""))
                }
            }
            rows.append(row)
        }
        return rows
    }
    var out: [String] = []
    let schema = try query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
    for row in schema { out.append("schema " + row.joined(separator: " | ")) }
    for row in schema where row[0] == "t:table" {
        let name = String(row[1].dropFirst(2))
        let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        for r in try query("SELECT * FROM \(quoted)") { out.append("\(name): " + r.joined(separator: " | ")) }
    }
    return out.sorted()
}

/// What a host can see: soups, their index specs, and all their entries.
func apiDump(_ store: SmartStore) throws -> [String] {
    var out: [String] = []
    for name in store.soupNames {
        out.append("soup \(name) specs \(try store.indexSpecsJSON(name))")
        let cursor = try CursorPage(store.querySoup(name, specJSON: #"{"queryType":"range","pageSize":100000}"#))
        out.append("entries \(name): \(try jsonText(cursor.items))")
        store.closeCursor(cursor.cursorId)
    }
    return out
}

struct Snapshot: Equatable {
    let raw: [String]
    let api: [String]
}

extension StoreTestCase {
    func snapshot() throws -> Snapshot { Snapshot(raw: try rawDump(dbPath), api: try apiDump(try store)) }

    /// Asserts the call fails with `code` and the store (file and API view) is unchanged.
    @discardableResult
    func assertRejected<T>(_ code: ErrorCode, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
                           _ body: () throws -> T) throws -> StoreError? {
        let before = try snapshot()
        let error = assertStoreError(code, message, file: file, line: line, body)
        let after = try snapshot()
        if before != after {
            let removed = Set(before.raw).subtracting(after.raw).sorted().prefix(5)
            let added = Set(after.raw).subtracting(before.raw).sorted().prefix(5)
            XCTFail("store changed by a rejected call. \(message)\n removed: \(removed)\n added: \(added)\n api before: \(before.api.prefix(3))\n api after: \(after.api.prefix(3))", file: file, line: line)
        }
        return error
    }

    // Common operations with short names.
    func register(_ soup: String, _ specs: String, on s: SmartStore? = nil) throws {
        try (s ?? store).registerSoup(soup, specsJSON: specs)
    }

    @discardableResult
    func upsert(_ soup: String, _ json: String, externalIdPath: String? = nil, on s: SmartStore? = nil) throws -> [Entry] {
        try entries((s ?? store).upsert(soup: soup, entriesJSON: json, externalIdPath: externalIdPath))
    }

    func query(_ soup: String, _ spec: String, on s: SmartStore? = nil) throws -> CursorPage {
        try CursorPage((s ?? store).querySoup(soup, specJSON: spec))
    }

    func smart(_ sql: String, pageSize: Int = 1000, on s: SmartStore? = nil) throws -> CursorPage {
        let spec = try jsonText(["queryType": "smart", "smartSql": sql, "pageSize": pageSize] as [String: Any])
        return try CursorPage((s ?? store).runSmartQuery(specJSON: spec))
    }

    func count(_ soup: String, on s: SmartStore? = nil) throws -> Int64 {
        try query(soup, #"{"queryType":"range","pageSize":1}"#, on: s).totalEntries
    }

    /// A JSON spec string from a dictionary.
    func spec(_ fields: [String: Any]) throws -> String { try jsonText(fields) }
}

func nowMillis() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

func sleepMillis(_ ms: Int) { usleep(useconds_t(ms * 1000)) }

/// Waits (at most `seconds`, looking every 10 ms) until `done` holds; whether it did.
func waitUntil(_ seconds: Double = 20, _ done: () -> Bool) -> Bool {
    let deadline = SyncStoreSupport.Clock.monotonicMillis() + Int64(seconds * 1000)
    while SyncStoreSupport.Clock.monotonicMillis() < deadline {
        if done() { return true }
        usleep(10_000)
    }
    return done()
}

/// JSON events a callback hears (live sync's, a run's), parsed, in order.
final class HeardEvents: @unchecked Sendable {
    private let lock = Lock()
    private var list: [[String: Any]] = []
    func take(_ text: String) {
        let event = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? ["unparsed": text]
        lock.withLock { list.append(event) }
    }
    var all: [[String: Any]] { lock.withLock { list } }
    func wait(_ seconds: Double = 20, _ done: () -> Bool) -> Bool { waitUntil(seconds, done) }
}
