import CSQLite
import SyncStoreSupport

/// Makes sure Smart SQL from a host can only read: one SELECT, no parameters, no PRAGMA,
/// ATTACH, writes, schema changes or recursive CTEs (an unbounded WITH RECURSIVE would hang).
package enum SmartSqlGuard {
    private static let authorizer: @convention(c) (
        UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
        UnsafePointer<CChar>?, UnsafePointer<CChar>?
    ) -> Int32 = { _, action, table, function, _, _ in
        switch action {
        case SQLITE_SELECT: return SQLITE_OK
        case SQLITE_READ:
            // pragma_xxx() table-valued functions run their PRAGMA when stepped, after this
            // authorizer is gone: refuse them here, by name.
            guard let table else { return SQLITE_OK }
            return sqlite3_strnicmp(table, "pragma_", 7) == 0 ? SQLITE_DENY : SQLITE_OK
        case SQLITE_FUNCTION:
            // fts3_tokenizer() returns native pointers and registers pointers as code (this
            // SQLite is built with ENABLE_FTS3_TOKENIZER); load_extension() loads code.
            guard let function else { return SQLITE_OK }
            return sqlite3_stricmp(function, "fts3_tokenizer") == 0 || sqlite3_stricmp(function, "load_extension") == 0
                ? SQLITE_DENY : SQLITE_OK
        default: return SQLITE_DENY
        }
    }

    /// Prepares `sql` with the read-only authorizer in force.
    package static func prepare(_ sql: String, on db: Connection) throws -> Statement {
        func guarded() throws -> Statement {
            sqlite3_set_authorizer(db.db, authorizer, nil)
            defer { sqlite3_set_authorizer(db.db, nil, nil) }
            return try db.prepare(sql)
        }
        if let statement = try? guarded() { return statement }
        connectVirtualTables(sql, on: db)
        do {
            return try guarded()
        } catch let error as StoreError {
            throw StoreError.argument("Smart SQL refused: \(error.message). Only a single SELECT reading soups is allowed")
        }
    }

    /// The first use of an FTS5 table on a connection runs FTS5's own internal statements
    /// (schema reads, PRAGMA data_version), which the authorizer would deny, failing with
    /// "vtable constructor failed". Preparing (never stepping) the statement without the
    /// authorizer connects those tables; preparing executes nothing, and the statement is then
    /// prepared again under the authorizer, which decides.
    private static func connectVirtualTables(_ sql: String, on db: Connection) {
        var handle: OpaquePointer?
        _ = sqlite3_prepare_v2(db.db, sql, -1, &handle, nil)
        sqlite3_finalize(handle)
    }

    /// Checks translated Smart SQL and returns it without trailing `;` and blanks, ready to be
    /// wrapped in `SELECT ... FROM ( ... )`.
    package static func vet(_ sql: String, on db: Connection) throws -> String {
        var body = Substring(sql)
        while let last = body.last, last == ";" || last == " " || last == "\n" || last == "\t" || last == "\r" {
            body = body.dropLast()
        }
        let firstWord = body.drop(while: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == "(" })
            .prefix(while: { $0.isLetter }).uppercased()
        guard firstWord == "SELECT" || firstWord == "WITH" else {
            throw StoreError.argument("Smart SQL must be a single SELECT statement; got '\(firstWord.isEmpty ? String(body.prefix(20)) : firstWord)'")
        }
        var handle: OpaquePointer?
        let bodyText = String(body)
        func guarded() -> (Int32, Int) {
            sqlite3_finalize(handle)
            handle = nil
            sqlite3_set_authorizer(db.db, authorizer, nil)
            defer { sqlite3_set_authorizer(db.db, nil, nil) }
            return bodyText.withCString { base -> (Int32, Int) in
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(db.db, base, -1, &handle, &tail)
                return (rc, tail.map { base.distance(to: $0) } ?? 0)
            }
        }
        var (rc, consumed) = guarded()
        if rc != SQLITE_OK {
            connectVirtualTables(bodyText, on: db)
            (rc, consumed) = guarded()
        }
        defer { sqlite3_finalize(handle) }
        guard rc == SQLITE_OK, let handle else {
            throw StoreError.argument("Smart SQL refused: \(db.errorMessage). Only a single SELECT reading soups is allowed")
        }
        let rest = bodyText.utf8.dropFirst(consumed)
        if rest.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x0D && $0 != 0x3B }) {
            throw StoreError.argument("Smart SQL must be one statement; found more after position \(consumed)")
        }
        guard sqlite3_stmt_readonly(handle) != 0 else {
            throw StoreError.argument("Smart SQL must only read; the statement writes")
        }
        guard sqlite3_bind_parameter_count(handle) == 0 else {
            throw StoreError.argument("Smart SQL cannot have parameters (?, :name); put the values in the SQL")
        }
        return String(body)
    }
}
