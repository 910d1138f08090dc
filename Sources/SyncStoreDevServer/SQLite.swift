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

    var lastInsertRowid: Int64 { sqlite3_last_insert_rowid(handle) }

    private(set) var savepointDepth = 0

    /// Told when savepoints begin, are about to be released, were released or rolled back
    /// (depth 1: the transaction itself), so change events follow exactly what commits.
    weak var observer: (any SavepointObserver)?

    /// Runs `body` inside a (nestable) savepoint; rolls back on throw. The outermost one is the
    /// transaction: every write path of the store runs in one.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        let depth = savepointDepth
        let name = "sp\(depth)"
        defer { savepointDepth -= 1 }
        return try sqliteTransaction(
            begin: {
                try exec("SAVEPOINT \(name)")
                observer?.savepointBegan(depth: depth)
            },
            commit: {
                try observer?.savepointWillRelease(depth: depth)
                try exec("RELEASE \(name)")
                observer?.savepointReleased(depth: depth)
            },
            rollback: {
                try? exec("ROLLBACK TO \(name)")
                try? exec("RELEASE \(name)")
                observer?.savepointRolledBack(depth: depth)
            }, body)
    }
}

/// Follows `SQLiteDB.savepoint`: depth 1 is the transaction (released = committed).
protocol SavepointObserver: AnyObject {
    func savepointBegan(depth: Int)
    /// Last writes of the savepoint (a throw rolls it back).
    func savepointWillRelease(depth: Int) throws
    func savepointReleased(depth: Int)
    func savepointRolledBack(depth: Int)
}
