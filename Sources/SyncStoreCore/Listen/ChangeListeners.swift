import CJansson
import Glibc
import Synchronization
import SyncStoreSupport

/// Soup and query listeners: host code told, after commits, what they changed (the C header's
/// "Callbacks, threads and close" is the contract). A companion of the store (one per store,
/// made on the first listener). `didCommit` only puts the commit in an inbox; the store's
/// notifier thread moves it to a log the listeners share, marks the listeners that hear it and
/// had nothing pending, and tells each listener whose notice is due (its minimum interval
/// passed, no call of it in progress) every commit it hears since its mark, merged into one
/// notice: one listener at a time, never on the writing thread, never while the library holds
/// a lock. A handle may buffer
/// its listeners' notices: the notifier then calls the handle's "ready" function once and the
/// host sends them on its own thread. While the store has listeners the notifier also looks,
/// every `pollMs`, for commits of other processes (`SoupVersions`).
package final class ChangeListeners: StoreCompanion, @unchecked Sendable {
    /// Receives a notice as JSON text (see `Notice`), valid during the call.
    package typealias Deliver = @Sendable (String) -> Void
    /// Told that a buffered handle has notices to send.
    package typealias Ready = @Sendable () -> Void

    /// How often other processes' commits are looked for while the store has listeners.
    package static let pollMs: Int64 = 10
    /// The same when only the library's observers listen (live sync, whose debounce is longer):
    /// an idle live store costs almost no CPU.
    package static let observerPollMs: Int64 = 100
    /// The notifier thread's scheduling niceness (Linux sets it per thread).
    private static let niceness: Int32 = 10
    /// Commits the log keeps before its oldest half is merged into one (a listener far behind
    /// hears them as one notice): memory stays flat whatever the listeners' pace.
    private static let logLimit = 256
    /// When commits came while the notifier was telling, it gathers the next ones this long
    /// before it tells again: under a stream of small commits each listener hears one notice
    /// per gathering instead of one per commit (the notifier's work per commit, on a core the
    /// writer shares, was what slowed the writer), at the cost of this much latency then.
    private static let gatherMs: Int64 = 1

    private final class Listener {
        let owner: Int
        let soup: String?
        let query: QueryWatch?
        let deliver: Deliver
        /// An observer in the library (live sync): told the merged change itself, no JSON.
        var observe: (@Sendable (StoreChange) -> Void)?
        var intervalMs: Int64 = 0
        var lastSent: Int64 = Int64.min / 2
        /// The log index of its first commit not yet told (nil: none).
        var from: Int64?
        /// A query listener's first notice, told before any change.
        var initial: QueryWatch.Outcome?
        /// A query listener whose soup was removed: it has heard so, and hears nothing more.
        var gone = false

        init(owner: Int, soup: String?, query: QueryWatch?, deliver: @escaping Deliver) {
            self.owner = owner
            self.soup = soup
            self.query = query
            self.deliver = deliver
            hearing = query.map { .soups($0.soups) } ?? soup.map { .soups([$0]) } ?? .all
        }

        var hasNotice: Bool { initial != nil || from != nil }

        func hears(_ change: StoreChange) -> Bool { !gone && hearing.hears(change) }

        /// Which commits it hears, as a value: listeners with equal ones hear the same commits.
        let hearing: Hearing

        func due(at now: Int64) -> Bool { hasNotice && now - lastSent >= intervalMs }
    }

    private enum Hearing: Equatable {
        case all
        case soups(Set<String>)

        func hears(_ change: StoreChange) -> Bool {
            switch self {
            case .all: return true
            case .soups(let soups): return change.soups.keys.contains { soups.contains($0) }
            }
        }
    }

    private struct Buffering {
        var ready: Ready?
        /// `ready` was called and no send followed yet.
        var signalled = false
    }

    private let lock = ConditionLock()
    private var listeners: [Int64: Listener] = [:] {
        didSet {
            hostListening = nil
            listening.store(!listeners.isEmpty, ordering: .sequentiallyConsistent)
        }
    }
    /// Whether `listeners` has any, for writers, which do not take `lock`.
    private let listening = Atomic<Bool>(false)

    /// Commits the notifier has not taken in yet. A writer only appends here, under its own
    /// lock: a commit never waits for `lock`, which the notifier holds while it works (with 100
    /// query listeners, writers slept on it once in ten commits).
    private let inboxLock = Lock()
    private var inbox: [StoreChange] = []
    /// The notifier's: the inbox's buffer it empties while writers fill the other.
    private var taking: [StoreChange] = []
    /// While the notifier sleeps (under `inboxLock`): the commits that would give a listener a
    /// notice, which wake it; nil: none would. A listener whose notice is pending (waiting for
    /// its interval or for its handle's send) hears a commit with that notice, taken in at the
    /// next wake: with 100 buffered listeners never sent, a wake per commit cost the writer 20%.
    private var wakeFor: Hearing?
    /// Whether a host listener (not an observer) is among `listeners`, when known.
    private var hostListening: Bool?

    /// The poll interval now (under the lock).
    private var pollInterval: Int64 {
        if hostListening == nil { hostListening = listeners.values.contains { $0.observe == nil } }
        return hostListening == true ? ChangeListeners.pollMs : ChangeListeners.observerPollMs
    }
    /// Listeners taken for telling (their notice judged and told), with the thread doing it.
    private var running: [Int64: pthread_t] = [:]
    /// Listeners whose callback is in progress, with the thread making it: what `remove` waits
    /// for. A listener taken in a round but not yet called is not waited for (the round skips it
    /// once removed), so a callback that waits for a thread removing a later one cannot deadlock.
    private var calling: [Int64: pthread_t] = [:]
    /// Handles whose listeners' notices wait for a send.
    private var buffered: [Int: Buffering] = [:]
    /// Listeners that may have a notice due, in the order they got one: the notifier's work,
    /// so a delivery costs the same whatever the number of listeners.
    private var queue: [Int64] = []
    private var queueHead = 0
    private var queued = Set<Int64>()
    /// Listeners waiting for their minimum interval to pass: token -> when it does.
    private var delayed: [Int64: Int64] = [:]
    private var closed = false
    /// The notifier has told a listener since its queue was last empty.
    private var telling = false
    /// A commit came while `telling`.
    private var committedWhileTelling = false
    /// Until when the notifier gathers commits before telling again (see `gatherMs`).
    private var gatherUntil: Int64 = 0
    private var thread: pthread_t?
    /// The last commit heard (other processes' commits are told with it).
    private var lastSequence: Int64 = 0
    /// Commits not yet told to every listener that hears them, oldest first; `logStart` is the
    /// index of the first.
    private var log: [StoreChange] = []
    private var logStart: Int64 = 0
    private weak var store: SmartStore?

    /// The soup counts last compared (nil: not watching other processes).
    private let pollLock = Lock()
    private var seen: [String: Int64]?

    /// Tokens are unique in the process, so one of another store is told apart from a live one.
    private static let tokenLock = Lock()
    nonisolated(unsafe) private static var lastToken: Int64 = 0

    /// Marks the threads inside a listener callback (or a ready call) of any store.
    private static let callbackKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether the calling thread is inside a callback of this store's listeners.
    private var insideCallback: Bool { pthread_getspecific(ChangeListeners.callbackKey) == Unmanaged.passUnretained(self).toOpaque() }

    private func asCallback(_ body: () -> Void) {
        let previous = pthread_getspecific(ChangeListeners.callbackKey)
        pthread_setspecific(ChangeListeners.callbackKey, Unmanaged.passUnretained(self).toOpaque())
        body()
        pthread_setspecific(ChangeListeners.callbackKey, previous)
    }

    init(store: SmartStore) { self.store = store }

    /// The store's listeners (made on first use). STATE once its last handle started closing.
    package static func of(_ store: SmartStore) throws -> ChangeListeners {
        try store.companion(ChangeListeners.self) { ChangeListeners(store: store) }
    }

    // MARK: adding and removing

    /// Adds a listener of soup `soup` (nil: every soup) for handle `owner` (0: the Swift API);
    /// returns its token (never 0). NOT_FOUND for an unknown soup.
    package func add(store: SmartStore, soup: String?, owner: Int, _ deliver: @escaping Deliver) throws -> Int64 {
        if let soup { _ = try store.requireSoup(soup) }
        return try register(Listener(owner: owner, soup: soup, query: nil, deliver: deliver), store: store)
    }

    /// Adds an observer for the library's own use (live sync): `observe` hears every commit of
    /// the store, whoever made it, merged as listeners hear them, on the notifier thread, with
    /// no JSON made. Removed by `remove`, or with handle `owner`.
    package func addObserver(store: SmartStore, owner: Int, _ observe: @escaping @Sendable (StoreChange) -> Void) throws -> Int64 {
        let listener = Listener(owner: owner, soup: nil, query: nil, deliver: { _ in })
        listener.observe = observe
        return try register(listener, store: store)
    }

    /// Adds a listener of the query `specJSON` (a query spec with "soupName", or Smart SQL) for
    /// handle `owner`; its first notice, the current result, is told at once. ARGUMENT for a spec
    /// the store cannot run, NOT_FOUND for an unknown soup.
    package func addQuery(store: SmartStore, specJSON: String, owner: Int, _ deliver: @escaping Deliver) throws -> Int64 {
        let query = try QueryWatch(store: store, specJSON: specJSON)
        let listener = Listener(owner: owner, soup: nil, query: query, deliver: deliver)
        // Registered first, then read: a commit between the two is in the result read, and
        // judged against it later (no notice), never missed.
        let token = try register(listener, store: store, held: true)
        do {
            let outcome = try query.load(store)
            try lock.withLock {
                guard listeners[token] != nil else { throw StoreError(.state, "The store is closed; open it again") }
                listener.initial = outcome
                running[token] = nil
                lock.broadcast()
                enqueue(token)
            }
        } catch {
            lock.withLock {
                listeners[token] = nil
                running[token] = nil
                lock.broadcast()
            }
            throw error
        }
        return token
    }

    /// Registers `listener` (`held`: marked running until its first notice is ready, so no
    /// change is judged before it).
    private func register(_ listener: Listener, store: SmartStore, held: Bool = false) throws -> Int64 {
        let token = ChangeListeners.tokenLock.withLock { () -> Int64 in
            ChangeListeners.lastToken += 1
            return ChangeListeners.lastToken
        }
        startWatchingOthers(store)
        try lock.withLock {
            if closed { throw StoreError(.state, "The store is closed; open it again") }
            if thread == nil {
                guard let started = startThread({ [self] in loop() }) else {
                    throw StoreError(.busy, "The store's notifier thread could not be started (the system refused a new thread); retry later", retryable: true)
                }
                thread = started
            }
            // Commits made before it are not its to hear.
            takeInbox()
            listeners[token] = listener
            if held { running[token] = pthread_self() }
            lock.signal()
        }
        return token
    }

    /// Removes a listener: when this returns none of its calls runs or will run. A call of it in
    /// progress on another thread is waited for (not one on this thread: a listener removing
    /// itself, or another one). STATE for a token this store does not have (removed already,
    /// gone with its handle, or another store's).
    package func remove(_ token: Int64) throws {
        let me = pthread_self()
        try lock.withLock {
            delayed[token] = nil
            guard listeners.removeValue(forKey: token) != nil else {
                throw StoreError(.state, "The listener token is not one of this store's live listeners (removed already, removed with its handle, or another store's)")
            }
            while let other = calling[token], pthread_equal(other, me) == 0 { _ = lock.wait() }
        }
        if lock.withLock({ listeners.isEmpty }) { stopWatchingOthers() }
    }

    /// Sets a listener's least time between two notices (0: none).
    package func setInterval(_ token: Int64, milliseconds: Int64) throws {
        guard milliseconds >= 0, milliseconds <= 3_600_000 else {
            throw StoreError.argument("min_interval_ms must be from 0 to 3600000 (got \(milliseconds))")
        }
        try lock.withLock {
            guard let listener = listeners[token] else {
                throw StoreError(.state, "The listener token is not one of this store's live listeners (removed already, removed with its handle, or another store's)")
            }
            listener.intervalMs = milliseconds
            delayed[token] = nil
            enqueue(token)
        }
    }

    /// How many listeners the store has.
    package var count: Int { lock.withLock { listeners.count } }

    // MARK: buffered handles

    /// Buffers the notices of handle `owner`'s listeners until `send(owner:)`; `ready` (may be
    /// nil) is called on the notifier thread when some become pending.
    package func buffer(owner: Int, ready: Ready?) throws {
        try lock.withLock {
            if closed { throw StoreError(.state, "The store is closed; open it again") }
            buffered[owner] = Buffering(ready: ready)
            takeInbox()
            for (token, listener) in listeners where listener.owner == owner && listener.hasNotice { enqueue(token) }
        }
    }

    /// Tells, on the calling thread, the notices pending for handle `owner`'s listeners;
    /// returns how many callbacks were made.
    package func send(owner: Int) throws -> Int {
        if insideCallback {
            throw StoreError(.state, "syncstore_send_notifications cannot be called from inside a listener callback (it would call back into itself); call it from the host's own thread")
        }
        let tokens: [Int64] = try lock.withLock {
            guard buffered[owner] != nil else {
                throw StoreError(.state, "This handle does not buffer its notices; call syncstore_buffer_notifications first")
            }
            // Commits made before this call are sent by it.
            takeInbox()
            let now = Clock.monotonicMillis()
            return listeners.filter { $0.value.owner == owner && $0.value.observe == nil && $0.value.due(at: now) }
                .sorted { ($0.value.from ?? -1, $0.key) < ($1.value.from ?? -1, $1.key) }.map(\.key)
        }
        var sent = 0
        for token in tokens {
            guard let work = lock.withLock({ take(token, at: Clock.monotonicMillis()) }) else { continue }
            sent += tell(token, work)
        }
        // Notices pending now came during the send (or wait for an interval): ready is called
        // for them.
        lock.withLock {
            buffered[owner]?.signalled = false
            takeInbox()
            for (token, listener) in listeners where listener.owner == owner && listener.hasNotice { enqueue(token) }
        }
        return sent
    }

    // MARK: the notifier thread

    private enum Work {
        case round([Step])
        case poll
        case stop
    }

    /// One thing a round does, in the order listeners got their notices.
    private enum Step {
        case tell(Int64, Taken)
        case ready(Ready)
    }

    /// A listener's notice taken for telling.
    private struct Taken {
        let listener: Listener
        let change: StoreChange?
        let initial: QueryWatch.Outcome?
        /// Which commits of the log the change merges: soup listeners that took the same ones,
        /// with the same filter and handle, share one notice text.
        var span: NoticeSpan?
    }

    private struct NoticeSpan: Equatable {
        let from: Int64
        let end: Int64
        let folds: Int
        let soup: String?
        let owner: Int
    }

    /// The last soup notice built, for the soup listeners that took the same commits after it
    /// (a commit heard by 100 soup listeners is made JSON once).
    private var lastSoupNotice: (span: NoticeSpan, text: String)?
    /// How many times the log's oldest half was merged (a span's positions then mean other commits).
    private var logFolds = 0
    /// The last span of the log merged for a listener, and what it heard there: the listeners
    /// that hear alike and took the same commits (after a gathering, most of them) share it.
    private var lastMerge: (from: Int64, end: Int64, folds: Int, hearing: Hearing, change: StoreChange?)?

    /// Takes listener `token`'s notice and marks it running (under the lock); nil when it has
    /// none due, is running, or is gone.
    private func take(_ token: Int64, at now: Int64) -> Taken? {
        guard let listener = listeners[token], running[token] == nil, listener.due(at: now) else { return nil }
        running[token] = pthread_self()
        let initial = listener.initial
        listener.initial = nil
        var change: StoreChange? = nil
        var span: NoticeSpan? = nil
        if let from = listener.from {
            let end = logStart + Int64(log.count)
            let hearing = listener.hearing
            if !listener.gone, let last = lastMerge, last.from == from, last.end == end, last.folds == logFolds, last.hearing == hearing {
                change = last.change
            } else {
                for heard in log[Int(from - logStart)...] where listener.hears(heard) {
                    change = change.map { $0.merged(with: heard) } ?? heard
                }
                if !listener.gone { lastMerge = (from, end, logFolds, hearing, change) }
            }
            if listener.query == nil && listener.observe == nil {
                span = NoticeSpan(from: from, end: logStart + Int64(log.count), folds: logFolds, soup: listener.soup, owner: listener.owner)
            }
            listener.from = nil
        }
        return Taken(listener: listener, change: change, initial: initial, span: span)
    }

    /// Tells one taken notice on this thread; returns how many callbacks were made (a query
    /// listener's first notice and a change may be told together). `judged`: the query's
    /// outcome when its round judged it already (`SharedJudging`).
    private func tell(_ token: Int64, _ work: Taken, judged: QueryWatch.Outcome?? = nil) -> Int {
        var calls = 0
        var text: String? = nil
        if let initial = work.initial {
            text = Notice.query(initial, change: nil, owner: work.listener.owner)
        }
        if let change = work.change {
            if let query = work.listener.query, let store {
                // A query that cannot run now (a Smart SQL time limit) is judged at the next change.
                if let outcome = judged ?? (try? query.judge(change, store)) {
                    let first = text
                    text = Notice.query(outcome, change: change, owner: work.listener.owner)
                    if let first, begin(token, work.listener) {
                        asCallback { work.listener.deliver(first) }
                        calls += 1
                    }
                }
            } else if let observe = work.listener.observe {
                if begin(token, work.listener) { observe(change) }
            } else if work.listener.query == nil {
                if let span = work.span, let shared = lock.withLock({ lastSoupNotice?.span == span ? lastSoupNotice?.text : nil }) {
                    text = shared
                } else {
                    let built = Notice.soup(change, soup: work.listener.soup, owner: work.listener.owner)
                    if let span = work.span { lock.withLock { lastSoupNotice = (span, built) } }
                    text = built
                }
            }
        }
        if let text, begin(token, work.listener) {
            asCallback { work.listener.deliver(text) }
            calls += 1
        }
        lock.withLock {
            running[token] = nil
            calling[token] = nil
            if work.listener.query?.gone == true { work.listener.gone = true }
            if text != nil { work.listener.lastSent = Clock.monotonicMillis() }
            lock.broadcast()
            // Commits that came during the call.
            if listeners[token] != nil && work.listener.hasNotice { enqueue(token) }
        }
        return calls
    }

    /// Before a call of a taken listener: false when it was removed since it was taken (no call
    /// then); otherwise it is marked calling until its `tell` ends.
    private func begin(_ token: Int64, _ listener: Listener) -> Bool {
        let me = pthread_self()
        return lock.withLock {
            guard listeners[token] === listener else { return false }
            calling[token] = me
            return true
        }
    }

    /// Tells a round's notices in order, its query listeners that share a soup and a change
    /// judged together first.
    private func tellRound(_ steps: [Step]) {
        var judged: [Int64: QueryWatch.Outcome?] = [:]
        if let store {
            var members: [SharedJudging.Member] = []
            for case .tell(let token, let taken) in steps {
                guard let query = taken.listener.query, let change = taken.change, let shared = query.shared(change, store) else { continue }
                members.append(SharedJudging.Member(token: token, query: query, shared: shared))
            }
            if members.count > 1 { judged = SharedJudging.judge(members, store) }
        }
        for step in steps {
            switch step {
            case .tell(let token, let taken): _ = tell(token, taken, judged: judged[token])
            case .ready(let ready): asCallback { ready() }
            }
        }
    }

    private func loop() {
        // Notices yield to writes: on a busy machine the notifier falls behind and merges
        // commits (one notice each), rather than taking the writer's CPU.
        // (who 0 is the calling thread on Linux.)
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, ChangeListeners.niceness)
        var nextPoll = Clock.monotonicMillis() + ChangeListeners.pollMs
        while true {
            let work: Work = lock.withLock {
                while true {
                    if closed { return .stop }
                    takeInbox()
                    var now = Clock.monotonicMillis()
                    if now < gatherUntil {
                        _ = lock.wait(deadline: ConditionLock.deadline(afterMs: gatherUntil - now))
                        continue
                    }
                    for (token, at) in delayed where at <= now {
                        delayed[token] = nil
                        enqueue(token)
                    }
                    // Every notice due now is taken in this one pass of the lock: a round.
                    var round: [Step] = []
                    while let token = dequeue() {
                        // A listener in a call is queued again when the call ends.
                        guard let listener = listeners[token], listener.hasNotice, running[token] == nil else { continue }
                        let dueAt = listener.lastSent + listener.intervalMs
                        if now < dueAt {
                            delayed[token] = dueAt
                            continue
                        }
                        // Observers are the library's: never buffered.
                        if listener.observe == nil, let buffering = buffered[listener.owner] {
                            // Its handle sends it; queued again after that send if still pending.
                            guard !buffering.signalled else { continue }
                            buffered[listener.owner]?.signalled = true
                            if let ready = buffering.ready { round.append(.ready(ready)) }
                            continue
                        }
                        if let taken = take(token, at: now) { round.append(.tell(token, taken)) }
                    }
                    if !round.isEmpty {
                        telling = true
                        return .round(round)
                    }
                    // The queue is empty: commits that came meanwhile start a gathering.
                    if telling {
                        telling = false
                        if committedWhileTelling {
                            committedWhileTelling = false
                            now = Clock.monotonicMillis()
                            gatherUntil = now + ChangeListeners.gatherMs
                        }
                    }
                    // The queue is empty: the commits every listener has heard go (once per round,
                    // not per notice: finding them reads every listener).
                    if log.count > 0 { trimLog() }
                    if !listeners.isEmpty && now >= nextPoll {
                        nextPoll = now + pollInterval
                        return .poll
                    }
                    let wake = [delayed.values.min(), listeners.isEmpty ? nil : nextPoll].compactMap { $0 }.min()
                    // Set with the inbox's last look, under its lock: a commit after the look sees
                    // it (see didCommit).
                    let wakers = idleHearing()
                    if inboxLock.withLock({ () -> Bool in
                        if !inbox.isEmpty { return true }
                        wakeFor = wakers
                        return false
                    }) { continue }
                    defer { inboxLock.withLock { wakeFor = nil } }
                    if let wake {
                        _ = lock.wait(deadline: ConditionLock.deadline(afterMs: max(1, wake - now)))
                    } else {
                        _ = lock.wait()
                    }
                }
            }
            switch work {
            case .stop:
                return
            case .round(let steps):
                tellRound(steps)
            case .poll:
                pollOthers()
            }
        }
    }

    /// Queues a listener that may have a notice due (under the lock); once.
    private func enqueue(_ token: Int64, signal: Bool = true) {
        if queued.insert(token).inserted {
            queue.append(token)
            if signal { lock.signal() }
        }
    }

    private func dequeue() -> Int64? {
        guard queueHead < queue.count else { return nil }
        let token = queue[queueHead]
        queueHead += 1
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 1024 && queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        queued.remove(token)
        return token
    }

    // MARK: other processes

    /// Takes the file's soup counts as the point from which other processes' commits are told
    /// (before the first listener is registered: nothing committed after it is missed).
    private func startWatchingOthers(_ store: SmartStore) {
        pollLock.withLock {
            guard seen == nil else { return }
            store.versions.setWatched(true)
            seen = (try? store.readers.withReader(lane: .notifier) { db in SoupVersions.read(db) }) ?? [:]
        }
    }

    /// No listener left: this process's counts need not be kept.
    private func stopWatchingOthers() {
        pollLock.withLock {
            seen = nil
            store?.versions.setWatched(false)
        }
    }

    private func pollOthers() {
        guard let store else { return }
        let soups: [String] = pollLock.withLock {
            // A listener added while the last one was being removed: watch from now.
            guard var before = seen else {
                store.versions.setWatched(true)
                seen = (try? store.readers.withReader(lane: .notifier) { db in SoupVersions.read(db) }) ?? [:]
                return []
            }
            guard let now = try? store.readers.withReader(lane: .notifier, { db in SoupVersions.read(db) }) else { return [] }
            let changed = store.versions.othersChanged(since: &before, now: now)
            seen = before
            return changed
        }
        guard !soups.isEmpty else { return }
        // Another process may have added or removed soups.
        store.adoptCatalogFromFile()
        var parts: [String: StoreChange.SoupChange] = [:]
        for soup in soups { parts[soup] = StoreChange.SoupChange(unknown: true) }
        let sequence = lock.withLock { lastSequence }
        didCommit(StoreChange(sequence: sequence, origin: .otherProcess, soups: parts))
    }

    // MARK: StoreCompanion

    package func didCommit(_ change: StoreChange) {
        // No listener: none can hear it (one added later hears only later commits).
        guard listening.load(ordering: .sequentiallyConsistent) else { return }
        let wake = inboxLock.withLock { () -> Bool in
            inbox.append(change)
            // A notifier far behind: the commits it has not taken in become one (as the log's
            // oldest half does), so memory stays flat.
            if inbox.count > ChangeListeners.logLimit {
                inbox = [inbox.dropFirst().reduce(inbox[0]) { $0.merged(with: $1) }]
            }
            guard let wakers = wakeFor, wakers.hears(change) else { return false }
            wakeFor = nil
            return true
        }
        // The notifier is in its wait (it holds `lock` until then).
        if wake { lock.withLock { lock.broadcast() } }
    }

    /// What the listeners with no notice pending hear (under `lock`); nil: none.
    private func idleHearing() -> Hearing? {
        var soups = Set<String>()
        var any = false
        for listener in listeners.values where listener.from == nil && !listener.gone {
            switch listener.hearing {
            case .all: return .all
            case .soups(let heard): soups.formUnion(heard)
            }
            any = true
        }
        return any ? .soups(soups) : nil
    }

    /// Moves the inbox's commits to the log, marking the listeners that hear them (under `lock`).
    private func takeInbox() {
        inboxLock.withLock { swap(&inbox, &taking) }
        guard !taking.isEmpty else { return }
        for change in taking where !closed { note(change) }
        taking.removeAll(keepingCapacity: true)
    }

    /// One commit taken in: the listeners that hear it and had nothing pending are marked (under
    /// `lock`).
    private func note(_ change: StoreChange) {
        if telling { committedWhileTelling = true }
        lastSequence = max(lastSequence, change.sequence)
        let index = logStart + Int64(log.count)
        var heard = false, marked = false
        for (token, listener) in listeners {
            // A listener with a notice pending hears this commit with it: it only matters
            // whether someone hears it (the log then keeps it).
            if heard && listener.from != nil { continue }
            guard listener.hears(change) else { continue }
            heard = true
            guard listener.from == nil else { continue }
            listener.from = index
            enqueue(token, signal: false)
            marked = true
        }
        guard heard else { return }
        log.append(change)
        if marked { lock.signal() }
        if log.count > ChangeListeners.logLimit { trimLog() }
    }

    /// Drops the commits every listener has heard, and merges the oldest half into one when a
    /// listener far behind keeps the log long (under the lock).
    private func trimLog() {
        let oldest = listeners.values.lazy.compactMap(\.from).min() ?? (logStart + Int64(log.count))
        if oldest > logStart {
            log.removeFirst(Int(oldest - logStart))
            logStart = oldest
        }
        guard log.count > ChangeListeners.logLimit else { return }
        let half = log.count / 2
        let merged = log[1..<half].reduce(log[0]) { $0.merged(with: $1) }
        log.replaceSubrange(0..<half, with: [merged])
        let newStart = logStart + Int64(half - 1)
        for listener in listeners.values { if let from = listener.from, from < newStart { listener.from = newStart } }
        logStart = newStart
        logFolds += 1
    }

    package func handleClosing(_ owner: Int, last: Bool) throws {
        let me = pthread_self()
        let joining: pthread_t? = lock.withLock {
            if last { closed = true }
            listeners = listeners.filter { !last && $0.value.owner != owner }
            if last { buffered.removeAll() } else { buffered[owner] = nil }
            lock.broadcast()
            // Calls in progress of the listeners removed; when the store closes, all the notifier's
            // work (a round's judging reads the store).
            if last {
                while running.contains(where: { pthread_equal($0.value, me) == 0 }) { _ = lock.wait() }
            } else {
                while calling.contains(where: { listeners[$0.key] == nil && pthread_equal($0.value, me) == 0 }) { _ = lock.wait() }
            }
            guard last, let thread, pthread_equal(thread, me) == 0 else { return nil }
            self.thread = nil
            return thread
        }
        if let joining { pthread_join(joining, nil) }
        if lock.withLock({ listeners.isEmpty }) { stopWatchingOthers() }
    }

    package func hostWillUpsert(_ entries: [JSON], soup: SoupInfo, inside db: Connection) throws {}
    package func hostWillReplace(_ entry: JSON, existing: Int64, soup: SoupInfo, stored: StoredEntry) throws {}

    package var isCallbackThread: Bool {
        if insideCallback { return true }
        return lock.withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    package func paused<T>(_ body: () throws -> T) throws -> T { try body() }
}
