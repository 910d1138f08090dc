import CSQLite

/// A value bound to or read from SQLite.
public enum SQLValue {
    case null
    case int(Int64)
    case real(Double)
    case text(String)
}

/// Turns a failed SQLite call on a connection into the error its owner throws (the core's
/// `StoreError` with advice, the dev server's `SQLiteError`); `context` says what failed.
public protocol SQLiteErrorReporter: AnyObject {
    func sqliteError(_ code: Int32, _ context: String) -> any Error
}

/// One prepared statement; used by one thread at a time, like its connection.
public final class Statement {
    public let handle: OpaquePointer
    unowned let reporter: any SQLiteErrorReporter

    /// Prepares `sql` on the connection `db`; failures are reported by `reporter`, which must
    /// outlive the statement.
    public init(db: OpaquePointer, sql: String, reporter: any SQLiteErrorReporter) throws {
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &handle, nil)
        guard rc == SQLITE_OK, let handle else {
            throw reporter.sqliteError(rc, "Cannot prepare statement")
        }
        self.handle = handle
        self.reporter = reporter
    }

    deinit { sqlite3_finalize(handle) }

    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    public func bind(_ values: [SQLValue], from start: Int32 = 1) throws {
        var index = start
        for value in values {
            try bind(value, at: index)
            index += 1
        }
    }

    public func bind(_ value: SQLValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .int(let v): rc = sqlite3_bind_int64(handle, index, v)
        case .real(let v): rc = sqlite3_bind_double(handle, index, v)
        case .text(let s):
            rc = s.withCString { csqlite_bind_text_transient(handle, index, $0, Int32(clamping: s.utf8.count)) }
        }
        if rc != SQLITE_OK { throw reporter.sqliteError(rc, "Cannot bind parameter \(index)") }
    }

    /// Binds `length` bytes of UTF-8 text (copied by SQLite).
    public func bindText(_ text: UnsafePointer<CChar>, length: Int, at index: Int32) throws {
        let rc = csqlite_bind_text_transient(handle, index, text, Int32(clamping: length))
        if rc != SQLITE_OK { throw reporter.sqliteError(rc, "Cannot bind parameter \(index)") }
    }

    /// Binds `length` bytes of UTF-8 text without copying: they must stay valid until the
    /// statement has been stepped and reset or bound again.
    public func bindTextNoCopy(_ text: UnsafePointer<UInt8>, length: Int, at index: Int32) throws {
        let rc = text.withMemoryRebound(to: CChar.self, capacity: length) {
            sqlite3_bind_text(handle, index, $0, Int32(clamping: length), nil)
        }
        if rc != SQLITE_OK { throw reporter.sqliteError(rc, "Cannot bind parameter \(index)") }
    }

    /// Steps once: true when a row is available, false when done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw reporter.sqliteError(rc, "Statement failed")
        }
    }

    /// Steps a statement that returns no rows, then resets it and clears its bindings (so no
    /// text bound without a copy is referenced after the caller's buffer is gone).
    public func run() throws {
        defer { reset() }
        _ = try step()
    }

    public var columnCount: Int32 { sqlite3_column_count(handle) }
    public func isNull(_ i: Int32) -> Bool { sqlite3_column_type(handle, i) == SQLITE_NULL }
    public func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }
    public func double(_ i: Int32) -> Double { sqlite3_column_double(handle, i) }
    public func type(_ i: Int32) -> Int32 { sqlite3_column_type(handle, i) }
    public func declaredType(_ i: Int32) -> String? { sqlite3_column_decltype(handle, i).map { String(cString: $0) } }

    /// A text column; nil when it is NULL.
    public func optionalText(_ i: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, i) else { return nil }
        let n = Int(sqlite3_column_bytes(handle, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// A text column; "" when it is NULL.
    public func text(_ i: Int32) -> String { optionalText(i) ?? "" }

    /// Raw UTF-8 bytes of a text column, valid until the next step/reset.
    public func textBytes(_ i: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let p = sqlite3_column_text(handle, i) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, i)))
    }

    public func value(_ i: Int32) -> SQLValue {
        switch type(i) {
        case SQLITE_INTEGER: return .int(int64(i))
        case SQLITE_FLOAT: return .real(double(i))
        case SQLITE_NULL: return .null
        default: return .text(text(i))
        }
    }
}
