import SyncStoreSupport

/// A commit counter per soup, kept in the file (table `soup_versions`), so a process can tell
/// that another one changed a soup: every write transaction counts one more commit of each soup
/// it touched, and this process remembers the counts it made itself. A count that moved past
/// what a reader last saw by more than this process's own commits was moved by someone else.
/// Counts only grow; a removed soup keeps its row (its removal is counted too).
package final class SoupVersions: @unchecked Sendable {
    package static let table = "soup_versions"

    /// How many of its own counts per soup the process keeps while no one compares them.
    private static let unwatchedLimit = 64

    private let lock = Lock()
    /// Counts this process committed (or is committing) per soup, increasing, not yet compared.
    private var own: [String: [Int64]] = [:]
    /// Whether someone compares counts (`othersChanged`): own counts are then kept until it has.
    private var watched = false
    /// The counts of the write transaction in progress (taken back if it rolls back).
    private var inFlight: [(String, Int64)] = []

    package init() {}

    package static func createTable(_ db: Connection) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS \(table) (soupName TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    }

    /// Inside a write transaction, last: counts one commit of each soup in `soups`. Under the
    /// store's write lock.
    func count(_ soups: Dictionary<String, StoreChange.SoupChange>.Keys, db: Connection) throws {
        guard !soups.isEmpty else { return }
        // Three one-row statements rather than one UPSERT ... RETURNING: SQLite gives that a
        // statement journal, whose 64 KB buffer was allocated and freed on every commit (the
        // heap growing and shrinking, with TLB shootdowns on the other threads' cores).
        let update = try db.cached("UPDATE \(SoupVersions.table) SET version = version + 1 WHERE soupName = ?")
        let insert = try db.cached("INSERT INTO \(SoupVersions.table) (soupName, version) VALUES (?, 1)")
        let read = try db.cached("SELECT version FROM \(SoupVersions.table) WHERE soupName = ?")
        var made: [(String, Int64)] = []
        for soup in soups {
            try update.bind([.text(soup)])
            try update.run()
            if db.changes == 0 {
                try insert.bind([.text(soup)])
                try insert.run()
                made.append((soup, 1))
                continue
            }
            defer { read.reset() }
            try read.bind([.text(soup)])
            guard try read.step() else { continue }
            made.append((soup, read.int64(0)))
        }
        // Remembered before the commit: a reader may see the counts as soon as it happens.
        lock.withLock {
            for (soup, version) in made {
                own[soup, default: []].append(version)
                if !watched, let count = own[soup]?.count, count > SoupVersions.unwatchedLimit {
                    own[soup]?.removeFirst(count - SoupVersions.unwatchedLimit)
                }
            }
        }
        inFlight = made
    }

    /// The transaction committed (under the write lock).
    func committed() { inFlight.removeAll() }

    /// The transaction rolled back: its counts were never seen and will be made again.
    func rolledBack() {
        guard !inFlight.isEmpty else { return }
        let taken = inFlight
        inFlight.removeAll()
        lock.withLock { for (soup, version) in taken { own[soup]?.removeAll { $0 == version } } }
    }

    /// The counts in the file now (empty when the file has no table: made by an older version,
    /// opened read-only).
    package static func read(_ db: Connection) -> [String: Int64] {
        guard let statement = try? db.cached("SELECT soupName, version FROM \(table)") else { return [:] }
        defer { statement.reset() }
        var counts: [String: Int64] = [:]
        while (try? statement.step()) == true { counts[statement.text(0)] = statement.int64(1) }
        return counts
    }

    /// Starts (or stops) comparing: this process's counts are kept until compared.
    package func setWatched(_ on: Bool) { lock.withLock { watched = on } }

    /// The soups another process committed to between `seen` and `now`; `seen` becomes `now`.
    package func othersChanged(since seen: inout [String: Int64], now: [String: Int64]) -> [String] {
        lock.withLock {
            var changed: [String] = []
            for (soup, version) in now {
                let before = seen[soup] ?? 0
                guard version > before else { continue }
                let versions = own[soup] ?? []
                let mine = versions.lazy.filter { $0 > before && $0 <= version }.count
                if Int64(mine) < version - before { changed.append(soup) }
                let later = versions.filter { $0 > version }
                own[soup] = later.isEmpty ? nil : later
            }
            seen = now
            return changed.sorted()
        }
    }
}
