import CSQLite

/// Runs SQL without results (may hold several statements) on the connection `db`: nil when it
/// succeeded, else SQLite's code and message.
public func sqliteExec(_ db: OpaquePointer, _ sql: String) -> (code: Int32, message: String)? {
    var message: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(db, sql, nil, nil, &message)
    guard rc != SQLITE_OK else { return nil }
    let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
    sqlite3_free(message)
    return (rc, text)
}

/// A connection's prepared statements kept by SQL text: the same statements run again and again.
public struct StatementCache {
    private var statements: [String: Statement] = [:]
    /// The last statement asked for: a repeated query finds it by comparing its SQL text, which
    /// is the same string each time (one comparison of storage, no hash of the text).
    private var last: (sql: String, statement: Statement)?
    /// Past this many statements the cache starts again (SQL text that varies without bound).
    private let limit: Int

    public init(limit: Int = .max) { self.limit = limit }

    /// The statement for `sql`, reset and without bindings; `prepare` makes it the first time.
    public mutating func statement(_ sql: String, prepare: () throws -> Statement) rethrows -> Statement {
        if let last, last.sql == sql {
            last.statement.reset()
            return last.statement
        }
        if let statement = statements[sql] {
            statement.reset()
            last = (sql, statement)
            return statement
        }
        let statement = try prepare()
        if statements.count > limit { statements.removeAll() }
        statements[sql] = statement
        last = (sql, statement)
        return statement
    }

    public mutating func removeAll() {
        statements.removeAll()
        last = nil
    }
}

/// Runs `body` in a transaction or savepoint: `begin` opens it, `commit` ends it after `body`
/// returns, `rollback` (which reports nothing) undoes it when `body` or `commit` throws.
public func sqliteTransaction<T>(begin: () throws -> Void, commit: () throws -> Void, rollback: () -> Void,
                                 _ body: () throws -> T) throws -> T {
    try begin()
    do {
        let result = try body()
        try commit()
        return result
    } catch {
        rollback()
        throw error
    }
}
