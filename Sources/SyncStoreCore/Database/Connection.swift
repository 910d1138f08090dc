import CSQLite
import CSyncStoreCipher
import Glibc
import SyncStoreSupport

/// One SQLite connection. Not thread-safe by itself: the store hands each connection to one
/// thread at a time (the writer under its lock, readers through a pool).
package final class Connection: SQLiteErrorReporter {
    /// How long a statement waits for another connection's lock before SQLITE_BUSY.
    package static let busyTimeoutMs: Int32 = 10_000

    package let db: OpaquePointer
    package let file: DatabaseFile
    /// Opened for reading only (a reader of the pool).
    package let readOnly: Bool
    package var path: String { file.path }
    private var statementCache = StatementCache()

    package init(file: DatabaseFile, readOnly: Bool) throws {
        _ = ss_sqlite_configure()
        var handle: OpaquePointer?
        // NOMUTEX: we serialize access ourselves; each connection is used by one thread at a time.
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            | SQLITE_OPEN_NOMUTEX | file.openFlags
        let rc = sqlite3_open_v2(file.sqliteName, &handle, flags, file.vfs)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) + Connection.storageAdvice(rc & 0xff, $0, path: file.path) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw StoreError(.storage, "Cannot open database '\(file.path)': \(message)")
        }
        db = handle
        self.file = file
        self.readOnly = readOnly
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Connection.busyTimeoutMs)
        if file.isEncrypted {
            // Every page keeps 80 bytes for its IV and HMAC; set before a new file's first page
            // is written. Sorts and temporary tables stay in memory, not in temporary files.
            reserveCipherBytes(schema: "main")
            try execute("PRAGMA temp_store=MEMORY")
            // A page SQLite reads again costs an HMAC check where a plaintext store gets it from
            // the OS's cache: 8 MB of decrypted pages per connection instead of 2 (random lookups
            // in a 100k-entry store +25%).
            try execute("PRAGMA cache_size=-8192")
        }
        do {
            try configure(readOnly: readOnly)
        } catch {
            if sqlite3_extended_errcode(db) == SQLITE_READONLY | (4 << 8) || hasMoved { throw DatabaseFileReplaced() }
            throw error
        }
        if hasMoved { throw DatabaseFileReplaced() }
    }

    /// Makes a new encrypted database (`schema`: main or an attached one) keep 80 bytes of every
    /// page for its IV and HMAC; effective before its first page is written.
    package func reserveCipherBytes(schema: String) {
        var reserve = Int32(SS_CIPHER_RESERVE)
        _ = sqlite3_file_control(db, schema, SQLITE_FCNTL_RESERVE_BYTES, &reserve)
    }

    /// Whether the file this connection opened is no longer at its path: another process's change
    /// of key renamed the new store over it while this connection waited for its first lock.
    package var hasMoved: Bool {
        var moved: Int32 = 0
        return sqlite3_file_control(db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved != 0
    }

    private func configure(readOnly: Bool) throws {
        if !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=NORMAL")
            // Checkpoint every 32 MB of WAL instead of 4 MB: an index page rewritten by many
            // transactions (a sync down writes one per page) is copied into the database once
            // per checkpoint, and checkpoints sync the disk less often (sync down ~10% faster).
            // A store's writer checkpoints on a thread instead (WalCheckpointer), at the same size.
            try execute("PRAGMA wal_autocheckpoint=\(WalCheckpointer.threshold)")
            // ... and the WAL file shrinks back to that size when it restarts.
            try execute("PRAGMA journal_size_limit=33554432")
        }
        try execute("PRAGMA foreign_keys=OFF")
        // Readers map the file's first 32 MB instead of copying each page they read there with
        // pread: a lookup by an indexed path 0.6 µs faster. Each reader's mapped pages count in
        // the process's RSS, so the cap bounds it: 256 MB took a 1M-record sync down from 33 to
        // 164 MB (docs/architecture.md, "Decisions"). The codec's VFS maps nothing, so an
        // encrypted store still reads (and checks) each page.
        if readOnly { try execute("PRAGMA mmap_size=33554432") }
    }

    private var closed = false

    deinit { close() }

    /// Closes the connection now, before the object goes (a change of key replaces the store's
    /// file under it). The caller must not use the connection afterwards.
    package func close() {
        guard !closed else { return }
        closed = true
        statementCache.removeAll()
        sqlite3_close_v2(db)
    }

    package var errorMessage: String { String(cString: sqlite3_errmsg(db)) }

    /// Copies every frame of the WAL into the database file and truncates the WAL to zero bytes
    /// (SQLITE_CHECKPOINT_TRUNCATE). Waits at most `waitMs` for other connections (other
    /// processes) that are writing or still reading older WAL frames; after that it copies
    /// what it can and returns SQLITE_BUSY, leaving the rest in the WAL. Returns the SQLite code.
    @discardableResult
    package func checkpointTruncate(waitMs: Int32) -> Int32 {
        sqlite3_busy_timeout(db, waitMs)
        defer { sqlite3_busy_timeout(db, Connection.busyTimeoutMs) }
        return sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
    }

    package func error(_ rc: Int32, _ context: String) -> StoreError {
        let primary = rc & 0xff
        if rc == Int32(SS_CIPHER_IOERR_DATA) || (file.isEncrypted && primary == SQLITE_NOTADB) {
            return StoreError(.storage, "\(context): a page of the encrypted store '\(path)' failed its integrity check (HMAC): the file is damaged or was changed outside SyncStore; restore it from a backup or sync it again into a new store")
        }
        let code: ErrorCode
        switch primary {
        case SQLITE_BUSY, SQLITE_LOCKED: code = .busy
        case SQLITE_CONSTRAINT: code = .conflict
        case SQLITE_ERROR, SQLITE_MISMATCH, SQLITE_RANGE, SQLITE_TOOBIG, SQLITE_AUTH: code = .argument
        default: code = .storage
        }
        // SQLite opens a file it cannot write read-only: a writer in that state is on read-only
        // media (or lacks permissions), whatever error its first write then reports.
        let readOnlyFile = !readOnly && sqlite3_db_readonly(db, "main") == 1
        let advice = code == .storage ? Connection.storageAdvice(readOnlyFile ? SQLITE_READONLY : primary, db, path: path) : ""
        return StoreError(code, "\(context): \(errorMessage)\(advice)", retryable: code == .busy)
    }

    package func sqliteError(_ code: Int32, _ context: String) -> any Error { error(code, context) }

    /// What a storage failure means and what to do, from SQLite's code and the OS error under it.
    private static func storageAdvice(_ primary: Int32, _ db: OpaquePointer, path: String) -> String {
        let os = (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN) ? sqlite3_system_errno(db) : 0
        if primary == SQLITE_FULL || os == ENOSPC || os == EDQUOT {
            return ". The disk holding the store is full: free space and try again (nothing of the failed write was stored)"
        }
        if primary == SQLITE_READONLY || os == EROFS || os == EACCES || os == EPERM {
            return ". The store's file '\(path)' or its directory is read-only (read-only media or permissions): make both writable, or open the store with \"readOnly\": true to read it"
        }
        if primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB {
            return ". The store file is damaged: restore it from a backup, or remove the store and sync its data again"
        }
        return ""
    }

    /// Runs SQL without results (may hold several statements). Only for trusted SQL.
    package func execute(_ sql: String) throws {
        if let failure = sqliteExec(db, sql) {
            throw error(failure.code, failure.message == errorMessage ? "SQL failed" : "SQL failed (\(failure.message))")
        }
    }

    /// A prepared statement for trusted SQL, cached per connection.
    package func cached(_ sql: String) throws -> Statement {
        try statementCache.statement(sql) { try prepare(sql) }
    }

    /// Forgets cached statements (after schema changes that drop tables).
    package func clearCache() { statementCache.removeAll() }

    package func prepare(_ sql: String) throws -> Statement { try Statement(db: db, sql: sql, reporter: self) }

    package var lastInsertRowId: Int64 { sqlite3_last_insert_rowid(db) }
    package var changes: Int { Int(sqlite3_changes(db)) }

    /// Runs `body` in one IMMEDIATE transaction; rolls back on any error.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try sqliteTransaction(begin: { try execute("BEGIN IMMEDIATE") }, commit: { try execute("COMMIT") },
                              rollback: { _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }, body)
    }

    package func scalarInt(_ sql: String, _ bindings: [SQLValue] = []) throws -> Int64? {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        guard try statement.step() else { return nil }
        return statement.isNull(0) ? nil : statement.int64(0)
    }
}

/// The file was replaced while the connection opened (see `Connection.hasMoved`): open again.
package struct DatabaseFileReplaced: Error {}
