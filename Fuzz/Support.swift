// Shared by every Swift fuzz target (compiled into each target's binary next to its own file).
// A target's oracle failing calls `fuzzFail`, which aborts: libFuzzer then saves the input as a
// crasher, exactly as it does for a crash or a sanitizer report.
import CJansson
import CSQLite
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

/// Stops the run on a broken invariant; the message says which and why.
func fuzzFail(_ message: String) -> Never {
    fputs("FUZZ ORACLE FAILED: \(message)\n", stderr)
    abort()
}

/// The input as text, as the C ABI sees a host's string: nil when it holds a NUL (a C string
/// ends there). Invalid UTF-8 is kept as the repaired String the ABI would also build.
func fuzzString(_ data: UnsafePointer<UInt8>, _ size: Int) -> String? {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if bytes.contains(0) { return nil }
    return String(decoding: bytes, as: UTF8.self)
}

/// The input split at its first newline: (first line, rest). Targets that take two texts use it.
func fuzzSplit(_ text: String) -> (String, String) {
    guard let nl = text.firstIndex(of: "\n") else { return (text, "") }
    return (String(text[..<nl]), String(text[text.index(after: nl)...]))
}

/// Errors the library may answer bad input with. INTERNAL means the engine broke its own
/// invariant, which no input may cause.
func fuzzExpectHandled(_ error: Error, _ what: String) {
    guard let e = error as? StoreError else { fuzzFail("\(what) threw a non-StoreError: \(error)") }
    if e.code == .internal { fuzzFail("\(what) answered INTERNAL: \(e.message)") }
}

/// Runs `body`; a StoreError other than INTERNAL is a handled refusal.
@discardableResult
func fuzzTry<T>(_ what: String, _ body: () throws -> T) -> T? {
    do { return try body() } catch { fuzzExpectHandled(error, what); return nil }
}

/// A scratch directory for the whole run, on tmpfs when there is one (stores are rewritten at
/// every input), removed at exit.
let fuzzRoot: String = {
    let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    var template = Array("\(base)/syncstore-fuzz-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        fuzzFail("mkdtemp failed: \(String(cString: strerror(errno)))")
    }
    let path = String(cString: made)
    fuzzRootForCleanup = path
    atexit { if let p = fuzzRootForCleanup { _ = system("rm -rf '\(p)'") } }
    return path
}()
nonisolated(unsafe) private var fuzzRootForCleanup: String?

/// Opens a new store in the scratch directory (a fresh file per call).
func fuzzOpenStore(_ name: String) -> SmartStore {
    let path = "\(fuzzRoot)/\(name).db"
    _ = unlink(path)
    do { return try SmartStore(path: path) } catch { fuzzFail("cannot open a scratch store: \(error)") }
}

/// Sets up what a target needs; a setup failure is a broken harness, not a finding.
func fuzzSetup<T>(_ what: String, _ body: () throws -> T) -> T {
    do { return try body() } catch { fuzzFail("harness setup (\(what)) failed: \(error)") }
}

/// A read-only fingerprint of a store file (its schema and every row of its tables), taken on a
/// connection of its own: what a target compares to prove an operation changed nothing.
func fuzzFingerprint(_ path: String) -> String {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
        fuzzFail("fingerprint: cannot open \(path)")
    }
    defer { sqlite3_close(db) }
    var out = ""
    func rows(_ sql: String, _ each: (OpaquePointer) -> Void) {
        var st: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &st, nil) == SQLITE_OK, let st else {
            fuzzFail("fingerprint: \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(st) }
        while sqlite3_step(st) == SQLITE_ROW { each(st) }
    }
    var tables: [String] = []
    rows("SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY name") { st in
        let type = String(cString: sqlite3_column_text(st, 0)), name = String(cString: sqlite3_column_text(st, 1))
        out += "\(type) \(name) \(String(cString: sqlite3_column_text(st, 2)))\n"
        if type == "table" && !name.contains("_fts") { tables.append(name) }
    }
    for table in tables {
        out += "\(table):"
        rows("SELECT * FROM \"\(table)\" ORDER BY rowid") { st in
            for c in 0..<sqlite3_column_count(st) {
                out += sqlite3_column_text(st, c).map { " " + String(cString: $0) } ?? " NULL"
            }
            out += "\n"
        }
    }
    return out
}

/// The soup most store targets work on: an index of every type, nested paths and an array path.
let fuzzSoup = "accounts"
let fuzzSoupSpecs = """
[{"path":"Id","type":"string"},{"path":"Name","type":"string"},{"path":"Amount","type":"floating"},
 {"path":"Count","type":"integer"},{"path":"Account.Name","type":"string"},{"path":"tags","type":"json1"},
 {"path":"Description","type":"full_text"},{"path":"items.sku","type":"string"}]
"""
let fuzzSoupEntries = """
[{"Id":"001A","Name":"Acme","Amount":12.5,"Count":3,"Account":{"Name":"Parent"},"tags":["a","b"],"Description":"rocket skates"},
 {"Id":"001B","Name":"Globex","Amount":-7,"Count":0,"Description":"hammock","items":[{"sku":"x1"},{"sku":"x2"}]},
 {"Id":"001C","Name":null,"Amount":1e300,"Count":"12","Account":{"Name":"Other"},"IsDeleted":true},
 {"Id":"001D","Name":"Ünïcødé \\u00e9","Count":-9223372036854775808,"LastModifiedDate":"2026-01-02T03:04:05.000+0000"}]
"""

/// A store with `fuzzSoup` registered and filled, its entry dates already indexed.
func fuzzFixtureStore(_ name: String) -> (SmartStore, String) {
    let store = fuzzOpenStore(name)
    fuzzSetup("fixture soup") {
        try store.registerSoup(fuzzSoup, specsJSON: fuzzSoupSpecs)
        _ = try store.upsert(soup: fuzzSoup, entriesJSON: fuzzSoupEntries)
    }
    fuzzIndexDates(store, soup: fuzzSoup)
    return (store, "\(fuzzRoot)/\(name).db")
}

/// Builds `soup`'s entry-date indexes as the first query naming them would
/// (docs/queries.md#entry-dates), so a target's "the store is unchanged" fingerprint is taken
/// after that one intended write.
func fuzzIndexDates(_ store: SmartStore, soup: String) {
    let spec = #"{"queryType":"smart","pageSize":1,"smartSql":"SELECT {\#(soup):_soupCreatedDate}, {\#(soup):_soupLastModifiedDate} FROM {\#(soup)}"}"#
    fuzzSetup("date indexes of \(soup)") { _ = try store.runSmartQuery(specJSON: spec) }
}

/// Text a call returned as JSON must parse.
func fuzzExpectJSON(_ buffer: TextBuffer, _ what: String) {
    let ok = buffer.bytes.withUnsafeBytes { raw -> Bool in
        guard let base = raw.baseAddress else { return false }
        return (try? JSONDocument.parse(bytes: base, length: raw.count)) != nil
    }
    if !ok { fuzzFail("\(what) returned text that is not JSON: \(buffer.string.prefix(300))") }
}

/// A JSON string literal of `text` (for specs built around an input).
func fuzzJSONString(_ text: String) -> String {
    let doc = JSONDocument(owning: JSONMake.string(text) ?? json_null())
    return doc.root.dump()
}
