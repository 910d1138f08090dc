import CJansson
import SyncStoreSupport
import SyncStoreCore

/// Status updates: the whole state as JSON text, valid during the call.
package typealias SyncCallback = @Sendable (String) -> Void

/// MobileSync for one store (docs/sync.md): creates and runs syncs on one serial worker
/// thread, persists their state in the store, reports every change through the run's callback
/// (never while a store lock is held) and ends every run with exactly one terminal callback.
package final class SyncManager: @unchecked Sendable {
    package let store: SmartStore
    package let states: SyncStateStore
    package let customTargets = CustomTargetRegistry()
    private let worker = SerialWorker()
    private let tracker = RunTracker()
    private let lock = Lock()
    private var rest: RestClient?
    /// After stop(), new runs are refused until restart() (as in the SDK).
    private var paused = false
    private var closed = false
    /// True while the store's key changes: no run may start.
    private var rekeying = false
    private let engineLock: SyncEngineLock
    /// Made on first use (`live`).
    private var liveSync: LiveSync?

    package init(store: SmartStore) throws {
        self.store = store
        // Before RUNNING states are taken for a crash's leftovers: they may be another process's.
        engineLock = try SyncEngineLock(databasePath: store.path)
        states = try SyncStateStore(store: store)
        try states.stopOrphans()
    }

    // MARK: configuration

    /// This engine's name in the change events of its own writes (`Sforce-Call-Options`).
    package let streamClientName = "syncstore-" + String(UInt64.random(in: 1...UInt64.max), radix: 16)

    package func setRemote(_ config: RemoteConfig) {
        var config = config
        config.callOptionsClient = streamClientName
        lock.withLock { rest = RestClient(config: config) }
    }

    package func registerCustomTarget(_ type: String, _ callbacks: CustomTargetCallbacks) throws {
        try customTargets.register(type, callbacks)
    }

    // MARK: creating

    /// `requested`: the sync is created RUNNING, for a run started at once (see `start`).
    package func createSyncDown(targetJSON: String, soupName: String, optionsJSON: String?, name: String?, requested: Bool = false) throws -> SyncState {
        try states.create(try syncDownState(targetJSON: targetJSON, soupName: soupName, optionsJSON: optionsJSON, name: name),
                          requested: requested)
    }

    package func createSyncUp(targetJSON: String?, soupName: String, optionsJSON: String?, name: String?, requested: Bool = false) throws -> SyncState {
        try states.create(try syncUpState(targetJSON: targetJSON, soupName: soupName, optionsJSON: optionsJSON, name: name),
                          requested: requested)
    }

    /// A new sync down, checked, not saved yet (`target`: the target JSON, parsed once, here).
    private func syncDownState(target: () throws -> JSONDocument, soupName: String, optionsJSON: String?, name: String?) throws -> SyncState {
        let (_, options) = try SyncOptions.parse(optionsJSON)
        let parsed = try SyncTarget.down(try target(), soupName: soupName)
        guard case .success(.down(let kind)) = parsed.parsed else { throw StoreError(.internal, "A sync down target parsed as another kind") }
        if case .twoPhase(let twoPhase) = kind {
            try twoPhase.check(store)
        } else if let pages = try SyncDownTargets.target(kind, customTargets: customTargets) {
            let info = try store.requireSoup(soupName)
            if info.index(for: pages.idFieldName) == nil {
                throw StoreError.argument("Soup '\(soupName)' needs an index on '\(pages.idFieldName)' to receive synced records; register it with that index")
            }
        }
        return SyncState(kind: .syncDown, name: try checkedName(name), target: parsed, optionsJSON: options, soupName: soupName)
    }

    /// A new sync up, checked, not saved yet (`target`: the target JSON, parsed once, here; nil: none).
    private func syncUpState(target: () throws -> JSONDocument?, soupName: String, optionsJSON: String?, name: String?) throws -> SyncState {
        let (_, options) = try SyncOptions.parse(optionsJSON)
        let parsed = try SyncTarget.up(try target(), soupName: soupName)
        guard case .success(.up(let kind)) = parsed.parsed else { throw StoreError(.internal, "A sync up target parsed as another kind") }
        switch kind {
        case .twoPhase(let twoPhase):
            try twoPhase.check(store)
        case .parentChildren(let parentChildren):
            // Checked now, as every other target is: a malformed one would fail only when run.
            _ = try store.requireSoup(parentChildren.parentSoup)
            _ = try store.requireSoup(parentChildren.childSoup)
        case .custom(let custom):
            _ = try SyncUpTargets.bind(custom, customTargets: customTargets)
        case .salesforce, .datasync:
            break
        }
        _ = try store.requireSoup(soupName)
        return SyncState(kind: .syncUp, name: try checkedName(name), target: parsed, optionsJSON: options, soupName: soupName)
    }

    private func syncDownState(targetJSON: String, soupName: String, optionsJSON: String?, name: String?) throws -> SyncState {
        try syncDownState(target: { try JSONDocument.parse(targetJSON, what: "sync down target") }, soupName: soupName, optionsJSON: optionsJSON, name: name)
    }

    private func syncUpState(targetJSON: String?, soupName: String, optionsJSON: String?, name: String?) throws -> SyncState {
        try syncUpState(target: { try JSONDocument.parseOptional(targetJSON, what: "sync up target") }, soupName: soupName, optionsJSON: optionsJSON, name: name)
    }

    private func checkedName(_ name: String?) throws -> String? {
        guard let name else { return nil }
        guard !name.isEmpty else { throw StoreError.argument("A sync name must not be empty (pass none for an unnamed sync)") }
        return name
    }

    // MARK: running

    @discardableResult
    package func syncDown(targetJSON: String, soupName: String, optionsJSON: String?, name: String?, owner: Int = 0, callback: SyncCallback?) throws -> Int64 {
        try requestSyncDown(targetJSON: targetJSON, soupName: soupName, optionsJSON: optionsJSON, name: name, owner: owner, callback: callback).id
    }

    /// The `request…` forms start a run as their namesakes do and answer the sync's state as it
    /// was saved when the run was requested (RUNNING, progress 0), whatever the run has done
    /// since: what the hybrid plugins answer, the same however fast the run ends.
    package func requestSyncDown(targetJSON: String, soupName: String, optionsJSON: String?, name: String?, owner: Int = 0, callback: SyncCallback?) throws -> SyncState {
        try checkOpen()
        let state = try createSyncDown(targetJSON: targetJSON, soupName: soupName, optionsJSON: optionsJSON, name: name, requested: true)
        try start(state.id, owner: owner, callback: callback, created: state)
        return state
    }

    @discardableResult
    package func syncUp(targetJSON: String?, soupName: String, optionsJSON: String?, name: String?, owner: Int = 0, callback: SyncCallback?) throws -> Int64 {
        try requestSyncUp(targetJSON: targetJSON, soupName: soupName, optionsJSON: optionsJSON, name: name, owner: owner, callback: callback).id
    }

    package func requestSyncUp(targetJSON: String?, soupName: String, optionsJSON: String?, name: String?, owner: Int = 0, callback: SyncCallback?) throws -> SyncState {
        try checkOpen()
        let state = try createSyncUp(targetJSON: targetJSON, soupName: soupName, optionsJSON: optionsJSON, name: name, requested: true)
        try start(state.id, owner: owner, callback: callback, created: state)
        return state
    }

    /// Runs an existing sync again (incrementally for sync down targets with a timestamp).
    package func reSync(id: Int64, owner: Int = 0, callback: SyncCallback?) throws {
        try requestReSync(id: id, owner: owner, callback: callback)
    }

    @discardableResult
    package func reSync(name: String, owner: Int = 0, callback: SyncCallback?) throws -> Int64 {
        try requestReSync(name: name, owner: owner, callback: callback).id
    }

    @discardableResult
    package func requestReSync(id: Int64, owner: Int = 0, callback: SyncCallback?) throws -> SyncState {
        guard try states.get(id: id) != nil else { throw StoreError.notFound("No sync with id \(id)") }
        return try requested(start(id, owner: owner, callback: callback), id)
    }

    package func requestReSync(name: String, owner: Int = 0, callback: SyncCallback?) throws -> SyncState {
        guard let state = try states.get(name: name) else { throw StoreError.notFound("No sync named '\(name)'") }
        return try requested(start(state.id, owner: owner, callback: callback), state.id)
    }

    /// A run that `start` queued always has its requested state (start saves it).
    private func requested(_ state: SyncState?, _ id: Int64) throws -> SyncState {
        guard let state else { throw StoreError(.internal, "Sync \(id) was queued without its requested state") }
        return state
    }

    private func checkOpen() throws { try lock.withLock { try checkOpenLocked() } }

    private func checkOpenLocked() throws {
        if closed { throw StoreError(.state, "The store is closed") }
        if paused { throw StoreError(.state, "Syncs are stopped; call restart before starting new ones") }
        if rekeying { throw StoreError(.busy, "The store's key is being changed; start the sync again when that returns", retryable: true) }
    }

    /// Runs `body` (a change of key) with no sync run queued or running, and none starting.
    package func withoutRuns<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock {
            if tracker.hasActive {
                throw StoreError(.busy, "A sync of this store is running or queued: wait for it to end (syncstore_wait_sync) or stop it, then change the key", retryable: true)
            }
            rekeying = true
        }
        defer { lock.withLock { rekeying = false } }
        return try body()
    }

    private func restClient() -> RestClient? { lock.withLock { rest } }

    /// A client for the Streaming API on the store's remote (whichever is set when it sends);
    /// nil when none is set.
    package func streamingClient() -> BayeuxClient? {
        guard restClient() != nil else { return nil }
        return BayeuxClient { [weak self] in self?.restClient() }
    }

    /// Applies change events to SOQL sync down `id` as one run of it (docs/sync.md#change-events):
    /// the records `fetch` names are fetched by id and merged, those `remove` names removed, with
    /// the sync's merge mode; its state and callbacks move as a sync down's run's, its
    /// maxTimeStamp too but never past `seenThrough` (ChangedRecordsTarget). BUSY when the sync
    /// has a run already.
    package func applyChanges(id: Int64, fetch: [String], remove: [String], seenThrough: Int64?, owner: Int,
                              callback: SyncCallback?) throws {
        let maker: TaskMaker = { [states] state, ctx, options, emit in
            guard case .down(.builtIn(let target as SoqlTarget))? = try? state.target.parsed.get() else {
                throw StoreError.argument("Change events apply to SOQL sync downs only")
            }
            let changed = ChangedRecordsTarget(base: target, fetch: fetch, remove: remove, seenThrough: seenThrough)
            return SyncDownTask(ctx: ctx, target: changed, options: options, states: states, emit: emit)
        }
        try enqueue(id, owner: owner, saveRequested: true) { [self] cancel in
            run(id, cancel: cancel, callback: callback, task: maker)
        }
    }

    /// Starts a run; with `unlessActive`, a sync that already has one is skipped (false)
    /// instead of BUSY. RUNNING is saved before the run is queued (`created`: the sync was
    /// created RUNNING): if the process ends before the run does, the next open makes it
    /// STOPPED and restart_syncs runs it again.
    @discardableResult
    private func start(_ id: Int64, owner: Int, callback: SyncCallback?, unlessActive: Bool = false,
                       created: SyncState? = nil) throws -> SyncState? {
        var requested: SyncState? = nil
        let queued = try enqueue(id, owner: owner, unlessActive: unlessActive, saveRequested: true, created: created,
                                 onRequested: { requested = $0 }) { [self] cancel in
            run(id, cancel: cancel, callback: callback)
        }
        return queued ? requested : nil
    }

    /// Registers a run of sync `id`, saves it requested (`saveRequested`, unless `created` was
    /// saved so), and queues `job` on the worker. The
    /// checks and the registration are one critical section (a change of key sees every run,
    /// stop() cancels every run that passed its check, close(owner:) every run of its handle),
    /// and so is the queueing (close() runs what was queued before the worker finished and
    /// refuses the rest); the save happens between them, outside the lock, as it writes.
    @discardableResult
    private func enqueue(_ id: Int64, owner: Int, unlessActive: Bool = false, saveRequested: Bool = false, created: SyncState? = nil,
                         onRequested: ((SyncState) -> Void)? = nil,
                         _ job: @escaping @Sendable (CancelFlag) -> Void) throws -> Bool {
        let cancel: CancelFlag
        do {
            guard let registered = try lock.withLock({ () throws -> CancelFlag? in
                try checkOpenLocked()
                guard store.isOwnerOpen(owner) else { throw StoreError(.state, "The store handle is closed; open the store again") }
                // Runs only begin under this lock: not active now means begin cannot say BUSY.
                if unlessActive && tracker.isActive(id) { return nil }
                return try tracker.begin(id, owner: owner)
            }) else { return false }
            cancel = registered
        } catch {
            // Stopped or closed meanwhile: the new sync stays, as created without a run.
            if var state = created {
                state.status = .new
                state.startTime = 0
                try? states.save(state)
            }
            throw error
        }
        if saveRequested && created == nil {
            do {
                onRequested?(try states.markRequested(id))
            } catch {
                tracker.finish(id, cancel)
                throw error
            }
        } else if let created {
            onRequested?(created)
        }
        try lock.withLock {
            let queued = worker.submit { [tracker] in
                defer { tracker.finish(id, cancel) }
                job(cancel)
            }
            guard queued else {
                tracker.finish(id, cancel)
                // Requested and saved RUNNING: the next open makes it STOPPED, restart_syncs runs it.
                if closed { throw StoreError(.state, "The store was closed before the run could start; open it again and restart the syncs") }
                throw StoreError(.busy, "The sync worker thread could not be started (the system refused a new thread); retry later", retryable: true)
            }
        }
        return true
    }

    /// A task in place of the sync's own (change events applied to it).
    private typealias TaskMaker = @Sendable (SyncState, SyncContext, SyncOptions, @escaping (SyncState) -> Void) throws -> any SyncRun

    private func run(_ id: Int64, cancel: CancelFlag, callback: SyncCallback?, task: TaskMaker? = nil) {
        let loaded = (try? states.get(id: id)) ?? nil
        // The run's writes are told to listeners as this sync's.
        WriteOrigin.with(.engine(run: id, name: loaded?.name)) { runTask(id, loaded, cancel: cancel, callback: callback, task: task) }
    }

    private func runTask(_ id: Int64, _ loaded: SyncState?, cancel: CancelFlag, callback: SyncCallback?, task: TaskMaker?) {
        let emit: (SyncState) -> Void = { state in callback?(state.jsonText) }
        guard var state = loaded else {
            tracker.deliverTerminal(id, cancel) {
                callback?("{\"_soupEntryId\":\(id),\"status\":\"FAILED\",\"error\":\"The sync was deleted before it ran\",\"errorCode\":\(ErrorCode.notFound.rawValue)}")
            }
            return
        }
        state.beginRun()
        do {
            if cancel.isCancelled { throw StoreError(.state, "The sync was stopped before it started") }
            try states.save(state)
            emit(state)
            let ctx = try context(for: state, cancel: cancel)
            let (options, _) = try SyncOptions.parse(state.optionsJSON)
            // A sync up marks the creates it sends, in any soup of its target.
            if state.kind == .syncUp { try ctx.store.write { db in try CreateMarkLedger.forget(db) } }
            let run = try task?(state, ctx, options, emit)
                ?? SyncTasks.make(state.target, ctx: ctx, options: options, states: states, customTargets: customTargets, emit: emit)
            try run.run(&state)
            state.status = .done
            state.progress = 100
            state.reportRecordProblems()
        } catch let error as StoreError {
            state.status = (error.code == .state && cancel.isCancelled) ? .stopped : .failed
            state.error = MessageLimit.bound(error.message)
            state.errorCode = error.code.rawValue
            state.errorRetryable = error.retryable
        } catch {
            state.status = .failed
            state.error = MessageLimit.bound("\(error)")
            state.errorCode = ErrorCode.internal.rawValue
        }
        state.endTime = Clock.nowMillis()
        do {
            // Released inside the save's transaction: once DONE is visible, a reSync is not BUSY.
            try states.save(state, beforeCommit: { tracker.release(id, cancel) })
        } catch {
            // The terminal state could not be stored (a full disk): the run is reported as
            // failed, and reads of the sync return this state until it is saved.
            let failure = error as? StoreError ?? StoreError(.storage, "\(error)")
            if state.status == .done {
                state.status = .failed
                state.errorCode = failure.code.rawValue
                state.errorRetryable = failure.retryable
            }
            let saving = state.error.hasPrefix(failure.message) ? "the sync state could not be saved either" : "saving the sync state failed: \(failure.message)"
            state.error = MessageLimit.bound(state.error + (state.error.isEmpty ? "" : "; ") + saving)
            // A run started after the release owns the state now.
            tracker.unlessRestarted(id, cancel) { states.keepUnsaved(state) }
        }
        tracker.deliverTerminal(id, cancel) { emit(state) }
    }

    private func context(for state: SyncState, cancel: CancelFlag) throws -> SyncContext {
        let configured = restClient()
        if configured == nil, !usesCustomTarget(state) {
            throw StoreError(.state, "No remote is configured for this store; set one (instance URL and token) before syncing")
        }
        // Custom targets need no remote; they get a client that is never used.
        let rest = configured ?? RestClient(config: RemoteConfig(instanceURL: "http://127.0.0.1:9", accessToken: ""))
        return SyncContext(rest: rest, cancel: cancel, store: store, soupName: state.soupName, syncId: state.id)
    }

    private func usesCustomTarget(_ state: SyncState) -> Bool {
        guard let type = state.target.type else { return false }
        return customTargets.callbacks(type) != nil
    }

    // MARK: ghosts

    /// Deletes local records of this sync down that the server no longer has (docs/sync.md#sync-down).
    /// The callback gets `{"syncId", "type":"cleanResyncGhosts", "status", "removed", "error", "errorCode",
    /// "errorRetryable"}`.
    package func cleanResyncGhosts(id: Int64, owner: Int = 0, callback: SyncCallback?) throws {
        try checkOpen()
        guard let state = try states.get(id: id) else { throw StoreError.notFound("No sync with id \(id)") }
        guard state.kind == .syncDown else { throw StoreError.argument("cleanResyncGhosts applies to sync down syncs only") }
        guard !state.target.isTwoPhase else {
            throw StoreError.argument("A twophase sync down deletes the rows the server no longer has at every run; cleanResyncGhosts does not apply to it")
        }
        try enqueue(id, owner: owner) { [self] cancel in
            var removed = 0
            var status = "DONE"
            var message = ""
            var code: Int32 = 0
            var retryable = false
            callback?(ghostReport(id, "RUNNING", 0, "", 0, false))
            do {
                if cancel.isCancelled { throw StoreError(.state, "Stopped before it started") }
                removed = try WriteOrigin.with(.engine(run: id, name: state.name)) {
                    try GhostCleaner(ctx: try context(for: state, cancel: cancel), state: state, customTargets: customTargets).run()
                }
            } catch let error as StoreError {
                status = (error.code == .state && cancel.isCancelled) ? "STOPPED" : "FAILED"
                message = MessageLimit.bound(error.message)
                code = error.code.rawValue
                retryable = error.retryable
            } catch {
                status = "FAILED"
                message = "\(error)"
                code = ErrorCode.internal.rawValue
            }
            tracker.deliverTerminal(id, cancel) { callback?(ghostReport(id, status, removed, message, code, retryable)) }
        }
    }

    private func ghostReport(_ id: Int64, _ status: String, _ removed: Int, _ error: String, _ code: Int32, _ retryable: Bool) -> String {
        let doc = JSONDocument.object()
        doc.root.set("syncId", owned: JSONMake.int(id))
        doc.root.set("type", owned: JSONMake.string("cleanResyncGhosts"))
        doc.root.set("status", owned: JSONMake.string(status))
        doc.root.set("removed", owned: JSONMake.int(Int64(removed)))
        doc.root.set("error", owned: JSONMake.string(error))
        doc.root.set("errorCode", owned: JSONMake.int(Int64(code)))
        doc.root.set("errorRetryable", owned: JSONMake.bool(retryable))
        return doc.root.dump()
    }

    // MARK: status and control

    package func status(id: Int64) throws -> SyncState? { try states.get(id: id) }
    package func status(name: String) throws -> SyncState? { try states.get(name: name) }

    package func delete(id: Int64) throws {
        guard try states.get(id: id) != nil else { throw StoreError.notFound("No sync with id \(id)") }
        guard !tracker.isActive(id) else { throw StoreError(.busy, "Sync \(id) is running; stop it before deleting it", retryable: true) }
        try states.delete(id: id)
        try store.write { db in try DeletedRecordsWindow.forget(syncId: id, db: db) }
    }

    package func delete(name: String) throws {
        guard let state = try states.get(name: name) else { throw StoreError.notFound("No sync named '\(name)'") }
        try delete(id: state.id)
    }

    /// Stops every queued and running sync (they end STOPPED) and refuses new ones until restart.
    package func stop() {
        // Under the lock that starts take: every run that passed its check is registered.
        lock.withLock {
            paused = true
            tracker.cancelAll()
        }
    }

    /// Accepts syncs again; with restartStopped, re-runs every STOPPED sync (a stopped run, or
    /// one the process ended while it was queued or running). Returns their ids.
    @discardableResult
    package func restart(restartStopped: Bool, owner: Int = 0, callback: SyncCallback?) throws -> [Int64] {
        lock.withLock { paused = false }
        guard restartStopped else { return [] }
        var started: [Int64] = []
        // A sync another call started meanwhile is left to that run; the others still restart.
        for state in try states.all() where state.status == .stopped {
            if try start(state.id, owner: owner, callback: callback, unlessActive: true) != nil { started.append(state.id) }
        }
        return started
    }

    /// Blocks until the sync has no queued or running run (timeoutMs < 0: no limit) and returns
    /// its state. BUSY on timeout.
    package func wait(id: Int64, timeoutMs: Int64) throws -> SyncState {
        guard tracker.wait(id, timeoutMs: timeoutMs) else {
            throw StoreError(.busy, "Sync \(id) is still running after \(timeoutMs) ms", retryable: true)
        }
        guard let state = try states.get(id: id) else { throw StoreError.notFound("No sync with id \(id)") }
        return state
    }

    /// Creates the syncs of a usersyncs.json / globalsyncs.json document; existing names are
    /// skipped. All or nothing: every sync is checked first and all are saved in one
    /// transaction, so a document with one bad sync creates none.
    package func loadSyncConfig(json: String) throws {
        let doc = try JSONDocument.parse(json, what: "sync config")
        guard let list = doc.root["syncs"], list.isArray else {
            throw StoreError.argument("A sync config must be {\"syncs\": [{\"syncName\", \"syncType\", \"soupName\", \"target\", \"options\"}]}")
        }
        var checked: [SyncState] = []
        for (i, item) in list.elements.enumerated() {
            guard let name = item["syncName"]?.string, let type = item["syncType"]?.string, let soup = item["soupName"]?.string else {
                throw StoreError.argument("Sync \(i) of the config needs syncName, syncType and soupName")
            }
            let options = item["options"].map { $0.dump() }
            do {
                switch type {
                case "syncDown":
                    guard let target = item["target"] else { throw StoreError.argument("Sync '\(name)' needs a target") }
                    checked.append(try syncDownState(target: { SyncManager.copy(target) }, soupName: soup, optionsJSON: options, name: name))
                case "syncUp":
                    checked.append(try syncUpState(target: { item["target"].map(SyncManager.copy) }, soupName: soup, optionsJSON: options, name: name))
                default:
                    throw StoreError.argument("Sync '\(name)' has syncType '\(type)'; use syncDown or syncUp")
                }
            } catch let error as StoreError where !error.message.includes("'\(name)'") {
                throw StoreError(error.code, "Sync '\(name)' of the config: \(error.message)", retryable: error.retryable)
            }
        }
        try states.createAll(checked)
    }

    /// A document of its own holding a copy of `json` (a target inside a sync config).
    private static func copy(_ json: JSON) -> JSONDocument {
        JSONDocument(owning: json_deep_copy(json.raw))
    }

    /// The store's live sync (docs/sync.md#live-sync), made on first use.
    package var live: LiveSync {
        lock.withLock {
            if let liveSync { return liveSync }
            let made = LiveSync(manager: self)
            liveSync = made
            return made
        }
    }

    /// The live sync if one was ever made (a commit does not make one).
    package var liveIfMade: LiveSync? { lock.withLock { liveSync } }

    /// Stops running syncs and waits for their terminal callbacks; afterwards no callback runs.
    package func close() {
        liveIfMade?.stop()
        lock.withLock {
            closed = true
            tracker.cancelAll()
        }
        worker.finish()
        states.saveUnsaved()
        engineLock.release()
    }

    /// Stops the runs one handle started and waits for their terminal callbacks. The store has
    /// already marked the handle closed (see SmartStore.isOwnerOpen), so no run of it starts
    /// after the lock below is taken.
    package func close(owner: Int) throws {
        if worker.isCurrentThread || liveIfMade?.isCurrentThread == true {
            throw StoreError(.state, "A sync callback cannot close its own store (it would wait for itself)")
        }
        if let live = liveIfMade, live.isOwned(by: owner) { live.stop() }
        lock.withLock { tracker.cancel(owner: owner) }
        _ = tracker.waitOwner(owner, timeoutMs: -1)
    }

    package var isWorkerThread: Bool { worker.isCurrentThread || liveIfMade?.isCurrentThread == true }
}

extension SyncManager {
    /// Reads a usersyncs.json / globalsyncs.json file and creates its syncs.
    package func loadSyncConfig(path: String) throws {
        try loadSyncConfig(json: try FileSystem.readFile(path))
    }
}
