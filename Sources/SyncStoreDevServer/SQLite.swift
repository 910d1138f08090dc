import CSQLite

struct SQLiteError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "SQLite error \(code): \(message)" }
    var isConstraint: Bool { code & 0xff == SQLITE_CONSTRAINT }
}

enum SQLValue {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
}

/// One SQLite connection. Not thread-safe by itself: the server serializes access (see Store).
final class SQLiteDB {
    private(set) var handle: OpaquePointer?
    private var cache: [String: Statement] = [:]

    init(path: String) throws {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw SQLiteError(code: rc, message: msg)
        }
        handle = db
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    var lastError: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    func exec(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? lastError
            sqlite3_free(err)
            throw SQLiteError(code: rc, message: msg)
        }
    }

    /// Prepared statements are cached by SQL text: the same queries repeat constantly.
    func prepare(_ sql: String, cached: Bool = true) throws -> Statement {
        if cached, let s = cache[sql] {
            s.reset()
            return s
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw SQLiteError(code: rc, message: lastError) }
        let s = Statement(stmt, db: self)
        if cached {
            if cache.count > 500 { cache.removeAll() }
            cache[sql] = s
        }
        return s
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    private var savepointDepth = 0

    /// Runs `body` inside a (nestable) savepoint; rolls back on throw.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        let name = "sp\(savepointDepth)"
        defer { savepointDepth -= 1 }
        try exec("SAVEPOINT \(name)")
        do {
            let result = try body()
            try exec("RELEASE \(name)")
            return result
        } catch {
            try? exec("ROLLBACK TO \(name)")
            try? exec("RELEASE \(name)")
            throw error
        }
    }
}

final class Statement {
    let stmt: OpaquePointer
    unowned let db: SQLiteDB

    init(_ stmt: OpaquePointer, db: SQLiteDB) {
        self.stmt = stmt
        self.db = db
    }

    deinit { sqlite3_finalize(stmt) }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func bind(_ values: [SQLValue]) throws {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    func bind(_ value: SQLValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(stmt, index)
        case .int(let i): rc = sqlite3_bind_int64(stmt, index, i)
        case .double(let d): rc = sqlite3_bind_double(stmt, index, d)
        case .text(let s):
            var copy = s
            rc = copy.withUTF8 { buf in
                guard let base = buf.baseAddress else { return csqlite_bind_text_transient(stmt, index, "", 0) }
                return base.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                    csqlite_bind_text_transient(stmt, index, $0, Int32(buf.count))
                }
            }
        }
        guard rc == SQLITE_OK else { throw SQLiteError(code: rc, message: db.lastError) }
    }

    /// Advances; true while a row is available.
    func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let err = SQLiteError(code: rc, message: db.lastError)
        sqlite3_reset(stmt)
        throw err
    }

    func run(_ values: [SQLValue] = []) throws {
        reset()
        try bind(values)
        while try step() {}
    }

    func isNull(_ col: Int32) -> Bool { sqlite3_column_type(stmt, col) == SQLITE_NULL }
    func int(_ col: Int32) -> Int64 { sqlite3_column_int64(stmt, col) }
    func double(_ col: Int32) -> Double { sqlite3_column_double(stmt, col) }
    func text(_ col: Int32) -> String? {
        guard let p = sqlite3_column_text(stmt, col) else { return nil }
        let n = Int(sqlite3_column_bytes(stmt, col))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// Appends a text column's bytes without creating a Swift String (query hot path).
    func appendText(_ col: Int32, to out: inout [UInt8]) {
        guard let p = sqlite3_column_text(stmt, col) else { return }
        let n = Int(sqlite3_column_bytes(stmt, col))
        out.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
    }

    func value(_ col: Int32) -> SQLValue {
        switch sqlite3_column_type(stmt, col) {
        case SQLITE_INTEGER: return .int(int(col))
        case SQLITE_FLOAT: return .double(double(col))
        case SQLITE_NULL: return .null
        default: return .text(text(col) ?? "")
        }
    }
}
