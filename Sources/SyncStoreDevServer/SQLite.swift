import CSQLite
import SyncStoreSupport

struct SQLiteError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "SQLite error \(code): \(message)" }
    var isConstraint: Bool { code & 0xff == SQLITE_CONSTRAINT }
}

/// One SQLite connection. Not thread-safe by itself: the server serializes access (see Store).
final class SQLiteDB: SQLiteErrorReporter {
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

    /// The dev server's errors carry SQLite's own message only.
    func sqliteError(_ code: Int32, _ context: String) -> any Error { SQLiteError(code: code, message: lastError) }

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
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: lastError) }
        let s = try Statement(db: handle, sql: sql, reporter: self)
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
