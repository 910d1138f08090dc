import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

/// One store: a SQLite database of soups (docs/smartstore.md, docs/queries.md). Thread-safe: writes are serialized
/// on one writer connection, each in one transaction; reads use a pool of read-only
/// connections and run beside a write (WAL).
package final class SmartStore: @unchecked Sendable {
    package let path: String
    /// Opened for reading only (store config "readOnly"): every write, sync and change of key is
    /// STATE, and the "writer" is a read-only connection that only loads the catalog.
    package let readOnly: Bool
    /// The writer; replaced only by a change of key, under writeLock.
    package internal(set) var writer: Connection
    let writeLock = Lock()
    /// Set when a change of key replaced the file but the new file could not be opened for
    /// writing: writes fail with it (reads open the new file) until the store is opened again.
    var writerFailure: StoreError?
    let fileLock = Lock()
    var currentFile: DatabaseFile
    package let readers: ReaderPool
    /// Checkpoints the writer's commits on a thread of its own (nil for a read-only store).
    let checkpointer: WalCheckpointer?
    let catalogLock = Lock()
    var soups: [String: SoupInfo]
    /// Bumped (under catalogLock) whenever the catalog changes or an alter starts, so a read
    /// planned with old indexes can tell it should plan again (see `reading`).
    var catalogVersion = 0
    /// True from the start of an alterSoup until its new indexes are published or rolled back.
    var alterInFlight = false
    /// True while a write transaction of this process runs (under catalogLock).
    var writeInFlight = false
    /// `PRAGMA schema_version` when the cached catalog last matched the file's (under catalogLock).
    var checkedSchemaVersion: Int64 = -1
    /// The changes of the write transaction in progress (under writeLock).
    var recorder: ChangeRecorder?
    /// Commits with changes so far (under writeLock).
    var commitSequence: Int64 = 0
    /// Host upserts store scannable entries from their text (off: every entry is parsed; the
    /// tests compare the two paths byte for byte).
    package var scansHostUpserts = true
    /// Commits per soup, to tell other processes' commits from this one's.
    package let versions = SoupVersions()
    /// Next _soupEntryId per table; only touched under writeLock, dropped on rollback.
    var nextIds: [String: Int64] = [:]
    /// Entry-date indexes known to exist (`SoupCatalog.dateIndexName`), under catalogLock.
    var indexedDates: Set<String> = []
    /// The writer's `PRAGMA data_version` when the caches last matched the file; it changes
    /// when another connection (another process) commits. Under writeLock.
    var dataVersion: Int64 = 0
    /// What the layers above attach to this store (see StoreCompanion), by type.
    private var companions: [ObjectIdentifier: any StoreCompanion] = [:]
    private let companionsLock = Lock()
    /// Set (under companionsLock) when the last handle starts closing: no companion is made
    /// after that, so a call racing the close cannot leave one holding the store's files.
    private var companionsClosed = false
    /// The registry's handles open on this store (a leaf lock: taken inside the sync engine's).
    private let ownersLock = Lock()
    private var openOwners: Set<Int> = []
    package let cursors = CursorTable()

    deinit { checkpointer?.finish() }

    /// Opens the store's file; `key` for an encrypted store (see docs/encryption.md).
    /// `kdfIter`: for a plaintext store, the iterations a later change of key uses.
    /// `readOnly`: the file must exist; it is neither created nor written.
    package init(path: String, key: StoreKey? = nil, kdfIter: Int = StoreKey.defaultKdfIter, readOnly: Bool = false) throws {
        self.path = path
        self.readOnly = readOnly
        if readOnly && !FileSystem.exists(path) {
            throw StoreError.notFound("Store file '\(path)' does not exist (a read-only open does not create it)")
        }
        (currentFile, writer, soups) = try SmartStore.openWriter(path: path, key: key, kdfIter: kdfIter, readOnly: readOnly)
        let file = currentFile
        // The writer now holds a shared lock on the file, which a change of key in another
        // process would have to break first (it holds an exclusive one from start to end): a
        // .rekey file here is a crash's leftover, not another process's work in progress.
        if !readOnly { StoreRekey.removeLeftovers(of: path) }
        dataVersion = try writer.scalarInt("PRAGMA data_version") ?? 0
        readers = ReaderPool(file: file)
        checkpointer = readOnly ? nil : WalCheckpointer(readers: readers)
        checkpointer?.install(on: writer)
        for (type, make) in StoreCompanions.registered { companions[type] = try make(self) }
    }

    /// The file (checked against `key`) and the writer. A change of key in another process may
    /// rename a new file over the one the writer opened while it waited for its first lock; then
    /// the file is checked and opened again (with a key that may no longer fit: AUTH).
    static func openWriter(path: String, key: StoreKey?, kdfIter: Int, readOnly: Bool) throws -> (DatabaseFile, Connection, [String: SoupInfo]) {
        var attempts = 0
        while true {
            // The file is read (encrypted or not) and opened with no change of key in between;
            // once open, the writer's shared lock keeps changes of key in other processes out.
            let gate = try RekeyGate(databasePath: path, exclusive: false, waitMs: Connection.busyTimeoutMs)
            defer { gate.release() }
            let file = try DatabaseFile(path: path, key: key, kdfIter: kdfIter)
            // SQLite reads a WAL store it cannot write only when its -wal and -shm exist or can
            // be created; else (no -wal: no process has it open) only as an unchanging file.
            file.immutable = readOnly && !FileSystem.exists(path + "-wal") && !FileSystem.isWritableDirectory(of: path)
            do {
                let writer = try Connection(file: file, readOnly: readOnly)
                do {
                    if !readOnly {
                        try SoupCatalog.createMetadataTables(writer)
                        try SoupVersions.createTable(writer)
                    }
                    return (file, writer, try SoupCatalog.loadAll(writer))
                } catch {
                    if writer.hasMoved { throw DatabaseFileReplaced() }
                    throw error
                }
            } catch is DatabaseFileReplaced {
                attempts += 1
                if attempts == 5 {
                    throw StoreError(.busy, "The store's file kept being replaced while it opened (changes of key in another process); open it again", retryable: true)
                }
            }
        }
    }

    /// The file (and key) connections open now.
    package var file: DatabaseFile { fileLock.withLock { currentFile } }

    /// Whether `key` is the key this store is open with (nil: it is not encrypted).
    package func isOpen(with key: StoreKey?) -> Bool { file.matches(key) }

    package var isEncrypted: Bool { file.isEncrypted }

    /// The PBKDF2 iterations of the store's key (the default when it is not encrypted).
    package var kdfIter: Int { file.kdfIter }

    // MARK: plumbing

    package func soup(_ name: String) -> SoupInfo? { catalogLock.withLock { soups[name] } }

    package func requireSoup(_ name: String) throws -> SoupInfo {
        if let info = soup(name) { return info }
        // Another process may have registered it since the catalog was loaded.
        adoptCatalogFromFile()
        guard let info = soup(name) else { throw StoreError.soupNotFound(name) }
        return info
    }

    func setSoup(_ name: String, _ info: SoupInfo?) {
        catalogLock.withLock {
            soups[name] = info
            catalogVersion += 1
        }
    }

    /// Runs `body` in one write transaction. On failure the catalog and id caches are reloaded
    /// from the database so memory matches what was rolled back. `committed` runs after the
    /// commit, still under the write lock: catalog changes are published there, so the next
    /// writer never sees a catalog that disagrees with the committed schema.
    /// The companions hear of the commit's changes (`StoreCompanion.didCommit`) after the lock
    /// is released, as made by `origin`.
    package func write<T>(origin given: StoreChange.Origin? = nil, _ body: (Connection) throws -> T,
                          committed: (T) -> Void = { _ in }) throws -> T {
        let origin = given ?? WriteOrigin.current ?? .engine(run: nil)
        var result: T?
        let change = try writeLock.withLock {
            try transaction(origin: origin, { result = try body($0) }, committed: { if let result { committed(result) } })
        }
        if let change { for companion in attached { companion.didCommit(change) } }
        guard let result else { throw StoreError(.internal, "A write transaction committed without its result") }
        return result
    }

    /// `write` if no write is in progress, of this process (its lock is free) or of another
    /// (SQLite's write lock is free: BUSY at once); false, nothing done, if one is. For work a
    /// reader may do in passing but must not wait for.
    func writeIfIdle(_ body: (Connection) throws -> Void, committed: () -> Void) throws -> Bool {
        let origin = WriteOrigin.current ?? .engine(run: nil)
        guard let change = try writeLock.withLockIfFree({ () throws -> StoreChange? in
            sqlite3_busy_timeout(writer.db, 0)
            defer { sqlite3_busy_timeout(writer.db, Connection.busyTimeoutMs) }
            return try transaction(origin: origin, body, committed: committed)
        }) else {
            return false
        }
        if let change { for companion in attached { companion.didCommit(change) } }
        return true
    }

    /// The transaction of `write`, under writeLock (not generic: one copy for every caller's
    /// result type); the change the companions are told of.
    private func transaction(origin: StoreChange.Origin, _ body: (Connection) throws -> Void,
                             committed: () -> Void) throws -> StoreChange? {
        if readOnly { throw readOnlyError("written") }
        if let writerFailure { throw writerFailure }
        catalogLock.withLock { writeInFlight = true }
        defer { catalogLock.withLock { writeInFlight = false } }
        let recorder = ChangeRecorder()
        self.recorder = recorder
        defer { self.recorder = nil }
        do {
            try writer.transaction {
                try reloadIfChangedElsewhere()
                try body(writer)
                try versions.count(recorder.soups.keys, db: writer)
            }
            versions.committed()
            committed()
            guard !recorder.soups.isEmpty else { return nil }
            commitSequence += 1
            return StoreChange(sequence: commitSequence, origin: origin, soups: recorder.soups)
        } catch {
            versions.rolledBack()
            nextIds.removeAll()
            writer.clearCache()
            let reloaded = try? SoupCatalog.loadAll(writer)
            catalogLock.withLock {
                if let reloaded { soups = reloaded }
                catalogVersion += 1
                alterInFlight = false
            }
            throw error
        }
    }

    /// SQLite lets other processes write the same file; their commits change tables behind the
    /// catalog and the id counters. Checked inside each write transaction (which holds the
    /// file's write lock, so nothing changes between the check and the write).
    func reloadIfChangedElsewhere() throws {
        let version = try writer.scalarInt("PRAGMA data_version") ?? 0
        guard version != dataVersion else { return }
        nextIds.removeAll()
        writer.clearCache()
        let reloaded = try SoupCatalog.loadAll(writer)
        catalogLock.withLock {
            soups = reloaded
            catalogVersion += 1
        }
        dataVersion = version
    }

    /// Called under the write lock (the writer's statement cache is not thread-safe).
    func schemaChanged() {
        writer.clearCache()
        readers.drain()
    }

    /// Writes entries inside a write transaction the caller holds (see `write`).
    package func withEntryWriter<T>(_ db: Connection, soup info: SoupInfo, externalIdPath: String?,
                            leaveIfChanged: Bool = false, _ body: (EntryWriter) throws -> T) throws -> T {
        let writer = try EntryWriter(db: db, soup: info, externalIdPath: externalIdPath,
                                     nextId: nextIds[info.table], leaveIfChanged: leaveIfChanged)
        let result = try body(writer)
        try writer.recordSequence()
        nextIds[info.table] = writer.nextId
        recorder?.merge(info.name, writer.change)
        return result
    }

    /// What a write to a read-only store answers.
    package func readOnlyError(_ what: String) -> StoreError {
        StoreError(.state, "Store file '\(path)' is open read-only (\"readOnly\": true in the store config), so it cannot be \(what); open it without readOnly (the file and its directory must be writable)")
    }

    /// The store's companion of type `T` (one per store, shared by all handles), made by
    /// `make` if it has none yet. STATE once the last handle has started closing.
    package func companion<T: StoreCompanion>(_ type: T.Type, make: () throws -> T) throws -> T {
        try companionsLock.withLock {
            if let existing = companions[ObjectIdentifier(type)] as? T { return existing }
            if companionsClosed { throw StoreError(.state, "The store is closed; open it again") }
            let made = try make()
            companions[ObjectIdentifier(type)] = made
            return made
        }
    }

    var attached: [any StoreCompanion] { companionsLock.withLock { Array(companions.values) } }

    /// Handles of the registry: a run starts only for an open one (owner 0, the Swift API's
    /// default, is always open), so a call racing the close of its handle cannot start a run
    /// that calls back after that close returned.
    package func ownerOpened(_ owner: Int) { ownersLock.withLock { _ = openOwners.insert(owner) } }
    package func ownerClosed(_ owner: Int) { ownersLock.withLock { _ = openOwners.remove(owner) } }
    package func isOwnerOpen(_ owner: Int) -> Bool { owner == 0 || ownersLock.withLock { openOwners.contains(owner) } }

    /// Tells the companions a handle is closing (they stop and wait for the work it started);
    /// with the last handle they are dropped (they hold the store), so the store can go.
    package func closeCompanions(owner: Int, last: Bool) {
        let all: [any StoreCompanion] = companionsLock.withLock {
            if last { companionsClosed = true }
            return Array(companions.values)
        }
        for companion in all { try? companion.handleClosing(owner, last: last) }
        if last { companionsLock.withLock { companions.removeAll() } }
    }

    /// The last handle closed: every commit moves from the WAL into the database file and the
    /// WAL is truncated, so the .db file alone is the whole store (a copy of it needs no -wal).
    /// Idle readers close first: they are read-only, and SQLite only checkpoints and deletes
    /// the WAL when the last connection to close can write, so the writer must close last.
    /// Best effort: when another process is writing, or reading older WAL frames, the
    /// checkpoint stops after a short wait with the rest left in the WAL (a later checkpoint
    /// copies it); the close does not fail for it.
    package func checkpointForClose() {
        writeLock.withLock {
            checkpointer?.finish()
            readers.drain()
            if writerFailure != nil || readOnly { return }
            writer.checkpointTruncate(waitMs: SmartStore.closeCheckpointWaitMs)
        }
    }

    /// How long the checkpoint of a closing store waits for other processes' transactions.
    package static let closeCheckpointWaitMs: Int32 = 500

    /// Whether the caller runs on a thread a companion calls host code on (inside a sync callback).
    package var onCallbackThread: Bool { attached.contains { $0.isCallbackThread } }

    // MARK: store facts

    /// Bytes used by the database: pages in use (including those still in the WAL).
    /// Read on a reader connection (the last committed state), so it never waits for a write.
    package func databaseSize() throws -> Int64 {
        try readers.withReader { db in
            let pages = try db.scalarInt("PRAGMA page_count") ?? 0
            let size = try db.scalarInt("PRAGMA page_size") ?? 0
            return pages * size
        }
    }
}

extension SmartStore {
    package func indexSpecsJSON(_ name: String) throws -> String { IndexSpec.listJSON(try indexSpecs(name)) }

    /// Reads a userstore.json / globalstore.json file and registers its soups.
    package func loadStoreConfig(path: String) throws {
        try loadStoreConfig(json: try FileSystem.readFile(path))
    }
}
