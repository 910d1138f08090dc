import Glibc
import SyncStoreCore
import SyncStoreSupport

/// Live sync (docs/sync.md#live-sync): the store's named syncs run by themselves. At start, and
/// after each time the server was unreachable, every sync up then every sync down runs once
/// ("catching up"); afterwards a host write to a soup a sync up pushes runs that sync up once
/// the writes have paused for the debounce; the sync downs run again every `pullIntervalMs`
/// when set. A run that fails with a retryable error (the server unreachable, 5xx, 429) makes the
/// state "offline" until a retry time that doubles each time, with jitter, up to `retryMaxMs`;
/// any other failure is reported and waits for the next change. Runs are the manager's own
/// (`reSync`): one at a time per sync, the same states and callbacks, interruption-safe.
/// One live sync per store; its loop has a thread of its own, which calls the host's callback.
package final class LiveSync: @unchecked Sendable {
    package enum Phase: String { case connecting, live, offline, catchingUp, stopped }

    package struct Options {
        /// The syncs to run, by name; nil: every named sync of the store.
        var syncs: [String]?
        var debounceMs: Int64 = 300
        var retryMinMs: Int64 = 1000
        var retryMaxMs: Int64 = 60_000
        /// 0: sync downs run only when catching up.
        var pullIntervalMs: Int64 = 0
        /// SOQL sync downs are kept current by Change Data Capture events (docs/sync.md#change-events).
        var changeEvents = true

        private static let keys: Set<String> = ["syncs", "debounceMs", "retryMinMs", "retryMaxMs", "pullIntervalMs", "changeEvents"]

        package static func parse(_ json: String?) throws -> Options {
            var options = Options()
            guard let json, !json.isEmpty else { return options }
            let doc = try JSONDocument.parse(json, what: "live sync options")
            guard doc.root.isObject else { throw StoreError.argument("Live sync options must be a JSON object") }
            for (key, _) in doc.root.members where !keys.contains(key) {
                throw StoreError.argument("Unknown live sync option \"\(key)\": use \(keys.sorted().joined(separator: ", "))")
            }
            if let list = doc.root["syncs"], !list.isNull {
                guard list.isArray, list.elements.allSatisfy({ $0.string != nil }) else {
                    throw StoreError.argument("\"syncs\" must be an array of sync names")
                }
                options.syncs = list.elements.compactMap(\.string)
            }
            func milliseconds(_ key: String, _ range: ClosedRange<Int64>) throws -> Int64? {
                guard let value = doc.root[key], !value.isNull else { return nil }
                guard let n = value.int64, range.contains(n) else {
                    throw StoreError.argument("\"\(key)\" must be an integer from \(range.lowerBound) to \(range.upperBound) (milliseconds)")
                }
                return n
            }
            options.debounceMs = try milliseconds("debounceMs", 0...3_600_000) ?? options.debounceMs
            options.retryMinMs = try milliseconds("retryMinMs", 10...3_600_000) ?? options.retryMinMs
            options.retryMaxMs = try milliseconds("retryMaxMs", 10...86_400_000) ?? options.retryMaxMs
            options.pullIntervalMs = try milliseconds("pullIntervalMs", 0...86_400_000) ?? options.pullIntervalMs
            if let value = doc.root["changeEvents"], !value.isNull {
                guard let flag = value.bool else { throw StoreError.argument("\"changeEvents\" must be true or false") }
                options.changeEvents = flag
            }
            if options.retryMaxMs < options.retryMinMs { options.retryMaxMs = options.retryMinMs }
            return options
        }
    }

    private unowned let manager: SyncManager
    private let lock = ConditionLock()
    private var thread: pthread_t?
    private var stopping = false
    /// The loop has returned (its thread is still to be joined).
    private var loopEnded = false
    private var phase = Phase.stopped
    private var nextRetryAt: Int64?
    private var lastError: String?
    private var options = Options()
    private var owner = 0
    private var callback: SyncCallback?
    /// The sync ups to run and the soups they push; the sync downs.
    private var ups: [(id: Int64, soup: String)] = []
    private var downs: [Int64] = []
    /// The change observer that tells live sync of host writes (this process's and others').
    private var observer: Int64?
    /// When the first host write not yet pushed came (monotonic ms), and the last one.
    private var firstChange: Int64?
    private var lastChange: Int64 = 0
    /// Change Data Capture for the SOQL sync downs, when on.
    private var stream: ChangeStream?
    /// The stream has news: changes to apply, or a state of its own to report.
    private var streamNews = false
    /// The last state event told.
    private var lastReported: String?

    init(manager: SyncManager) { self.manager = manager }

    /// Starts live sync for handle `owner`. STATE when it is on already; NOT_FOUND for a sync
    /// name the store does not have; ARGUMENT when there is no sync to run.
    package func start(_ options: Options, owner: Int, callback: SyncCallback?) throws {
        let all = try manager.states.all()
        let chosen: [SyncState]
        if let names = options.syncs {
            chosen = try names.map { name in
                guard let state = all.first(where: { $0.name == name }) else { throw StoreError.notFound("No sync named '\(name)'") }
                return state
            }
        } else {
            chosen = all.filter { !($0.name ?? "").isEmpty }
        }
        guard !chosen.isEmpty else {
            throw StoreError.argument("Live sync has no sync to run: name the syncs (\"syncs\") or create named syncs first")
        }
        reapEnded()
        let stream = try options.changeEvents ? changeStream(chosen.filter { $0.kind == .syncDown }, options) : nil
        try lock.withLock {
            // The loop has ended and told "stopped": its joiner is finishing, in moments.
            let deadline = ConditionLock.deadline(afterMs: 2000)
            while thread != nil && stopping && loopEnded {
                if !lock.wait(deadline: deadline) { break }
            }
            if thread != nil && stopping {
                throw StoreError(.busy, "Live sync is stopping; start it again once the stop has returned", retryable: true)
            }
            guard thread == nil else { throw StoreError(.state, "Live sync is on already; stop it first") }
            self.options = options
            self.owner = owner
            self.callback = callback
            ups = chosen.filter { $0.kind == .syncUp }.map { ($0.id, $0.soupName) }
            downs = chosen.filter { $0.kind == .syncDown }.map(\.id)
            stopping = false
            loopEnded = false
            firstChange = nil
            nextRetryAt = nil
            lastError = nil
            phase = .connecting
            self.stream = stream
            streamNews = false
            guard let started = startThread({ [self] in loop() }) else {
                phase = .stopped
                throw StoreError(.busy, "The live sync thread could not be started (the system refused a new thread); retry later", retryable: true)
            }
            thread = started
        }
        // Host writes, of this process or another, wake the sync ups (a sync's own do not).
        do {
            let token = try ChangeListeners.of(manager.store).addObserver(store: manager.store, owner: owner) { [weak self] change in
                if case .engine = change.origin { return }
                self?.hostChanged(change.soups.keys)
            }
            lock.withLock { observer = token }
        } catch {
            stop()
            throw error
        }
    }

    /// The change stream of the SOQL sync downs among `downs` (nil: none, or no remote). A sync
    /// whose query cannot judge a record alone, or whose records are not keyed by `Id`, catches
    /// up on any event of its object instead of applying the ids.
    private func changeStream(_ downs: [SyncState], _ options: Options) throws -> ChangeStream? {
        var routes: [ChangeStream.Route] = []
        for state in downs {
            guard case .down(.builtIn(let target as SoqlTarget))? = try? state.target.parsed.get(),
                  let object = target.rewriter.object else { continue }
            routes.append(.init(syncId: state.id, object: object, byId: target.idFieldName == "Id",
                                judgesAlone: target.rewriter.judgesRecordsAlone))
        }
        guard !routes.isEmpty, let client = manager.streamingClient() else { return nil }
        let marks = ReplayMarks(store: manager.store, instance: client.instance)
        return try ChangeStream(client: client, routes: routes, marks: marks, ownClient: manager.streamClientName,
                                retryMinMs: options.retryMinMs, retryMaxMs: options.retryMaxMs) { [weak self] in
            self?.streamChanged()
        }
    }

    private func streamChanged() {
        lock.withLock {
            streamNews = true
            lock.signal()
        }
    }

    /// Stops live sync: no run starts after this returns (a run in progress ends by itself and
    /// converges as any run does); the callback's last event is "stopped". No-op when it is off.
    package func stop() {
        // The thread stays recorded until it is joined: a start meanwhile is told it is stopping.
        let joining: pthread_t? = lock.withLock {
            guard let thread else { return nil }
            stopping = true
            lock.broadcast()
            return pthread_equal(thread, pthread_self()) != 0 ? nil : thread
        }
        guard let joining else { return }
        joined(joining)
    }

    /// Joins the loop's ended thread and forgets it and its change observer.
    private func joined(_ ended: pthread_t) {
        pthread_join(ended, nil)
        let token: Int64? = lock.withLock {
            if let thread, pthread_equal(thread, ended) != 0 { self.thread = nil }
            lock.broadcast()
            defer { observer = nil }
            return observer
        }
        // Gone already when the handle that added it closed first.
        if let token { try? ChangeListeners.of(manager.store).remove(token) }
    }

    /// Joins a loop that ended by a stop from its own callback (nothing could join it then).
    private func reapEnded() {
        let ended: pthread_t? = lock.withLock {
            guard loopEnded, let thread, pthread_equal(thread, pthread_self()) == 0 else { return nil }
            return thread
        }
        guard let ended else { return }
        joined(ended)
    }

    /// Whether live sync runs for handle `owner` (its close stops it).
    package func isOwned(by owner: Int) -> Bool { lock.withLock { thread != nil && !loopEnded && self.owner == owner } }

    /// Whether the caller is the live sync thread (a callback there must not close the store).
    package var isCurrentThread: Bool { lock.withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

    /// A host write committed to `soups`: the sync ups that push them run after the debounce.
    private func hostChanged(_ soups: Dictionary<String, StoreChange.SoupChange>.Keys) {
        lock.withLock {
            guard thread != nil, !stopping, !loopEnded, ups.contains(where: { soups.contains($0.soup) }) else { return }
            let now = Clock.monotonicMillis()
            if firstChange == nil { firstChange = now }
            lastChange = now
            lock.signal()
        }
    }

    /// {"state", "nextRetryAt"? (epoch ms), "error"?, "syncs": [ids]}.
    package var stateJSON: String { lock.withLock { event(phase) } }

    /// The state of a store whose live sync never started.
    package static let stoppedStateJSON = #"{"event":"state","state":"stopped","syncs":[]}"#

    private func event(_ phase: Phase) -> String {
        let doc = JSONDocument.object()
        doc.root.set("event", owned: JSONMake.string("state"))
        doc.root.set("state", owned: JSONMake.string(phase.rawValue))
        if let stream, phase != .stopped { doc.root.set("changeEvents", owned: stream.stateJSON().root.retained()) }
        if phase == .offline, let nextRetryAt {
            doc.root.set("nextRetryAt", owned: JSONMake.int(Clock.nowMillis() + max(0, nextRetryAt - Clock.monotonicMillis())))
        }
        if let lastError { doc.root.set("error", owned: JSONMake.string(lastError)) }
        let ids = JSONDocument.array()
        for id in ups.map(\.id) + downs { ids.root.append(owned: JSONMake.int(id)) }
        doc.root.set("syncs", owned: ids.root.retained())
        return doc.root.dump()
    }

    /// Reports state `next`; `unlessTold`: not when the last report said exactly this (the
    /// stream's state changed back, or was told already with a round's "live").
    private func report(_ next: Phase, unlessTold: Bool = false) {
        let (text, callback): (String?, SyncCallback?) = lock.withLock {
            phase = next
            let text = event(next)
            if unlessTold && text == lastReported { return (nil, nil) }
            lastReported = text
            return (text, self.callback)
        }
        if let text { callback?(text) }
    }

    // MARK: the loop

    private enum Step { case catchUp, push, pull, apply, report, stop }

    private func loop() {
        let stream = lock.withLock { self.stream }
        if let stream, !stream.start() {
            lock.withLock { lastError = "The change stream's thread could not be started; the syncs run at catch-ups and pulls only" }
        }
        report(.connecting)
        // The first catch-up reads what changed before the stream's first subscription (waited
        // for at most 5 s, in slices: a stop is seen within one).
        if let stream {
            for _ in 0..<50 where !isStopping {
                if stream.waitFirstSubscription(ms: 100) { break }
            }
            stream.firstCatchUpStarts()
        }
        var catchingUp = true
        var attempt = 0
        var nextPull: Int64? = nil
        while true {
            let step: Step = lock.withLock {
                while true {
                    if stopping { return .stop }
                    let now = Clock.monotonicMillis()
                    if let retry = nextRetryAt {
                        if now >= retry { return .catchUp }
                        _ = lock.wait(deadline: ConditionLock.deadline(afterMs: max(1, retry - now)))
                        continue
                    }
                    if catchingUp { return .catchUp }
                    // Local edits due go out first: applying server changes never holds them back.
                    var wake: Int64? = nil
                    if firstChange != nil {
                        let due = lastChange + options.debounceMs
                        if now >= due { return .push }
                        wake = due
                    }
                    if streamNews {
                        streamNews = false
                        if stream?.hasPending == true { return .apply }
                        if phase != .connecting { return .report }
                    }
                    if let pull = nextPull {
                        if now >= pull { return .pull }
                        wake = min(wake ?? pull, pull)
                    }
                    if let wake {
                        _ = lock.wait(deadline: ConditionLock.deadline(afterMs: max(1, wake - now)))
                    } else {
                        _ = lock.wait()
                    }
                }
            }
            let (pushes, pulls): ([Int64], [Int64]) = lock.withLock {
                switch step {
                case .stop, .apply, .report: return ([], [])
                case .catchUp: return (ups.map(\.id), downs)
                case .push: return (ups.map(\.id), [])
                case .pull: return ([], downs)
                }
            }
            if step == .stop { break }
            if step == .report {
                report(phaseNow, unlessTold: true)
                continue
            }
            if step == .catchUp && !(attempt == 0 && phaseIs(.connecting)) { report(.catchingUp) }
            if step == .push || step == .catchUp { lock.withLock { firstChange = nil } }
            var failure: (message: String, retryable: Bool)? = nil
            for id in pushes + pulls {
                guard failure?.retryable != true, !isStopping else { break }
                if let failed = run(id) { failure = failure ?? failed; if failed.retryable { failure = failed } }
            }
            if step == .apply, let stream { failure = apply(stream) }
            if isStopping { break }
            if let failure, failure.retryable {
                attempt += 1
                let delay = backoff(attempt)
                lock.withLock {
                    nextRetryAt = Clock.monotonicMillis() + delay
                    lastError = failure.message
                    // The writes not pushed are pushed by the retry.
                    if step == .push { firstChange = firstChange ?? lastChange }
                }
                report(.offline)
                continue
            }
            attempt = 0
            catchingUp = false
            lock.withLock {
                nextRetryAt = nil
                lastError = failure?.message
            }
            // Changes that arrived during the runs are applied next.
            if stream?.hasPending == true { lock.withLock { streamNews = true } }
            if options.pullIntervalMs > 0 && (step == .catchUp || step == .pull) {
                nextPull = Clock.monotonicMillis() + options.pullIntervalMs
            }
            report(.live)
        }
        stream?.stop()
        report(.stopped)
        lock.withLock { loopEnded = true }
    }

    private var isStopping: Bool { lock.withLock { stopping } }
    private var phaseNow: Phase { lock.withLock { phase } }

    /// Applies what the change events asked, each sync as one run: a catch-up is the sync's
    /// reSync then a ghost cleaning; ids are fetched or removed. The replay marks taken with the
    /// changes are saved once all of them are done; what failed retryably is put back.
    private func apply(_ stream: ChangeStream) -> (message: String, retryable: Bool)? {
        let (changes, marks) = stream.take()
        var failure: (message: String, retryable: Bool)? = nil
        var left: [Int64: RecordChanges] = [:]
        for (id, change) in changes.sorted(by: { $0.key < $1.key }) {
            if failure?.retryable == true || isStopping {
                left[id] = change
                continue
            }
            var failed: (message: String, retryable: Bool)? = nil
            if change.reSync { failed = run(id) }
            if failed == nil && change.cleanGhosts { failed = cleanGhosts(id) }
            if failed == nil && !(change.fetch.isEmpty && change.remove.isEmpty) {
                let (owner, callback) = lock.withLock { (self.owner, self.callback) }
                failed = run(id) { [manager] in
                    try manager.applyChanges(id: id, fetch: change.fetch.sorted(), remove: change.remove.sorted(),
                                             seenThrough: change.seenThrough, owner: owner) { text in
                        callback?("{\"event\":\"run\",\"sync\":" + text + "}")
                    }
                }
            }
            if let failed {
                failure = failed.retryable ? failed : (failure ?? failed)
                if failed.retryable { left[id] = change }
            }
        }
        if left.isEmpty {
            do { try stream.applied(marks) } catch let error as StoreError { return (error.message, error.retryable) } catch { return ("\(error)", false) }
        } else {
            stream.putBack(left)
        }
        return failure
    }

    /// A ghost cleaning of sync `id`, waited for; nil when it ended DONE.
    private func cleanGhosts(_ id: Int64) -> (message: String, retryable: Bool)? {
        let owner = lock.withLock { self.owner }
        let ending = GhostEnding()
        do {
            // Its report is not a sync state: not told as a run (a failure is the state's error).
            try manager.cleanResyncGhosts(id: id, owner: owner) { text in ending.take(text) }
        } catch let error as StoreError {
            return (error.message, error.retryable)
        } catch {
            return ("\(error)", false)
        }
        return ending.wait(id) { [weak self] in self?.isStopping ?? true }
    }

    /// The terminal report of a ghost cleaning, handed from its callback to the loop.
    private final class GhostEnding: @unchecked Sendable {
        private let lock = ConditionLock()
        private var result: (status: String, message: String, retryable: Bool)?

        func take(_ text: String) {
            guard let doc = try? JSONDocument.parse(text, what: "ghost report"),
                  let status = doc.root["status"]?.string, status != "RUNNING" else { return }
            lock.withLock {
                result = (status, doc.root["error"]?.string ?? "", doc.root["errorRetryable"]?.bool ?? false)
                lock.broadcast()
            }
        }

        /// Exactly one terminal report comes (the manager's promise); a stop of live sync ends
        /// the wait sooner (the cleaning goes on by itself and is told as stopped).
        func wait(_ id: Int64, stopping: () -> Bool) -> (message: String, retryable: Bool)? {
            lock.withLock {
                while result == nil {
                    if stopping() { return ("Live sync stopped while the ghosts of sync \(id) were being cleaned", true) }
                    _ = lock.wait(deadline: ConditionLock.deadline(afterMs: 200))
                }
                guard let result, result.status != "DONE" else { return nil }
                return (result.message.isEmpty ? "Cleaning the ghosts of sync \(id) ended \(result.status)" : result.message, result.retryable)
            }
        }
    }
    private func phaseIs(_ p: Phase) -> Bool { lock.withLock { phase == p } }

    /// The wait before retry `attempt` (1, 2, ...): doubling from retryMinMs up to retryMaxMs,
    /// then a random part of it taken off (full jitter on the upper half), so clients that went
    /// offline together do not come back together.
    private func backoff(_ attempt: Int) -> Int64 {
        let base = min(options.retryMaxMs, options.retryMinMs << Int64(min(attempt - 1, 30)))
        return base / 2 + Int64.random(in: 0...max(0, base / 2))
    }

    /// Runs sync `id` once and waits for it; nil when it ended DONE, else its failure. A sync
    /// already running (started by the host) is waited for, then run.
    private func run(_ id: Int64, start: (() throws -> Void)? = nil) -> (message: String, retryable: Bool)? {
        let (owner, callback) = lock.withLock { (self.owner, self.callback) }
        while !isStopping {
            do {
                if let start { try start() } else {
                    try manager.reSync(id: id, owner: owner) { text in
                        callback?("{\"event\":\"run\",\"sync\":" + text + "}")
                    }
                }
            } catch let error as StoreError where error.code == .busy {
                _ = try? manager.wait(id: id, timeoutMs: 200)
                continue
            } catch let error as StoreError {
                return (error.message, error.retryable)
            } catch {
                return ("\(error)", false)
            }
            // Waited in slices: a stop is seen within one.
            while !isStopping {
                guard let state = try? manager.wait(id: id, timeoutMs: 200) else { continue }
                switch state.status {
                case .done: return nil
                case .stopped: return ("Sync \(id) was stopped", true)
                default: return (state.error.isEmpty ? "Sync \(id) failed" : state.error, state.errorRetryable)
                }
            }
        }
        return nil
    }
}
