import SyncStoreCore
import SyncStoreSync
/// The native half of the Mobile SDK's hybrid plugins, once for every host (docs/hybrid-plugin.md):
/// answers the service/action/args calls cordova.force.js makes through cordova.exec, with the
/// answers, cursor objects, error strings and "sync" events of the SDK's SmartStorePlugin and
/// MobileSyncPlugin. It opens the stores the calls name under its root on first use (with the
/// host's key provider and remotes) and keeps them open until `close()`.
package final class HybridPlugin: @unchecked Sendable {
    /// status (0 or an ErrorCode), and the success value's JSON (every action answers one) or
    /// the error message as a JSON string.
    package typealias Answer = @Sendable (Int32, String?) -> Void
    /// A document event: its name ("sync", "smartstoreChanged", "liveSync") and its detail as JSON.
    package typealias Listener = @Sendable (String, String) -> Void
    /// The key of a store about to open ({"storeName", "isGlobalStore"}): nil key for plaintext.
    package typealias KeyProvider = (String) throws -> (key: String?, kdfIter: Int?)

    package static let smartStoreService = "com.salesforce.smartstore"
    package static let mobileSyncService = "com.salesforce.mobilesync"
    package static let oauthService = "com.salesforce.oauth"
    package static let networkService = "com.salesforce.network"
    package static let sdkInfoService = "com.salesforce.sdkinfo"

    package let root: String
    private let lock = Lock()
    private var handles: [PluginStoreSlot: Int] = [:]
    private var defaultRemote: String?
    private var remotes: [PluginStoreSlot: String] = [:]
    /// The remote each open handle's sync engine was last given (see `syncManager`).
    private var applied: [Int: String] = [:]
    /// The open handles whose sync engine was made (a sync action asked for it): a new remote
    /// reaches them at once, so a live sync's next runs use it.
    private var engines: Set<Int> = []
    private var listener: Listener?
    private var keyProvider: KeyProvider?
    private var closed = false
    /// The store listeners added through the plugin (pgAddSoupListener, pgAddQueryListener), by id.
    private var changeListeners: [Int64: ChangeListenerEntry] = [:]
    private var lastListenerId: Int64 = 0

    private struct ChangeListenerEntry {
        let handle: Int
        let token: Int64
    }

    /// options: {"remote": {...}}, the default remote of every store (RemoteConfig's JSON).
    package init(root: String, optionsJSON: String?) throws {
        guard !root.isEmpty else { throw StoreError.argument("The plugin's root directory must not be empty") }
        self.root = root
        if let options = try JSONDocument.parseOptional(optionsJSON, what: "plugin options") {
            guard options.root.isObject else { throw StoreError.argument("The plugin options must be a JSON object: {\"remote\": {...}}") }
            for (key, value) in options.root.members {
                guard key == "remote" else { throw StoreError.argument("Unknown plugin option \"\(key)\": the options are {\"remote\": {...}}") }
                if !value.isNull {
                    let text = value.dump()
                    _ = try RemoteConfig.parse(text)
                    defaultRemote = text
                }
            }
        }
    }

    // MARK: host settings

    /// The remote of one store (`storeJSON` {"storeName", "isGlobalStore"}), or with nil the
    /// default of every store without its own. Every run started after it uses it, in stores
    /// already open too.
    package func setRemote(storeJSON: String?, remoteJSON: String) throws {
        _ = try RemoteConfig.parse(remoteJSON)
        let slot = try storeJSON.map { text -> PluginStoreSlot in
            let doc = try JSONDocument.parse(text, what: "store config")
            guard doc.root.isObject else { throw StoreError.argument("The store config must be {\"storeName\", \"isGlobalStore\"}") }
            return try PluginStoreSlot(doc.root)
        }
        try lock.withLock {
            try checkOpen()
            if let slot { remotes[slot] = remoteJSON } else { defaultRemote = remoteJSON }
        }
        // Live sync starts its runs itself: the engines already made get the remote now, not at
        // the next sync action.
        let made: [PluginStoreSlot] = lock.withLock { handles.filter { engines.contains($0.value) }.map(\.key) }
        for store in made where slot == nil || store == slot { _ = try? syncManager(store) }
    }

    package func setListener(_ listener: Listener?) throws {
        try lock.withLock { try checkOpen(); self.listener = listener }
    }

    package func setKeyProvider(_ provider: KeyProvider?) throws {
        try lock.withLock { try checkOpen(); keyProvider = provider }
    }

    /// Closes every store this plugin opened (their runs stop, as a close does); later calls fail
    /// with STATE.
    package func close() throws {
        let open: [Int] = try lock.withLock {
            try checkOpen()
            // From a callback of one of its stores the close would wait for that callback: refuse
            // before anything changes, as syncstore_close() does.
            for handle in handles.values where (try? StoreRegistry.shared.store(handle))?.onCallbackThread == true {
                throw StoreError(.state, "The plugin cannot be freed from a callback of one of its stores (it would wait for itself)")
            }
            closed = true
            defer { handles.removeAll(); applied.removeAll(); engines.removeAll(); changeListeners.removeAll() }
            return Array(handles.values)
        }
        var first: Error? = nil
        for handle in open {
            do { try StoreRegistry.shared.close(handle) } catch { if first == nil { first = error } }
        }
        if let first { throw first }
    }

    /// The default remote's JSON as the host gave it (the logged-in user's credentials), if any.
    package var defaultRemoteJSON: String? { lock.withLock { defaultRemote } }

    /// Whether close() has run (its stores are closed, or were being closed when one failed).
    package var isClosed: Bool { lock.withLock { closed } }

    private func checkOpen() throws {
        if closed { throw StoreError(.state, "The plugin was freed; create a new one") }
    }

    // MARK: calls

    /// Runs one action; `answer` is called exactly once (see `PluginAnswer.later`).
    package func exec(service: String, action: String, argsJSON: String, answer: @escaping Answer) {
        do {
            let table: [String: PluginAction]
            switch service {
            case HybridPlugin.smartStoreService: table = SmartStoreActions.table
            case HybridPlugin.mobileSyncService: table = MobileSyncActions.table
            case HybridPlugin.oauthService: table = OAuthActions.table
            case HybridPlugin.networkService: table = NetworkActions.table
            case HybridPlugin.sdkInfoService: table = SDKInfoActions.table
            default:
                throw StoreError.argument("Unknown plugin service '\(service)': use \(HybridPlugin.smartStoreService), \(HybridPlugin.mobileSyncService), \(HybridPlugin.oauthService), \(HybridPlugin.networkService) or \(HybridPlugin.sdkInfoService)")
            }
            guard let run = table[action] else {
                throw StoreError.argument("Unknown action '\(action)' of \(service) (docs/hybrid-plugin.md lists them)")
            }
            try lock.withLock { try checkOpen() }
            let call = try PluginCall(action: action, argsJSON: argsJSON)
            switch try run(self, call, answer) {
            case .json(let text): answer(0, text)
            case .later: break
            }
        } catch let error as StoreError {
            answer(error.code.rawValue, HybridPlugin.messageJSON(error.message))
        } catch {
            answer(ErrorCode.internal.rawValue, HybridPlugin.messageJSON("Unexpected error: \(error)"))
        }
    }

    /// A message as a JSON string: how the plugins' error callbacks get it.
    package static func messageJSON(_ message: String) -> String {
        JSONMake.string(message).map { raw in JSONDocument(owning: raw).root.dump() } ?? "\"\""
    }

    // MARK: stores

    /// The handle of the store a call names, opened on first use.
    package func handle(_ slot: PluginStoreSlot) throws -> Int {
        let provider: KeyProvider? = try lock.withLock {
            try checkOpen()
            return handles[slot] == nil ? keyProvider : nil
        }
        if let existing = lock.withLock({ handles[slot] }) { return existing }
        // Opened outside the lock: the key provider is host code, and an open may run the KDF.
        let given = try provider?(slot.json)
        let key = try given?.key.map { try StoreKey($0, kdfIter: given?.kdfIter ?? StoreKey.defaultKdfIter) }
        let config = try StoreConfig(isGlobal: slot.isGlobal, name: slot.name, key: key, kdfIter: given?.kdfIter)
        let opened = try StoreRegistry.shared.open(root: root, config: config)
        let winner: Int = lock.withLock {
            if closed { return -1 }
            if let raced = handles[slot] { return raced }
            handles[slot] = opened
            return opened
        }
        if winner != opened {
            try? StoreRegistry.shared.close(opened)
            if winner < 0 { throw StoreError(.state, "The plugin was freed; create a new one") }
        }
        return winner
    }

    /// The sync engine of a store the plugin opened, with the remote the plugin has for it. Only
    /// sync actions ask for it: an engine holds the store's sync lock (one process runs a store's
    /// syncs), which an app that only reads and writes entries must not take from another process.
    package func syncManager(_ slot: PluginStoreSlot) throws -> (SyncManager, SmartStore, Int) {
        let (store, handle) = try store(slot)
        let manager = try store.syncManager()
        let remote: String? = lock.withLock {
            if handles[slot] == handle { engines.insert(handle) }
            let wanted = remotes[slot] ?? defaultRemote
            return wanted == applied[handle] ? nil : wanted
        }
        if let remote {
            manager.setRemote(try RemoteConfig.parse(remote))
            lock.withLock { applied[handle] = remote }
        }
        return (manager, store, handle)
    }

    package func store(_ slot: PluginStoreSlot) throws -> (SmartStore, Int) {
        let h = try handle(slot)
        return (try StoreRegistry.shared.store(h), h)
    }

    /// Closes the plugin's handles of the stores `matching` (before they are removed).
    package func closeStores(_ matching: (PluginStoreSlot) -> Bool) throws {
        let closing: [Int] = lock.withLock {
            let slots = handles.keys.filter(matching)
            let closing = slots.compactMap { handles[$0] }
            for slot in slots { handles[slot] = nil }
            for handle in closing { applied[handle] = nil; engines.remove(handle) }
            // Their listeners go with them (the close removes them).
            changeListeners = changeListeners.filter { !closing.contains($0.value.handle) }
            return closing
        }
        for handle in closing { try StoreRegistry.shared.close(handle) }
    }

    // MARK: store listeners

    /// Adds a listener of soup `soup` (nil: every soup) of the store `slot` names: each notice it
    /// hears is a "smartstoreChanged" event (`changeDetail`). Returns the listener's id (from 1,
    /// unique in this plugin). The listener belongs to the plugin's handle of that store: writes
    /// through the plugin are its "handle" origin, and it goes when the plugin closes the store.
    /// `minIntervalMs` (nil or 0: none) is the least time between two of its notices.
    package func addSoupListener(_ slot: PluginStoreSlot, soup: String?, minIntervalMs: Int64? = nil) throws -> Int64 {
        let (store, handle) = try store(slot)
        return try addListener(store, handle, slot, minIntervalMs) { listeners, deliver in
            try listeners.add(store: store, soup: soup, owner: handle, deliver)
        }
    }

    /// Adds a listener of a query's result (`specJSON`: a query spec with "soupName", or a Smart
    /// SQL spec): its first event, the current result, comes at once (it may reach the host's
    /// event listener before the action's answer), then one after each commit that changed it.
    package func addQueryListener(_ slot: PluginStoreSlot, specJSON: String, minIntervalMs: Int64? = nil) throws -> Int64 {
        let (store, handle) = try store(slot)
        return try addListener(store, handle, slot, minIntervalMs) { listeners, deliver in
            try listeners.addQuery(store: store, specJSON: specJSON, owner: handle, deliver)
        }
    }

    /// `add` registers the listener with the store's ChangeListeners and returns its token.
    private func addListener(_ store: SmartStore, _ handle: Int, _ slot: PluginStoreSlot, _ minIntervalMs: Int64?,
                             _ add: (ChangeListeners, @escaping ChangeListeners.Deliver) throws -> Int64) throws -> Int64 {
        if let ms = minIntervalMs, ms < 0 || ms > 3_600_000 {
            throw StoreError.argument("minIntervalMs must be from 0 to 3600000 (got \(ms))")
        }
        let id = try lock.withLock { () -> Int64 in
            try checkOpen()
            lastListenerId += 1
            return lastListenerId
        }
        let token: Int64
        let listeners: ChangeListeners
        do {
            listeners = try ChangeListeners.of(store)
            token = try add(listeners) { [weak self] notice in self?.fireChange(notice, id: id, slot) }
        } catch {
            // A refused listener leaves no gap in the ids (unless another was added meanwhile).
            lock.withLock { if lastListenerId == id { lastListenerId -= 1 } }
            throw error
        }
        if let ms = minIntervalMs, ms > 0 {
            do { try listeners.setInterval(token, milliseconds: ms) } catch { try? listeners.remove(token); throw error }
        }
        let kept = lock.withLock { () -> Bool in
            // Closed meanwhile (the plugin, or this store): the close removed it, or removes it now.
            guard !closed, handles[slot] == handle else { return false }
            changeListeners[id] = ChangeListenerEntry(handle: handle, token: token)
            return true
        }
        if !kept {
            try? listeners.remove(token)
            throw StoreError(.state, "The store was closed while the listener was added")
        }
        return id
    }

    /// Removes a listener added through the plugin: when this returns none of its events is
    /// fired or will be (but from inside one of its own: see ChangeListeners.remove). An id the
    /// plugin does not have (removed already, or gone with its store's removal) has nothing to do.
    package func removeListener(id: Int64) throws {
        guard let entry = lock.withLock({ changeListeners.removeValue(forKey: id) }) else { return }
        // Its store's handle closed: the listener went with it.
        guard let store = try? StoreRegistry.shared.store(entry.handle) else { return }
        do {
            try ChangeListeners.of(store).remove(entry.token)
        } catch let error as StoreError where error.code == .state {
            // Removed with its handle meanwhile.
        }
    }

    private func fireChange(_ notice: String, id: Int64, _ slot: PluginStoreSlot) {
        guard let listener = lock.withLock({ listener }) else { return }
        listener(HybridPlugin.changeEvent, HybridPlugin.changeDetail(notice, id: id, slot))
    }

    /// The document event of a store listener's notice.
    package static let changeEvent = "smartstoreChanged"

    /// A listener's notice with "listenerId", "isGlobalStore" and "storeName" added: the
    /// "smartstoreChanged" event's detail.
    package static func changeDetail(_ notice: String, id: Int64, _ slot: PluginStoreSlot) -> String {
        guard let doc = try? JSONDocument.parse(notice, what: "change notice"), doc.root.isObject else { return notice }
        doc.root.set("listenerId", owned: JSONMake.int(id))
        doc.root.set("isGlobalStore", owned: JSONMake.bool(slot.isGlobal))
        doc.root.set("storeName", owned: JSONMake.string(slot.name))
        return doc.root.dump()
    }

    // MARK: live sync

    /// Starts live sync (docs/sync.md#live-sync) of the store `slot` names, owned by the plugin's
    /// handle of it (the plugin's close of that store stops it): `optionsJSON` as
    /// syncstore_start_live_sync() reads it. Each state event is a "liveSync" event
    /// (`liveDetail`), each state of a run it starts a "sync" event, as the plugin's own runs.
    /// Answers the live sync state when it returns (its "state" event's shape, plus the store).
    package func startLiveSync(_ slot: PluginStoreSlot, optionsJSON: String?) throws -> String {
        let options = try LiveSync.Options.parse(optionsJSON)
        let (manager, _, handle) = try syncManager(slot)
        try manager.live.start(options, owner: handle, callback: liveEvents(slot))
        // Closed meanwhile (the plugin, or this store): its close may have come before the start.
        let kept = lock.withLock { !closed && handles[slot] == handle }
        if !kept {
            if manager.live.isOwned(by: handle) { manager.live.stop() }
            throw StoreError(.state, "The store was closed while live sync started")
        }
        return HybridPlugin.liveDetail(manager.live.stateJSON, slot)
    }

    /// Stops the store's live sync (whichever handle started it); returns when its thread has
    /// ended (its last event, "stopped", fired). Nothing to do when it is off.
    package func stopLiveSync(_ slot: PluginStoreSlot) throws {
        try syncManager(slot).0.liveIfMade?.stop()
    }

    /// The store's live sync state ("stopped" when off), with the store named.
    package func liveSyncState(_ slot: PluginStoreSlot) throws -> String {
        HybridPlugin.liveDetail(try syncManager(slot).0.live.stateJSON, slot)
    }

    /// The callback of a live sync started through the plugin: its state events as "liveSync"
    /// events, its runs' states as "sync" events.
    private func liveEvents(_ slot: PluginStoreSlot) -> SyncCallback {
        { [weak self] text in self?.fireLive(text, slot) }
    }

    private func fireLive(_ text: String, _ slot: PluginStoreSlot) {
        guard let listener = lock.withLock({ listener }) else { return }
        guard let doc = try? JSONDocument.parse(text, what: "live sync event"), doc.root.isObject else { return }
        if doc.root["event"]?.string == "run", let state = doc.root["sync"] {
            listener("sync", HybridPlugin.detail(state.dump(), slot))
        } else {
            listener(HybridPlugin.liveSyncEvent, HybridPlugin.liveDetail(text, slot))
        }
    }

    /// The document event of a live sync's state.
    package static let liveSyncEvent = "liveSync"

    /// A live sync state event with "isGlobalStore" and "storeName" added: the "liveSync" event's
    /// detail and the answer of startLiveSync / getLiveSyncState.
    package static func liveDetail(_ event: String, _ slot: PluginStoreSlot) -> String {
        detail(event, slot)
    }

    // MARK: events

    /// The callback of a run started through the plugin: every state as a "sync" event whose
    /// detail also names the store.
    package func syncEvents(_ slot: PluginStoreSlot) -> SyncCallback {
        { [weak self] state in self?.fireSync(state, slot) }
    }

    private func fireSync(_ state: String, _ slot: PluginStoreSlot) {
        guard let listener = lock.withLock({ listener }) else { return }
        listener("sync", HybridPlugin.detail(state, slot))
    }

    /// A sync state with "isGlobalStore" and "storeName" added, as the plugins' events carry it.
    package static func detail(_ state: String, _ slot: PluginStoreSlot) -> String {
        guard let doc = try? JSONDocument.parse(state, what: "sync state"), doc.root.isObject else { return state }
        doc.root.set("isGlobalStore", owned: JSONMake.bool(slot.isGlobal))
        doc.root.set("storeName", owned: JSONMake.string(slot.name))
        return doc.root.dump()
    }
}

/// One action of a plugin: answers now (`.json`) or later through the answer it gets.
package typealias PluginAction = @Sendable (HybridPlugin, PluginCall, @escaping HybridPlugin.Answer) throws -> PluginAnswer

/// The C ABI's plugin handles: numbers, never pointers to freed memory, so a freed handle is a
/// STATE error and not a crash.
package enum PluginHandles {
    private static let lock = Lock()
    nonisolated(unsafe) private static var plugins: [Int: HybridPlugin] = [:]
    nonisolated(unsafe) private static var next = 0x5000

    package static func add(_ plugin: HybridPlugin) -> Int {
        lock.withLock {
            next += 16
            plugins[next] = plugin
            return next
        }
    }

    package static func get(_ handle: Int) throws -> HybridPlugin {
        guard let plugin = lock.withLock({ plugins[handle] }) else {
            throw StoreError(.state, "Unknown or freed plugin handle")
        }
        return plugin
    }

    package static func remove(_ handle: Int) -> HybridPlugin? {
        lock.withLock { plugins.removeValue(forKey: handle) }
    }
}
