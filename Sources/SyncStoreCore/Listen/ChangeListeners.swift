import CJansson
import Glibc

/// Soup listeners: host code told, after each commit, what it changed (docs: the C header's
/// "Callbacks, threads and close"). A companion of the store (one per store, made on the first
/// listener): `didCommit` queues the commit's notice for the store's one notifier thread, which
/// calls each listener that was registered at the commit and is still registered, one at a
/// time, never on the writing thread and never while the library holds a lock. So a listener
/// may call any function of the library; a write it makes is told later, as any other.
package final class ChangeListeners: StoreCompanion, @unchecked Sendable {
    /// Receives a change as JSON text (see `ChangeListeners.json`), valid during the call.
    package typealias Deliver = @Sendable (String) -> Void

    private struct Listener {
        let soup: String?
        let owner: Int
        let deliver: Deliver
    }

    /// The store's listeners, the one running now and whether the store is closing.
    private let lock = ConditionLock()
    private var listeners: [Int64: Listener] = [:]
    private var running: Int64?
    private var closed = false
    private let notifier = SerialWorker()

    /// Tokens are unique in the process, so one of another store is told apart from a live one.
    private static let tokenLock = Lock()
    nonisolated(unsafe) private static var lastToken: Int64 = 0

    package init() {}

    /// The store's listeners (made on first use). STATE once its last handle started closing.
    package static func of(_ store: SmartStore) throws -> ChangeListeners {
        try store.companion(ChangeListeners.self) { ChangeListeners() }
    }

    /// Adds a listener of soup `soup` (nil: every soup) for handle `owner` (0: the Swift API);
    /// returns its token (never 0). NOT_FOUND for an unknown soup.
    package func add(store: SmartStore, soup: String?, owner: Int, _ deliver: @escaping Deliver) throws -> Int64 {
        if let soup { _ = try store.requireSoup(soup) }
        let token = ChangeListeners.tokenLock.withLock { () -> Int64 in
            ChangeListeners.lastToken += 1
            return ChangeListeners.lastToken
        }
        try lock.withLock {
            if closed { throw StoreError(.state, "The store is closed; open it again") }
            listeners[token] = Listener(soup: soup, owner: owner, deliver: deliver)
        }
        return token
    }

    /// Removes a listener: when this returns none of its calls runs or will run. A call of it in
    /// progress on the notifier thread is waited for, unless the caller is that thread (a
    /// listener removing itself, or another one). STATE for a token this store does not have
    /// (removed already, gone with its handle, or another store's).
    package func remove(_ token: Int64) throws {
        let onNotifier = notifier.isCurrentThread
        try lock.withLock {
            guard listeners.removeValue(forKey: token) != nil else {
                throw StoreError(.state, "The listener token is not one of this store's live listeners (removed already, removed with its handle, or another store's)")
            }
            while !onNotifier && running == token { _ = lock.wait() }
        }
    }

    /// How many listeners the store has.
    package var count: Int { lock.withLock { listeners.count } }

    // MARK: StoreCompanion

    package func didCommit(_ change: StoreChange) {
        // The listeners registered at the commit, with what each would hear.
        let targets: [Int64] = lock.withLock {
            guard !closed else { return [] }
            return listeners.compactMap { token, listener in
                listener.soup.map { change.soups[$0] != nil } ?? true ? token : nil
            }
        }
        guard !targets.isEmpty else { return }
        // Refused only once the store is closing (or no thread can be started): nothing is told.
        _ = notifier.submit { [self] in deliver(change, to: targets.sorted()) }
    }

    private func deliver(_ change: StoreChange, to tokens: [Int64]) {
        for token in tokens {
            let listener: Listener? = lock.withLock {
                guard !closed, let listener = listeners[token] else { return nil }
                running = token
                return listener
            }
            guard let listener else { continue }
            listener.deliver(ChangeListeners.json(change, soup: listener.soup, owner: listener.owner))
            lock.withLock {
                running = nil
                lock.broadcast()
            }
        }
    }

    package func handleClosing(_ owner: Int, last: Bool) throws {
        let onNotifier = notifier.isCurrentThread
        lock.withLock {
            if last { closed = true }
            listeners = listeners.filter { !last && $0.value.owner != owner }
            // The call in progress (it was one of those removed, or the store is closing).
            while !onNotifier, let token = running, listeners[token] == nil { _ = lock.wait() }
        }
        // The queued notices find no listener; the thread ends.
        if last { notifier.finish() }
    }

    package func hostWillUpsert(_ entries: [JSON], soup: SoupInfo, inside db: Connection) throws {}
    package func hostWillReplace(_ entry: JSON, existing: Int64, soup: SoupInfo, stored: StoredEntry) throws {}
    package var isCallbackThread: Bool { notifier.isCurrentThread }
    package func paused<T>(_ body: () throws -> T) throws -> T { try body() }

    // MARK: the JSON a listener hears

    /// One commit as a listener of `soup` (nil: every soup) added through handle `owner` hears it:
    /// {"sequence": n, "origin": {"kind": "handle"|"process"|"sync", "syncId"?: n},
    ///  "soups": [{"soup", "inserted": {"count", "ids", "cut"}, "updated", "deleted", "cleared",
    ///  "removed"}]} (soups by name; only `soup` for a soup listener).
    package static func json(_ change: StoreChange, soup: String?, owner: Int) -> String {
        let doc = JSONDocument.object()
        doc.root.set("sequence", owned: JSONMake.int(change.sequence))
        let origin = JSONDocument.object()
        switch change.origin {
        case .host(let writer):
            origin.root.set("kind", owned: JSONMake.string(writer == owner ? "handle" : "process"))
        case .engine(let run):
            origin.root.set("kind", owned: JSONMake.string("sync"))
            if let run { origin.root.set("syncId", owned: JSONMake.int(run)) }
        }
        doc.root.set("origin", owned: origin.root.retained())
        let soups = JSONDocument.array()
        for name in change.soups.keys.sorted() where soup == nil || soup == name {
            guard let part = change.soups[name] else { continue }
            let item = JSONDocument.object()
            item.root.set("soup", owned: JSONMake.string(name))
            for (key, ids) in [("inserted", part.inserted), ("updated", part.updated), ("deleted", part.deleted)] {
                let kind = JSONDocument.object()
                kind.root.set("count", owned: JSONMake.int(Int64(ids.count)))
                let list = JSONDocument.array()
                for id in ids.ids { list.root.append(owned: JSONMake.int(id)) }
                kind.root.set("ids", owned: list.root.retained())
                kind.root.set("cut", owned: JSONMake.bool(ids.cut))
                item.root.set(key, owned: kind.root.retained())
            }
            item.root.set("cleared", owned: JSONMake.bool(part.cleared))
            item.root.set("removed", owned: JSONMake.bool(part.dropped))
            soups.root.append(owned: item.root.retained())
        }
        doc.root.set("soups", owned: soups.root.retained())
        return doc.root.dump()
    }
}
