import CSQLite
import SyncStoreSupport

/// Bounds how long statements run on a connection. SQLite calls the progress handler every
/// 10,000 virtual machine steps; past the deadline the running statement fails with
/// SQLITE_INTERRUPT. For Smart SQL, where a join of large soups could run for hours.
package enum StatementDeadline {
    private final class Deadline {
        let at: Int64
        var passed = false
        init(at: Int64) { self.at = at }
    }

    /// Runs `body` with the deadline in force on `db`; a statement stopped by it throws
    /// ARGUMENT naming `what`.
    package static func run<T>(on db: Connection, milliseconds: Int64, what: String, _ body: () throws -> T) throws -> T {
        let deadline = Deadline(at: Clock.monotonicMillis() + milliseconds)
        sqlite3_progress_handler(db.db, 10_000, { context in
            guard let context else { return 0 }
            let deadline = Unmanaged<Deadline>.fromOpaque(context).takeUnretainedValue()
            guard Clock.monotonicMillis() > deadline.at else { return 0 }
            deadline.passed = true
            return 1
        }, Unmanaged.passUnretained(deadline).toOpaque())
        defer { sqlite3_progress_handler(db.db, 0, nil, nil) }
        do {
            return try withExtendedLifetime(deadline) { try body() }
        } catch where deadline.passed {
            throw StoreError.argument("\(what) ran longer than \(milliseconds) ms and was stopped; narrow it (indexed paths, fewer or smaller joined soups) or raise \"timeoutMs\" in the query spec")
        }
    }
}
