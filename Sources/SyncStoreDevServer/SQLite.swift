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
    let handle: OpaquePointer
    private var cache = StatementCache(limit: 500)

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

    var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    func exec(_ sql: String) throws {
        if let failure = sqliteExec(handle, sql) { throw SQLiteError(code: failure.code, message: failure.message) }
    }

    /// Prepared statements are cached by SQL text: the same queries repeat constantly.
    func prepare(_ sql: String, cached: Bool = true) throws -> Statement {
        let prepare = { try Statement(db: self.handle, sql: sql, reporter: self) }
        return try cached ? cache.statement(sql, prepare: prepare) : prepare()
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    private var savepointDepth = 0

    /// Runs `body` inside a (nestable) savepoint; rolls back on throw.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        let name = "sp\(savepointDepth)"
        defer { savepointDepth -= 1 }
        return try sqliteTransaction(begin: { try exec("SAVEPOINT \(name)") }, commit: { try exec("RELEASE \(name)") },
                                     rollback: { try? exec("ROLLBACK TO \(name)"); try? exec("RELEASE \(name)") }, body)
    }
}
