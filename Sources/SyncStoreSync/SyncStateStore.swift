import SyncStoreSupport
import SyncStoreCore

/// Reads and writes sync states in the store's `syncs_soup` (indexed on type, name, status, as
/// in the SDK). Saves can join the caller's transaction so a page and its state commit together.
package final class SyncStateStore: @unchecked Sendable {
    package static let soupName = "syncs_soup"
    package let store: SmartStore
    /// Terminal states that could not be saved (a full disk), by sync id. Reads return them, so
    /// a host that polls learns the run ended; the sync's next save replaces them, and the
    /// engine's close tries to save them again. A crash before that leaves the saved
    /// state RUNNING, which the next open makes STOPPED.
    private let unsavedLock = Lock()
    private var unsaved: [Int64: SyncState] = [:]

    package init(store: SmartStore) throws {
        self.store = store
        try store.registerSoup(SyncStateStore.soupName, specs: [
            IndexSpec(path: "type", type: .string), IndexSpec(path: "name", type: .string),
            IndexSpec(path: "status", type: .string),
        ])
    }

    /// Creates a state (`requested`: RUNNING, for a run started at once); a name already used
    /// is EXISTS.
    package func create(_ state: SyncState, requested: Bool = false) throws -> SyncState {
        try store.write { db in
            if let name = state.name, try self.find(name: name, db: db) != nil {
                throw StoreError(.exists, "A sync named '\(name)' already exists; pick another name or reSync it")
            }
            var created = state
            if requested { created.beginRun() }
            created.id = try self.save(created, db: db, creating: true)
            return created
        }
    }

    /// Saves new syncs in one transaction; a sync whose name is taken (in the store, or earlier
    /// in `states`) is skipped.
    package func createAll(_ states: [SyncState]) throws {
        try store.write { db in
            for state in states {
                if let name = state.name, try self.find(name: name, db: db) != nil { continue }
                try self.save(state, db: db, creating: true)
            }
        }
    }

    /// Saves inside the caller's write transaction.
    @discardableResult
    package func save(_ state: SyncState, db: Connection, creating: Bool = false) throws -> Int64 {
        let doc = state.json()
        if creating { doc.root.remove("_soupEntryId") }
        let info = try store.requireSoup(SyncStateStore.soupName)
        return try store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
            var sink: TextBuffer? = nil
            _ = try writer.upsert(doc.root, index: 0, now: Clock.nowMillis(), into: &sink)
            return doc.root["_soupEntryId"]?.int64 ?? 0
        }
    }

    /// Saves `state`; `beforeCommit` runs last inside the transaction.
    package func save(_ state: SyncState, beforeCommit: () -> Void = {}) throws {
        try store.write { db in
            _ = try self.save(state, db: db)
            beforeCommit()
        }
        unsavedLock.withLock { unsaved[state.id] = nil }
    }

    /// Keeps a terminal state whose save failed (see `unsaved`).
    package func keepUnsaved(_ state: SyncState) {
        unsavedLock.withLock { unsaved[state.id] = state }
    }

    /// Tries again to save the states kept by `keepUnsaved` (when no run can start: the engine
    /// closes); those that still fail stay kept.
    package func saveUnsaved() {
        for state in unsavedLock.withLock({ Array(unsaved.values) }) { try? save(state) }
    }

    /// A run of sync `id` was requested: it is RUNNING (from progress 0) until the run ends.
    @discardableResult
    package func markRequested(_ id: Int64) throws -> SyncState {
        guard var state = try get(id: id) else { throw StoreError.notFound("No sync with id \(id)") }
        state.beginRun()
        try save(state)
        return state
    }

    private func overlaid(_ state: SyncState?) -> SyncState? {
        guard let state else { return nil }
        return unsavedLock.withLock { unsaved[state.id] } ?? state
    }

    package func get(id: Int64) throws -> SyncState? {
        let text = try store.retrieve(soup: SyncStateStore.soupName, ids: [id])
        let doc = try JSONDocument.parse(text.string, what: "sync state")
        guard let entry = doc.root[0] else { return nil }
        return overlaid(try SyncState.from(entry))
    }

    package func get(name: String) throws -> SyncState? {
        overlaid(try store.readers.withReader { db in try self.find(name: name, db: db) })
    }

    private func find(name: String, db: Connection) throws -> SyncState? {
        let info = try store.requireSoup(SyncStateStore.soupName)
        let statement = try db.prepare("SELECT soup FROM \(info.table) WHERE \(info.expression(for: "name")) = ? LIMIT 1")
        try statement.bind([.text(name)])
        guard try statement.step() else { return nil }
        let bytes = statement.textBytes(0)
        guard let base = bytes.baseAddress else { return nil }
        let doc = try JSONDocument.parse(bytes: base, length: bytes.count, what: "sync state")
        return try SyncState.from(doc.root)
    }

    package func all() throws -> [SyncState] { try SyncStateStore.all(in: store).compactMap(overlaid) }

    /// Every state of `store`, by id; a read only, so it needs no sync engine.
    package static func all(in store: SmartStore) throws -> [SyncState] {
        guard store.soupExists(soupName) else { return [] }
        let info = try store.requireSoup(soupName)
        return try store.readers.withReader { db in
            let statement = try db.prepare("SELECT soup FROM \(info.table) ORDER BY id")
            var states: [SyncState] = []
            while try statement.step() {
                let bytes = statement.textBytes(0)
                guard let base = bytes.baseAddress else { continue }
                let doc = try JSONDocument.parse(bytes: base, length: bytes.count, what: "sync state")
                states.append(try SyncState.from(doc.root))
            }
            return states
        }
    }

    package func delete(id: Int64) throws {
        try store.removeEntries(soup: SyncStateStore.soupName, ids: [id])
        unsavedLock.withLock { unsaved[id] = nil }
    }

    /// On open: states a crash left RUNNING become STOPPED at once (not only when the sync
    /// manager first starts), unless another process holds the sync lock (its runs are live).
    package static func stopOrphansIfUnowned(_ store: SmartStore) throws {
        guard store.soupExists(soupName) else { return }
        let lock = try SyncEngineLock(databasePath: store.path)
        defer { lock.release() }
        try SyncStateStore(store: store).stopOrphans()
    }

    /// Syncs a crash left RUNNING (running or queued) become STOPPED (docs/sync.md#runs), which
    /// restart_syncs runs again.
    package func stopOrphans() throws {
        for var state in try all() where state.status == .running {
            state.status = .stopped
            state.endTime = Clock.nowMillis()
            state.error = "The run did not finish: the process ended while it was queued or running, or its end could not be saved (disk full); restart the syncs or run it again"
            try save(state)
        }
    }
}

extension SmartStore {
    /// Every sync of the store, by id. A read: it works while another process runs the syncs.
    package func syncStates() throws -> [SyncState] { try SyncStateStore.all(in: self) }
}
