import SyncStoreCore

/// The sync engine's part of an open store (its `StoreCompanion`): the `SyncManager`, made on
/// first use, and what the store's host writes must keep for sync (exactly-once creates,
/// two-phase stamps; docs/sync.md). One per store, shared by all its handles.
package final class SyncCompanion: StoreCompanion, @unchecked Sendable {
    private unowned let store: SmartStore
    /// Creates a sync up just completed, and entries a two-phase push stamped (see RecentCreates).
    package let recentCreates = RecentCreates()
    private let lock = Lock()
    private var manager: SyncManager?
    /// Set (under lock) when the store's last handle starts closing: no manager is made after
    /// that, so a call racing the close cannot leave one holding the sync lock file.
    private var closed = false

    /// Every store opened from now on gets one: the C ABI and the CLI call it before they open
    /// or remove stores (a store opened before gets its companion on first use of sync).
    package static func install() { _ = installed }

    private static let installed: Void = StoreCompanions.register(SyncCompanion.self, sideFiles: [SyncEngineLock.suffix, GhostScratch.suffix]) { store in
        try SyncCompanion(store: store)
    }

    private init(store: SmartStore) throws {
        self.store = store
        guard !store.readOnly else { return }
        try store.write { db in
            try CreateMarkLedger.createTables(db)
            try DeletedRecordsWindow.createTable(db)
            try ReplayMarks.createTable(db)
        }
        // Best effort: the sync manager does it again when it starts.
        try? SyncStateStore.stopOrphansIfUnowned(store)
    }

    package static func of(_ store: SmartStore) throws -> SyncCompanion {
        install()
        return try store.companion(SyncCompanion.self) { try SyncCompanion(store: store) }
    }

    /// The store's sync engine. STATE once the last handle has started closing, or for a
    /// read-only store.
    package func syncManager() throws -> SyncManager {
        if store.readOnly { throw store.readOnlyError("synced") }
        return try lock.withLock {
            if let manager { return manager }
            if closed { throw StoreError(.state, "The store is closed; open it again") }
            let made = try SyncManager(store: store)
            manager = made
            return made
        }
    }

    /// The sync engine if one was made (reading live sync's state or stopping it makes none:
    /// making one takes the store's sync lock).
    package var current: SyncManager? { lock.withLock { manager } }

    // MARK: StoreCompanion

    /// An entry carrying the "sent" mark is one hostWillUpsert must see.
    package var hostKeys: [String] { [LocalFlags.pendingCreate] }

    package func hostWillUpsert(_ entries: [JSON], soup: SoupInfo, inside db: Connection) throws {
        // A host write that carries a "sent" mark: soups known to hold none may now.
        if entries.contains(where: { $0[LocalFlags.pendingCreate] != nil }) { try CreateMarkLedger.forget(db) }
    }

    /// A host write may be a read-modify-write that overlapped a sync up: a pending create
    /// written back without the engine's "sent" mark keeps the stored one, and one written back
    /// without the id its create just got (`RecentCreates`) gets it back, as an update. Either
    /// loss would make the next sync up create the record again. A two-phase stamp is kept the
    /// same way (`TwoPhaseTask.keepStamp`).
    package func hostWillReplace(_ entry: JSON, existing: Int64, soup: SoupInfo, stored: StoredEntry) throws {
        if entry[TwoPhaseTask.stampMark] == nil, LocalFlags.isSet(entry[LocalFlags.local]),
           recentCreates.wasStamped(table: soup.table, entryId: existing), let mark = try stored.member(TwoPhaseTask.stampMark) {
            TwoPhaseTask.keepStamp(entry, stored: mark.root)
        }
        guard LocalFlags.isSet(entry[LocalFlags.created]) else { return }
        if entry[LocalFlags.pendingCreate] == nil, let mark = try stored.member(LocalFlags.pendingCreate) {
            entry.set(LocalFlags.pendingCreate, owned: mark.root.retained())
        }
        // Read before the create's answer was stored (with or without the mark), written
        // after: the stored entry holds the id the create just got, the write does not.
        if let created = recentCreates.lookup(table: soup.table, entryId: existing),
           entry[created.field]?.string.map({ $0.isEmpty }) ?? true,
           try stored.text(at: created.field) == created.serverId {
            entry.set(created.field, owned: JSONMake.string(created.serverId))
            entry.set(LocalFlags.created, owned: JSONMake.bool(false))
            entry.set(LocalFlags.updated, owned: JSONMake.bool(true))
            entry.set(LocalFlags.local, owned: JSONMake.bool(true))
            entry.remove(LocalFlags.pendingCreate)
        }
    }

    /// Stops the syncs a handle started and waits for their terminal callbacks; with the last
    /// handle the sync worker ends too and releases the store's sync lock file.
    package func handleClosing(_ owner: Int, last: Bool) throws {
        let manager: SyncManager? = lock.withLock {
            if last { closed = true }
            return self.manager
        }
        guard let manager else { return }
        defer {
            if last {
                manager.close()
                lock.withLock { self.manager = nil }
            }
        }
        try manager.close(owner: owner)
    }

    /// A removed soup leaves the ledger (a soup registered again under its name starts unknown).
    package func didCommit(_ change: StoreChange) {
        let dropped = change.soups.filter { $0.value.dropped }.map(\.key)
        guard !dropped.isEmpty, !store.readOnly else { return }
        try? store.write { db in try CreateMarkLedger.forgetSoups(dropped, db) }
    }

    package var isCallbackThread: Bool { current?.isWorkerThread ?? false }

    package func paused<T>(_ body: () throws -> T) throws -> T {
        guard let manager = current else { return try body() }
        return try manager.withoutRuns(body)
    }
}

extension SmartStore {
    /// The store's sync engine (one per store, shared by all handles). STATE once the last
    /// handle has started closing, or for a read-only store.
    package func syncManager() throws -> SyncManager {
        try SyncCompanion.of(self).syncManager()
    }

    /// What the sync engine keeps in memory about this store's recent sync writes.
    package var recentCreates: RecentCreates {
        get throws { try SyncCompanion.of(self).recentCreates }
    }
}
