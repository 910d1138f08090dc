import SyncStoreCore
/// Which soups are known to hold no entry with a create in flight (`__sync_create_sent__` on a
/// dirty entry), so a sync down can skip the lost-creates scan over the whole soup
/// (docs/sync.md#exactly-once-creates), which otherwise makes every reSync cost a full scan.
/// Kept in the store file, so a process that opens the store later (and every other handle or
/// process) knows it too:
/// - `sync_mark_generation` holds one number, moved on whenever marks may appear: a sync up
///   starts (before it writes any), or a host write carries a mark (in that write's transaction);
/// - `sync_clean_soups` holds, per soup, the generation a scan found no mark at. A soup is
///   known clean while that is still the current generation. The generation is read before the
///   scan, so a mark written during it leaves the soup unknown.
package enum CreateMarkLedger {
    package static func createTables(_ db: Connection) throws {
        // Checked first: the INSERT below would take the write lock at every open.
        if try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name IN ('sync_mark_generation', 'sync_clean_soups')") == 2 {
            return
        }
        try db.execute("""
            CREATE TABLE IF NOT EXISTS sync_mark_generation (
                id INTEGER PRIMARY KEY CHECK (id = 0),
                generation INTEGER NOT NULL);
            INSERT OR IGNORE INTO sync_mark_generation VALUES (0, 0);
            CREATE TABLE IF NOT EXISTS sync_clean_soups (
                soupName TEXT PRIMARY KEY,
                generation INTEGER NOT NULL);
            """)
    }

    /// The generation to pass to `scannedClean` after a scan that starts now; nil when the store
    /// has no ledger (opened read-only before it had one): then nothing is known.
    package static func beginScan(_ store: SmartStore) -> Int64? {
        try? store.readers.withReader { db in try db.scalarInt("SELECT generation FROM sync_mark_generation") }
    }

    package static func isKnownClean(_ store: SmartStore, soup: String) -> Bool {
        let known = try? store.readers.withReader { db in
            try db.scalarInt("""
                SELECT 1 FROM sync_clean_soups AS c JOIN sync_mark_generation AS g USING (generation) \
                WHERE c.soupName = ?
                """, [.text(soup)])
        }
        return known == 1
    }

    /// A scan begun at `generation` found no create in flight in `soup`: recorded unless marks
    /// may have appeared since.
    package static func scannedClean(_ store: SmartStore, soup: String, generation: Int64) throws {
        try store.write { db in
            let record = try db.cached("""
                INSERT OR REPLACE INTO sync_clean_soups (soupName, generation) \
                SELECT ?, generation FROM sync_mark_generation WHERE generation = ?
                """)
            defer { record.reset() }
            try record.bind([.text(soup), .int(generation)])
            try record.run()
        }
    }

    /// Removed soups are no longer known clean; inside the caller's transaction.
    static func forgetSoups(_ soups: [String], _ db: Connection) throws {
        let statement = try db.cached("DELETE FROM sync_clean_soups WHERE soupName = ?")
        defer { statement.reset() }
        for soup in soups {
            statement.reset()
            try statement.bind([.text(soup)])
            try statement.run()
        }
    }

    /// Marks may exist in any soup again; inside the caller's transaction.
    package static func forget(_ db: Connection) throws {
        try db.execute("UPDATE sync_mark_generation SET generation = generation + 1")
    }
}
