import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

/// One store: a SQLite database of soups (docs/smartstore.md, docs/queries.md). Thread-safe: writes are serialized
/// on one writer connection, each in one transaction; reads use a pool of read-only
/// connections and run beside a write (WAL).
public final class SmartStore: @unchecked Sendable {
    public let path: String
    /// Opened for reading only (store config "readOnly"): every write, sync and change of key is
    /// STATE, and the "writer" is a read-only connection that only loads the catalog.
    public let readOnly: Bool
    /// The writer; replaced only by a change of key, under writeLock.
    package private(set) var writer: Connection
    private let writeLock = Lock()
    /// Set when a change of key replaced the file but the new file could not be opened for
    /// writing: writes fail with it (reads open the new file) until the store is opened again.
    private var writerFailure: StoreError?
    private let fileLock = Lock()
    private var currentFile: DatabaseFile
    package let readers: ReaderPool
    private let catalogLock = Lock()
    private var soups: [String: SoupInfo]
    /// Bumped (under catalogLock) whenever the catalog changes or an alter starts, so a read
    /// planned with old indexes can tell it should plan again (see `reading`).
    private var catalogVersion = 0
    /// True from the start of an alterSoup until its new indexes are published or rolled back.
    private var alterInFlight = false
    /// True while a write transaction of this process runs (under catalogLock).
    private var writeInFlight = false
    /// `PRAGMA schema_version` when the cached catalog last matched the file's (under catalogLock).
    private var checkedSchemaVersion: Int64 = -1
    /// Next _soupEntryId per table; only touched under writeLock, dropped on rollback.
    private var nextIds: [String: Int64] = [:]
    /// The writer's `PRAGMA data_version` when the caches last matched the file; it changes
    /// when another connection (another process) commits. Under writeLock.
    private var dataVersion: Int64 = 0
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

    /// Opens the store's file; `key` for an encrypted store (see docs/encryption.md).
    /// `kdfIter`: for a plaintext store, the iterations a later change of key uses.
    /// `readOnly`: the file must exist; it is neither created nor written.
    public init(path: String, key: StoreKey? = nil, kdfIter: Int = StoreKey.defaultKdfIter, readOnly: Bool = false) throws {
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
        for (type, make) in StoreCompanions.registered { companions[type] = try make(self) }
    }

    /// The file (checked against `key`) and the writer. A change of key in another process may
    /// rename a new file over the one the writer opened while it waited for its first lock; then
    /// the file is checked and opened again (with a key that may no longer fit: AUTH).
    private static func openWriter(path: String, key: StoreKey?, kdfIter: Int, readOnly: Bool) throws -> (DatabaseFile, Connection, [String: SoupInfo]) {
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
                    if !readOnly { try SoupCatalog.createMetadataTables(writer) }
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
    public func isOpen(with key: StoreKey?) -> Bool { file.matches(key) }

    public var isEncrypted: Bool { file.isEncrypted }

    /// The PBKDF2 iterations of the store's key (the default when it is not encrypted).
    public var kdfIter: Int { file.kdfIter }

    // MARK: plumbing

    package func soup(_ name: String) -> SoupInfo? { catalogLock.withLock { soups[name] } }

    package func requireSoup(_ name: String) throws -> SoupInfo {
        if let info = soup(name) { return info }
        // Another process may have registered it since the catalog was loaded.
        adoptCatalogFromFile()
        guard let info = soup(name) else { throw StoreError.soupNotFound(name) }
        return info
    }

    private func setSoup(_ name: String, _ info: SoupInfo?) {
        catalogLock.withLock {
            soups[name] = info
            catalogVersion += 1
        }
    }

    /// Runs `body` in one write transaction. On failure the catalog and id caches are reloaded
    /// from the database so memory matches what was rolled back. `committed` runs after the
    /// commit, still under the write lock: catalog changes are published there, so the next
    /// writer never sees a catalog that disagrees with the committed schema.
    package func write<T>(_ body: (Connection) throws -> T, committed: (T) -> Void = { _ in }) throws -> T {
        try writeLock.withLock {
            if readOnly { throw readOnlyError("written") }
            if let writerFailure { throw writerFailure }
            catalogLock.withLock { writeInFlight = true }
            defer { catalogLock.withLock { writeInFlight = false } }
            do {
                let result = try writer.transaction {
                    try reloadIfChangedElsewhere()
                    return try body(writer)
                }
                committed(result)
                return result
            } catch {
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
    }

    /// SQLite lets other processes write the same file; their commits change tables behind the
    /// catalog and the id counters. Checked inside each write transaction (which holds the
    /// file's write lock, so nothing changes between the check and the write).
    private func reloadIfChangedElsewhere() throws {
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
    private func schemaChanged() {
        writer.clearCache()
        readers.drain()
    }

    /// Writes entries inside a write transaction the caller holds (see `write`).
    package func withEntryWriter<T>(_ db: Connection, soup info: SoupInfo, externalIdPath: String?,
                            leaveIfChanged: Bool = false, _ body: (EntryWriter) throws -> T) throws -> T {
        let writer = try EntryWriter(db: db, soup: info, externalIdPath: externalIdPath,
                                     nextId: nextIds[info.table], leaveIfChanged: leaveIfChanged)
        let result = try body(writer)
        nextIds[info.table] = writer.nextId
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

    private var attached: [any StoreCompanion] { companionsLock.withLock { Array(companions.values) } }

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
            readers.drain()
            if writerFailure != nil || readOnly { return }
            writer.checkpointTruncate(waitMs: SmartStore.closeCheckpointWaitMs)
        }
    }

    /// Encrypts the store under `newKey`, re-encrypts it, or (nil) decrypts it; atomic (see
    /// StoreRekey). Every handle of this process keeps working and uses the new file. BUSY
    /// while a sync of the store runs or is queued, or another process has the store open.
    public func changeKey(to newKey: StoreKey?) throws {
        if onCallbackThread { throw StoreError(.state, "A sync callback cannot change its store's key (its own run would never end first)") }
        if readOnly { throw readOnlyError("re-keyed") }
        // Not under companionsLock: a callback of a run the pause waits for may write.
        let pause = attached.reduce({ try self.rekey(to: newKey) }) { body, companion in { try companion.paused(body) } }
        try pause()
    }

    private func rekey(to newKey: StoreKey?) throws {
        try writeLock.withLock {
            if let writerFailure { throw writerFailure }
            if newKey == nil && !writer.file.isEncrypted { return }
            // No connection of another process opens while the file is replaced.
            let gate = try RekeyGate(databasePath: path, exclusive: true, waitMs: StoreRekey.exclusiveWaitMs)
            defer { gate.release() }
            try readers.replacingFile { () -> DatabaseFile? in
                let old = writer.file
                let next: DatabaseFile
                do {
                    next = try StoreRekey.rewrite(writer, to: newKey)
                } catch {
                    // Nothing changed, but the refused attempt may have left SQLite's locks on
                    // the writer: a new connection drops them.
                    try reopenWriter(old, after: "The key was not changed")
                    throw error
                }
                // The old connection goes first: it must not touch the new file's -wal or -shm.
                fileLock.withLock { currentFile = next }
                try reopenWriter(next, after: "The key was changed")
                return next
            }
        }
    }

    /// Closes the writer and opens `file` in its place (under writeLock). When that fails, writes
    /// fail from then on with a message saying what happened.
    private func reopenWriter(_ file: DatabaseFile, after what: String) throws {
        writer.close()
        do {
            writer = try Connection(file: file, readOnly: false)
            dataVersion = try writer.scalarInt("PRAGMA data_version") ?? 0
            nextIds.removeAll()
        } catch let error as StoreError {
            let failure = StoreError(error.code, "\(what), but the store could not be opened again for writing (\(error.message)); close every handle and open the store again")
            writerFailure = failure
            throw failure
        }
    }

    /// How long the checkpoint of a closing store waits for other processes' transactions.
    package static let closeCheckpointWaitMs: Int32 = 500

    /// Whether the caller runs on a thread a companion calls host code on (inside a sync callback).
    package var onCallbackThread: Bool { attached.contains { $0.isCallbackThread } }

    // MARK: soups

    public func registerSoup(_ name: String, specsJSON: String) throws {
        let doc = try JSONDocument.parse(specsJSON, what: "index specs")
        try registerSoup(name, specs: try IndexSpec.parseList(doc.root))
    }

    public func registerSoup(_ name: String, specs: [IndexSpec]) throws {
        guard !name.isEmpty else { throw StoreError.argument("A soup name must not be empty") }
        guard !specs.isEmpty else { throw StoreError.argument("Index specs must not be empty") }
        _ = try write({ db -> SoupInfo? in
            if self.soup(name) != nil { return nil }
            return try SoupCatalog.create(db, name: name, specs: specs)
        }, committed: { created in
            if let created { self.setSoup(name, created) }
        })
    }

    /// Answers from the file's catalog, so soups other processes registered or removed count.
    public func soupExists(_ name: String) -> Bool {
        adoptCatalogFromFile()
        return soup(name) != nil
    }

    /// The soups in the file (the catalog is re-read, so other processes' changes show).
    public var soupNames: [String] {
        adoptCatalogFromFile()
        return catalogLock.withLock { soups.keys.sorted() }
    }

    public func removeSoup(_ name: String) throws {
        try write({ db in
            guard let info = self.soup(name) else { return }
            try SoupCatalog.drop(db, info)
            self.nextIds[info.table] = nil
            // Published before the commit: a reader that fails on the dropped table must then
            // find the soup gone (see `reading`). A failed commit reloads the catalog.
            self.setSoup(name, nil)
        }, committed: { _ in
            // Moved again after the commit: a catalog a reader read from the file before the
            // commit (the soup still there) must not be adopted once the write has ended
            // (see `adoptCatalogFromFile`).
            self.catalogLock.withLock { self.catalogVersion += 1 }
            self.schemaChanged()
        })
    }

    public func clearSoup(_ name: String) throws {
        try write { db in
            let info = try self.requireSoup(name)
            try db.execute("DELETE FROM \(info.table)")
            if !info.fullTextIndexes.isEmpty { try db.execute("DELETE FROM \(info.ftsTable)") }
        }
    }

    public func indexSpecs(_ name: String) throws -> [IndexSpec] { try requireSoup(name).specs }

    public func alterSoup(_ name: String, specsJSON: String, reIndexData: Bool) throws {
        let doc = try JSONDocument.parse(specsJSON, what: "index specs")
        try alterSoup(name, specs: try IndexSpec.parseList(doc.root), reIndexData: reIndexData)
    }

    public func alterSoup(_ name: String, specs: [IndexSpec], reIndexData: Bool) throws {
        _ = try write({ db -> SoupInfo in
            let old = try self.requireSoup(name)
            // Readers that fail on a dropped column from now on retry with the new indexes.
            self.catalogLock.withLock {
                self.alterInFlight = true
                self.catalogVersion += 1
            }
            let (info, _) = try SoupCatalog.alter(db, old, specs: specs)
            // New statements must see the altered table before re-indexing uses them.
            db.clearCache()
            if reIndexData {
                try self.reindex(db, info, indexes: info.columnIndexes)
            }
            try self.refillFullText(db, info)
            return info
        }, committed: { info in
            self.setSoup(name, info)
            self.catalogLock.withLock { self.alterInFlight = false }
            self.schemaChanged()
        })
    }

    public func reIndexSoup(_ name: String, pathsJSON: String) throws {
        let doc = try JSONDocument.parse(pathsJSON, what: "path list")
        guard doc.root.isArray else { throw StoreError.argument("reIndexSoup takes a JSON array of indexed paths") }
        var paths: [String] = []
        for p in doc.root.elements {
            guard let s = p.string else { throw StoreError.argument("reIndexSoup paths must be strings") }
            paths.append(s)
        }
        try reIndexSoup(name, paths: paths)
    }

    public func reIndexSoup(_ name: String, paths: [String]) throws {
        try write { db in
            let info = try self.requireSoup(name)
            var indexes: [IndexColumn] = []
            for path in paths {
                guard let index = info.index(for: path) else {
                    throw StoreError.argument("Path '\(path)' is not indexed on soup '\(name)'; only indexed paths can be re-indexed")
                }
                if index.hasColumn { indexes.append(index) }
            }
            try self.reindex(db, info, indexes: indexes)
            if indexes.contains(where: { $0.type == .fullText }) { try self.refillFullText(db, info) }
        }
    }

    /// A stored entry parsed. One an earlier version stored against today's JSON rule (a key
    /// with U+0000, nesting jansson refuses) is named by its id, so the host can delete or
    /// rewrite it; an entry only deeper than the rule's limit still reads.
    package static func storedEntry(_ bytes: UnsafeRawPointer, length: Int, id: Int64, soup: String) throws -> JSONDocument {
        do {
            return try JSONDocument.parse(bytes: bytes, length: length, what: "stored entry", limitDepth: false)
        } catch let error as StoreError {
            throw StoreError(.argument, "Entry \(id) (_soupEntryId) of soup '\(soup)' cannot be read: \(error.message). It was stored by an earlier version; delete it or upsert it anew")
        }
    }

    /// Recomputes index columns from each entry's JSON.
    private func reindex(_ db: Connection, _ info: SoupInfo, indexes: [IndexColumn]) throws {
        guard !indexes.isEmpty else { return }
        let assignments = indexes.map { "\($0.columnName) = ?" }.joined(separator: ", ")
        let update = try db.prepare("UPDATE \(info.table) SET \(assignments) WHERE id = ?")
        let scan = try db.prepare("SELECT id, soup FROM \(info.table)")
        // Collect first: updating rows while scanning the same table is undefined in SQLite.
        var rows: [(Int64, [SQLValue])] = []
        while try scan.step() {
            let bytes = scan.textBytes(1)
            guard let base = bytes.baseAddress else { continue }
            let doc = try SmartStore.storedEntry(base, length: bytes.count, id: scan.int64(0), soup: info.name)
            rows.append((scan.int64(0), indexes.map { SoupPath.indexValue(doc.root, $0.path, for: $0.type) }))
        }
        for (id, values) in rows {
            update.reset()
            try update.bind(values)
            try update.bind(.int(id), at: Int32(values.count + 1))
            try update.run()
        }
    }

    private func refillFullText(_ db: Connection, _ info: SoupInfo) throws {
        let columns = info.fullTextIndexes.map(\.columnName)
        guard !columns.isEmpty else { return }
        let list = columns.joined(separator: ", ")
        try db.execute("DELETE FROM \(info.ftsTable)")
        try db.execute("INSERT INTO \(info.ftsTable) (rowid, \(list)) SELECT id, \(list) FROM \(info.table)")
    }

    /// Registers the soups of a userstore.json / globalstore.json document; existing soups are skipped.
    public func loadStoreConfig(json: String) throws {
        let doc = try JSONDocument.parse(json, what: "store config")
        guard let list = doc.root["soups"], list.isArray else {
            throw StoreError.argument("A store config must be {\"soups\": [{\"soupName\", \"indexes\"}]}")
        }
        var definitions: [(String, [IndexSpec])] = []
        for (i, item) in list.elements.enumerated() {
            guard let name = item["soupName"]?.string, !name.isEmpty else {
                throw StoreError.argument("Soup \(i) of the store config needs a non-empty \"soupName\"")
            }
            guard let indexes = item["indexes"] else {
                throw StoreError.argument("Soup '\(name)' of the store config needs \"indexes\"")
            }
            definitions.append((name, try IndexSpec.parseList(indexes)))
        }
        _ = try write({ db -> [SoupInfo] in
            var created: [SoupInfo] = []
            for (name, specs) in definitions where self.soup(name) == nil && !created.contains(where: { $0.name == name }) {
                created.append(try SoupCatalog.create(db, name: name, specs: specs))
            }
            return created
        }, committed: { created in
            for info in created { self.setSoup(info.name, info) }
        })
    }

    // MARK: entries

    /// Upserts entries (a JSON array of objects, or one object) in one transaction and returns
    /// the stored entries as a JSON array.
    public func upsert(soup name: String, entriesJSON: String, externalIdPath: String? = nil) throws -> TextBuffer {
        let doc = try JSONDocument.parse(entriesJSON, what: "entries", limitDepth: false)
        return try upsert(soup: name, entries: doc.root, externalIdPath: externalIdPath)
    }

    public func upsert(soup name: String, entries: JSON, externalIdPath: String? = nil) throws -> TextBuffer {
        let list: [JSON] = entries.isArray ? entries.elements : [entries]
        for (i, entry) in list.enumerated() where !entry.isObject {
            throw StoreError.argument("Entry \(i) is not a JSON object; soup entries must be objects")
        }
        let externalPath = (externalIdPath == nil || externalIdPath == SoupPath.entryId) ? nil : externalIdPath
        let companions = attached
        return try write { db in
            let info = try self.requireSoup(name)
            for companion in companions { try companion.hostWillUpsert(list, soup: info, inside: db) }
            return try self.withEntryWriter(db, soup: info, externalIdPath: externalPath) { writer in
                writer.hostWrite = companions
                var out: TextBuffer? = TextBuffer(capacity: 64 + list.count * 256)
                out?.append(UInt8(ascii: "["))
                let now = Clock.nowMillis()
                for (i, entry) in list.enumerated() {
                    if i > 0 { out?.append(UInt8(ascii: ",")) }
                    _ = try writer.upsert(entry, index: i, now: now, into: &out)
                }
                out?.append(UInt8(ascii: "]"))
                return out ?? TextBuffer()
            }
        }
    }

    public func retrieve(soup name: String, idsJSON: String) throws -> TextBuffer {
        try retrieve(soup: name, ids: try parseIds(idsJSON))
    }

    public func retrieve(soup name: String, ids: [Int64]) throws -> TextBuffer {
        try reading(name) { info in try readers.withReader { db in
            let statement = try db.cached("SELECT soup FROM \(info.table) WHERE id = ?")
            defer { statement.reset() }
            var out = TextBuffer()
            out.append(UInt8(ascii: "["))
            var first = true
            for id in ids {
                statement.reset()
                try statement.bind([.int(id)])
                guard try statement.step() else { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(statement.textBytes(0))
            }
            out.append(UInt8(ascii: "]"))
            return out
        } }
    }

    /// Runs a read of soup `name`. A read that fails because the soup was removed (or removed
    /// and registered again) meanwhile says "not found" rather than "no such table".
    /// A read of soup `name` that fails because the soup was altered meanwhile (a column it
    /// planned with is gone) is planned again with the new indexes once the alter is published;
    /// one that fails because the soup was removed says "not found".
    private func reading<T>(_ name: String, _ body: (SoupInfo) throws -> T) throws -> T {
        try retryingOnCatalogChange {
            let info = try requireSoup(name)
            do {
                return try body(info)
            } catch {
                // A soup removed or re-created meanwhile (here or by another process): gone is
                // NOT_FOUND; re-created is retried against its new table.
                adoptCatalogFromFile()
                if soup(name) == nil { throw StoreError.soupNotFound(name) }
                throw error
            }
        }
    }

    /// After a failed read: when the catalog in the file differs from the cached one (another
    /// process changed soups), the file's wins and the catalog version moves, so the read is
    /// planned again.
    private func adoptCatalogFromFile() {
        let (before, checked) = catalogLock.withLock { (catalogVersion, checkedSchemaVersion) }
        // Every soup change, in any process, changes the schema: an unchanged schema version
        // means there is nothing to read.
        guard let (schema, fromFile) = try? readers.withReader({ db -> (Int64, [String: SoupInfo]?) in
            let schema = try db.scalarInt("PRAGMA schema_version") ?? -1
            return (schema, schema == checked ? nil : try SoupCatalog.loadAll(db))
        }), let fromFile else { return }
        catalogLock.withLock {
            // This process's own catalog changes are published by its writes; a file read that
            // may predate one of them, or overlap one, is not adopted.
            guard !alterInFlight, !writeInFlight, catalogVersion == before else { return }
            let same = fromFile.count == soups.count && fromFile.allSatisfy { name, info in
                soups[name].map { $0.table == info.table && $0.indexes.map(\.columnName) == info.indexes.map(\.columnName) } ?? false
            }
            if !same {
                soups = fromFile
                catalogVersion += 1
            }
            checkedSchemaVersion = schema
        }
    }

    /// Runs a read planned from the catalog again when it failed while the catalog changed.
    private func retryingOnCatalogChange<T>(_ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            let version = catalogLock.withLock { catalogVersion }
            do {
                return try body()
            } catch let error as StoreError where error.code != .notFound {
                let (nowVersion, altering) = catalogLock.withLock { (catalogVersion, alterInFlight) }
                guard nowVersion != version || altering, attempt < 50 else { throw error }
                attempt += 1
                if altering { usleep(1000) }
            }
        }
    }

    public func removeEntries(soup name: String, idsJSON: String) throws {
        try removeEntries(soup: name, ids: try parseIds(idsJSON))
    }

    public func removeEntries(soup name: String, ids: [Int64]) throws {
        try write { db in try self.deleteRows(db, try self.requireSoup(name), ids: ids) }
    }

    package func deleteRows(_ db: Connection, _ info: SoupInfo, ids: [Int64]) throws {
        let delete = try db.cached("DELETE FROM \(info.table) WHERE id = ?")
        let deleteText = info.fullTextIndexes.isEmpty ? nil : try db.cached("DELETE FROM \(info.ftsTable) WHERE rowid = ?")
        for id in ids {
            delete.reset()
            try delete.bind([.int(id)])
            try delete.run()
            if let deleteText {
                deleteText.reset()
                try deleteText.bind([.int(id)])
                try deleteText.run()
            }
        }
    }

    /// Deletes every entry the spec selects (not just one page, unlike the SDK).
    @discardableResult
    public func removeByQuery(soup name: String, specJSON: String) throws -> Int {
        let doc = try JSONDocument.parse(specJSON, what: "query spec")
        return try removeByQuery(soup: name, spec: try QuerySpec.parse(doc.root))
    }

    public func removeByQuery(soup name: String, spec: QuerySpec) throws -> Int {
        try write { db in
            let info = try self.requireSoup(name)
            let (condition, bindings) = try SoupQueryBuilder.whereClause(spec, soup: info)
            let whereSQL = condition.isEmpty ? "" : " WHERE \(condition)"
            // Collect ids first: the condition may read the FTS table this removal also edits.
            let select = try db.prepare("SELECT id FROM \(info.table)\(whereSQL)")
            try select.bind(bindings)
            var ids: [Int64] = []
            while try select.step() { ids.append(select.int64(0)) }
            try self.deleteRows(db, info, ids: ids)
            return ids.count
        }
    }

    private func parseIds(_ json: String) throws -> [Int64] {
        let doc = try JSONDocument.parse(json, what: "id list")
        let items: [JSON] = doc.root.isArray ? doc.root.elements : [doc.root]
        return try items.map {
            guard let id = $0.int64 else { throw StoreError.argument("Soup entry ids must be integers") }
            return id
        }
    }

    // MARK: queries

    public func querySoup(_ name: String, specJSON: String, owner: Int = 0) throws -> TextBuffer {
        let doc = try JSONDocument.parse(specJSON, what: "query spec")
        return try querySoup(name, spec: try QuerySpec.parse(doc.root), owner: owner)
    }

    public func querySoup(_ name: String, spec: QuerySpec, owner: Int = 0) throws -> TextBuffer {
        guard spec.queryType != .smart else {
            throw StoreError.argument("querySoup does not take smart query specs; use runSmartQuery")
        }
        let version = catalogLock.withLock { catalogVersion }
        return try reading(name) { info in
            try openCursor(try SoupQueryBuilder.plan(spec, soup: info), source: .soup(name: name, spec: spec),
                           catalogVersion: version, pageSize: spec.pageSize, owner: owner)
        }
    }

    public func runSmartQuery(specJSON: String, owner: Int = 0) throws -> TextBuffer {
        let doc = try JSONDocument.parse(specJSON, what: "query spec")
        let spec = try QuerySpec.parse(doc.root)
        guard spec.queryType == .smart, let sql = spec.smartSql else {
            throw StoreError.argument("runSmartQuery takes only smart query specs ({\"queryType\": \"smart\", \"smartSql\": ...})")
        }
        return try retryingOnCatalogChange {
            let version = catalogLock.withLock { catalogVersion }
            return try openCursor(try smartPlan(sql, timeLimitMs: spec.timeoutMs), source: .smart(sql: sql, timeLimitMs: spec.timeoutMs),
                                  catalogVersion: version, pageSize: spec.pageSize, owner: owner)
        }
    }

    /// One page of a query spec's results (any query type; `soup` is ignored for smart specs)
    /// as a JSON array, with no cursor and no count: a lookup costs one statement.
    public func queryPage(soup name: String?, specJSON: String, page: Int64) throws -> TextBuffer {
        guard page >= 0 else { throw StoreError.argument("page_index must be 0 or more (got \(page))") }
        let doc = try JSONDocument.parse(specJSON, what: "query spec")
        let spec = try QuerySpec.parse(doc.root)
        // A page past any possible row (its offset would not fit in 64 bits) is empty.
        guard !page.multipliedReportingOverflow(by: Int64(spec.pageSize)).overflow else {
            var empty = TextBuffer(capacity: 2)
            empty.append("[]")
            return empty
        }
        if spec.queryType == .smart {
            guard let sql = spec.smartSql else { throw StoreError.argument("A smart query spec needs \"smartSql\"") }
            return try retryingOnCatalogChange {
                let plan = try smartPlan(sql, timeLimitMs: spec.timeoutMs)
                return try readers.withReader { db in try readPage(plan, pageSize: spec.pageSize, page: page, on: db) }
            }
        }
        guard let name else { throw StoreError.argument("A non-smart query spec needs the soup name") }
        return try reading(name) { info in
            let plan = try SoupQueryBuilder.plan(spec, soup: info)
            return try readers.withReader { db in try readPage(plan, pageSize: spec.pageSize, page: page, on: db) }
        }
    }

    /// Translates and vets Smart SQL: one read-only SELECT, nothing else.
    package func smartPlan(_ smartSql: String, timeLimitMs: Int64) throws -> QueryPlan {
        let translated = try SmartSqlTranslator(lookup: { self.soup($0) }).translate(smartSql)
        let body = try readers.withReader { db in try SmartSqlGuard.vet(translated, on: db) }
        return QueryPlan(pageSQL: "SELECT * FROM (\n\(body)\n) LIMIT ? OFFSET ?",
                         countSQL: "SELECT count(*) FROM (\n\(body)\n)",
                         bindings: [], rows: .values, isSmart: true, timeLimitMs: timeLimitMs)
    }

    private func openCursor(_ plan: QueryPlan, source: CursorSource, catalogVersion: Int, pageSize: Int, owner: Int) throws -> TextBuffer {
        let (total, page) = try readers.withReader { db -> (Int64, TextBuffer) in
            let count = try statement(plan.countSQL, smart: plan.isSmart, on: db)
            defer { count.reset() }
            try count.bind(plan.bindings)
            let total = try plan.limited(on: db) { try count.step() ? count.int64(0) : 0 }
            return (total, try readPage(plan, pageSize: pageSize, page: 0, on: db))
        }
        let cursor = cursors.open(plan: plan, source: source, catalogVersion: catalogVersion, pageSize: pageSize,
                                  totalEntries: total, owner: owner)
        return cursor.json(page: 0, entries: page)
    }

    /// A cursor's page, read with its plan; a cursor planned before the soups' indexes changed
    /// (an alterSoup dropped a column its plan uses) is planned again first, as a new query
    /// would be. totalEntries stays the count taken at open.
    public func moveCursor(_ id: Int64, toPage page: Int64) throws -> TextBuffer {
        guard let opened = cursors.get(id) else {
            throw StoreError.notFound("Cursor \(id) is not open (closed, or never opened on this store)")
        }
        let index = opened.clamp(page)
        return try retryingOnCatalogChange {
            let plan = try currentPlan(id)
            do {
                let entries = try readers.withReader { db in
                    try readPage(plan, pageSize: opened.pageSize, page: index, on: db)
                }
                return opened.json(page: index, entries: entries)
            } catch {
                // Another process may have altered or removed the soup: a catalog read from the
                // file moves the version, and the read is planned again.
                adoptCatalogFromFile()
                throw error
            }
        }
    }

    /// The cursor's plan for the catalog as it is now (planned again when it changed).
    private func currentPlan(_ id: Int64) throws -> QueryPlan {
        guard let cursor = cursors.get(id) else {
            throw StoreError.notFound("Cursor \(id) is not open (closed, or never opened on this store)")
        }
        let version = catalogLock.withLock { catalogVersion }
        guard version != cursor.catalogVersion else { return cursor.plan }
        let plan: QueryPlan
        switch cursor.source {
        case .soup(let name, let spec):
            // A soup removed (or removed and registered again: another table) is not the one
            // the cursor counted.
            guard let info = soup(name), info.table == cursor.plan.soupTable else {
                throw StoreError.notFound("The soup cursor \(id) was reading has been removed; close the cursor and query again")
            }
            plan = try SoupQueryBuilder.plan(spec, soup: info)
        case .smart(let sql, let timeLimitMs):
            plan = try smartPlan(sql, timeLimitMs: timeLimitMs)
        }
        cursors.replan(id, plan, catalogVersion: version)
        return plan
    }

    public func closeCursor(_ id: Int64) { cursors.close(id) }
    public func closeCursors(owner: Int) { cursors.closeAll(owner: owner) }

    private func statement(_ sql: String, smart: Bool, on db: Connection) throws -> Statement {
        smart ? try SmartSqlGuard.prepare(sql, on: db) : try db.cached(sql)
    }

    private func readPage(_ plan: QueryPlan, pageSize: Int, page: Int64, on db: Connection) throws -> TextBuffer {
        let statement = try statement(plan.pageSQL, smart: plan.isSmart, on: db)
        defer { statement.reset() }
        try statement.bind(plan.bindings)
        let next = Int32(plan.bindings.count + 1)
        try statement.bind(.int(Int64(pageSize)), at: next)
        try statement.bind(.int(page * Int64(pageSize)), at: next + 1)
        var out = TextBuffer(capacity: 256 * min(pageSize, 1000))
        try plan.limited(on: db) { try ResultWriter.writeRows(statement, rows: plan.rows, into: &out) }
        return out
    }

    // MARK: store facts

    /// Bytes used by the database: pages in use (including those still in the WAL).
    /// Read on a reader connection (the last committed state), so it never waits for a write.
    public func databaseSize() throws -> Int64 {
        try readers.withReader { db in
            let pages = try db.scalarInt("PRAGMA page_count") ?? 0
            let size = try db.scalarInt("PRAGMA page_size") ?? 0
            return pages * size
        }
    }
}

extension SmartStore {
    public func indexSpecsJSON(_ name: String) throws -> String { IndexSpec.listJSON(try indexSpecs(name)) }

    /// Reads a userstore.json / globalstore.json file and registers its soups.
    public func loadStoreConfig(path: String) throws {
        try loadStoreConfig(json: try FileSystem.readFile(path))
    }
}
