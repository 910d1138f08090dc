import Glibc
import SyncStoreSupport
import SyncStoreCore

/// Change Data Capture for live sync (docs/sync.md#change-events): a thread of its own holds a
/// Streaming API long poll on the change channels of the SOQL sync downs' objects and turns
/// each event into `RecordChanges` of the syncs it concerns. It applies nothing itself: live
/// sync's loop takes the changes (`take`), applies them as runs of those syncs, then saves the
/// replay marks taken with them. Events of this engine's own writes (their `changeOrigin` names
/// it) are skipped. Reconnects as the server advises, re-handshakes when it forgot the session,
/// backs off with jitter while it cannot be reached, and never spins on a server that answers
/// at once forever.
package final class ChangeStream: @unchecked Sendable {
    /// A sync down whose object's events it follows. `byId`: its entries are keyed by `Id`, so
    /// a deleted record's entry is found by its id; `judgesAlone`: its query can be run on the
    /// ids an event names (else a create or update makes it reSync).
    package struct Route {
        package let syncId: Int64
        package let object: String
        package let byId: Bool
        package let judgesAlone: Bool
    }

    package enum Phase: String { case connecting, live, offline, unavailable, stopped }

    private let client: BayeuxClient
    private let routes: [Route]
    package let channels: [String]
    private let ownOrigin: String
    private let marks: ReplayMarks
    private let retryMinMs: Int64
    private let retryMaxMs: Int64
    /// Tells live sync there is something to apply, or that the stream's state changed (called
    /// with no lock held).
    private let wake: () -> Void

    private let lock = ConditionLock()
    private let cancel = CancelFlag()
    private var thread: pthread_t?
    private var stopping = false
    private var pending: [Int64: RecordChanges] = [:]
    /// The latest replay id received per channel (what a new subscription replays after).
    private var received: [String: Int64] = [:]
    /// Channels the server would not subscribe to (their syncs rely on pulls).
    private var refused: Set<String> = []
    /// When a channel was last refused (a new session tries it again retryMaxMs later).
    private var refusedAt: Int64?
    /// The first handshake and subscriptions were made, or failed.
    private var firstAttemptDone = false
    /// Live sync's first catch-up has started (`firstCatchUpStarts`).
    private var firstCatchUpStarted = false
    private var phase = Phase.connecting
    private var lastError: String?
    private var nextRetryAt: Int64?
    private var events = 0
    private var skipped = 0
    private var lastEventAt: Int64?

    package init(client: BayeuxClient, routes: [Route], marks: ReplayMarks, ownClient: String,
                 retryMinMs: Int64, retryMaxMs: Int64, wake: @escaping () -> Void) throws {
        self.client = client
        self.routes = routes
        self.marks = marks
        self.retryMinMs = retryMinMs
        self.retryMaxMs = retryMaxMs
        self.wake = wake
        ownOrigin = ";client=" + ownClient
        var seen = Set<String>()
        channels = routes.map { ChangeEvent.channel(of: $0.object) }.filter { seen.insert($0.lowercased()).inserted }
        received = try marks.load(channels)
    }

    package func start() -> Bool {
        guard let started = startThread({ [self] in loop() }) else { return false }
        lock.withLock { thread = started }
        return true
    }

    /// Ends the long poll (within about a second: libcurl's progress check) and joins the thread.
    package func stop() {
        let joining: pthread_t? = lock.withLock {
            stopping = true
            lock.broadcast()
            defer { thread = nil }
            return thread
        }
        cancel.cancel()
        if let joining { pthread_join(joining, nil) }
    }

    package var hasPending: Bool { lock.withLock { !pending.isEmpty } }

    /// Waits (at most `ms`) until the first session has subscribed, or failed to: live sync's
    /// first catch-up then reads what changed before the subscription. Whether it has.
    package func waitFirstSubscription(ms: Int64) -> Bool {
        let deadline = ConditionLock.deadline(afterMs: ms)
        return lock.withLock {
            while !firstAttemptDone && !stopping { if !lock.wait(deadline: deadline) { break } }
            return firstAttemptDone || stopping
        }
    }

    /// Live sync's first catch-up starts now. A channel first subscribed after this (the
    /// stream's first attempt failed, or was slow) catches up again once subscribed: a change
    /// committed between that catch-up's queries and the subscription is in neither.
    package func firstCatchUpStarts() { lock.withLock { firstCatchUpStarted = true } }

    /// The changes to apply and the replay marks to save once they are applied.
    package func take() -> (changes: [Int64: RecordChanges], marks: [String: Int64]) {
        lock.withLock {
            defer { pending = [:] }
            return (pending, received)
        }
    }

    /// Changes that could not be applied, kept for the next try under any received since.
    package func putBack(_ changes: [Int64: RecordChanges]) {
        lock.withLock {
            for (id, older) in changes { pending[id, default: RecordChanges()].putBack(older) }
        }
    }

    /// Saves marks after their changes were applied.
    package func applied(_ saved: [String: Int64]) throws { try marks.save(saved) }

    /// The stream's part of the live sync state.
    package func stateJSON() -> JSONDocument {
        lock.withLock {
            let doc = JSONDocument.object()
            doc.root.set("state", owned: JSONMake.string(phase.rawValue))
            let list = JSONDocument.array()
            for channel in channels where !refused.contains(channel) { list.root.append(owned: JSONMake.string(channel)) }
            doc.root.set("channels", owned: list.root.retained())
            doc.root.set("events", owned: JSONMake.int(Int64(events)))
            if skipped > 0 { doc.root.set("skipped", owned: JSONMake.int(Int64(skipped))) }
            if let lastEventAt { doc.root.set("lastEventAt", owned: JSONMake.int(lastEventAt)) }
            if phase == .offline, let nextRetryAt {
                doc.root.set("nextRetryAt", owned: JSONMake.int(Clock.nowMillis() + max(0, nextRetryAt - Clock.monotonicMillis())))
            }
            if let lastError { doc.root.set("error", owned: JSONMake.string(lastError)) }
            return doc
        }
    }

    // MARK: the loop

    private var isStopping: Bool { lock.withLock { stopping } }

    private func set(_ next: Phase, error: String? = nil, retryAt: Int64? = nil) {
        let changed: Bool = lock.withLock {
            let changed = phase != next || error != nil
            phase = next
            if let error { lastError = error } else if next == .live { lastError = nil }
            nextRetryAt = retryAt
            return changed
        }
        if changed { wake() }
    }

    private func loop() {
        var failures = 0
        var quick = 0
        while !isStopping {
            var handshaking = false
            do {
                if !client.isHandshaken {
                    set(.connecting)
                    handshaking = true
                    try client.handshake(cancel: cancel)
                    handshaking = false
                    try subscribeAll()
                    lock.withLock { firstAttemptDone = true; lock.broadcast() }
                    if hasPending { wake() }
                }
                let started = Clock.monotonicMillis()
                if let at = lock.withLock({ refusedAt }), started - at >= retryMaxMs {
                    // A new session subscribes to the refused channels again.
                    client.disconnect(cancel: cancel)
                    lock.withLock { refusedAt = nil }
                    continue
                }
                let deliveries = try client.connect(cancel: cancel)
                failures = 0
                set(.live)
                let readable = receive(deliveries)
                // A connect held for nothing should have taken the server's hold time: one that
                // keeps answering at once is slowed down, never followed in a loop. With nothing
                // readable the pause grows as a failure's; with events (a flood) it stays short.
                quick = Clock.monotonicMillis() - started < 50 ? quick + 1 : 0
                var pause = client.intervalMs
                if quick > 1 {
                    pause = max(pause, readable == 0 ? backoff(quick - 1) : min(retryMinMs, 20 * Int64(quick)))
                }
                if pause > 0 { sleep(pause) }
            } catch let gone as BayeuxClient.Rehandshake {
                // Once at once; a server that keeps forgetting the session is backed off from.
                failures += 1
                if failures > 1 { offline(gone.message, attempt: failures - 1) }
            } catch let error as StoreError {
                if isStopping { break }
                // A failed subscribe, or a connect whose answer was lost (with the events the
                // server counts as delivered): a new session replays from the last event received.
                client.forget()
                // No Streaming API at this server: nothing to retry.
                if handshaking, error.message.includes("HTTP 404") {
                    lock.withLock { firstAttemptDone = true; lock.broadcast() }
                    set(.unavailable, error: "The server has no Streaming API (\(error.message)); the syncs run at catch-ups and pulls only")
                    lock.withLock { while !stopping { _ = lock.wait() } }
                    break
                }
                failures += 1
                offline(error.message, attempt: failures)
            } catch {
                client.forget()
                failures += 1
                offline("\(error)", attempt: failures)
            }
        }
        if client.isHandshaken { client.disconnect(cancel: nil) }
        set(.stopped)
    }

    private func offline(_ message: String, attempt: Int) {
        lock.withLock { firstAttemptDone = true; lock.broadcast() }
        let delay = backoff(attempt)
        set(.offline, error: message, retryAt: Clock.monotonicMillis() + delay)
        sleep(delay)
    }

    /// Doubling from retryMinMs up to retryMaxMs, jitter on the upper half (as live sync's).
    private func backoff(_ attempt: Int) -> Int64 {
        let base = min(retryMaxMs, retryMinMs << Int64(min(max(attempt, 1) - 1, 30)))
        return base / 2 + Int64.random(in: 0...max(0, base / 2))
    }

    /// Waits `ms` unless stopped first.
    private func sleep(_ ms: Int64) {
        let until = Clock.monotonicMillis() + ms
        lock.withLock {
            while !stopping {
                let now = Clock.monotonicMillis()
                if now >= until { return }
                _ = lock.wait(deadline: ConditionLock.deadline(afterMs: until - now))
            }
        }
    }

    private func subscribeAll() throws {
        for channel in channels {
            let known = lock.withLock { received[channel] }
            let from = known ?? -1
            switch try client.subscribe(channel, replayFrom: from, cancel: cancel) {
            case .subscribed:
                lock.withLock {
                    _ = refused.remove(channel)
                    // A channel streamed before whose position was lost (-1): what changed since,
                    // deletions included, is found by catching up, once subscribed, so that every
                    // change is before the catch-up or after this. One never streamed is caught
                    // up by live sync's own first catch-up, which waits for this subscription,
                    // or, when that catch-up did not wait for it, by one more.
                    if from == -1 && (known != nil || firstCatchUpStarted) { catchUp(channel) }
                }
                // From now on the channel has been streamed: a restart before its first event
                // knows it lost its position.
                if known == nil {
                    try? marks.save([channel: -1])
                    lock.withLock { if received[channel] == nil { received[channel] = -1 } }
                }
            case .replayInvalid(let message):
                // The events after the mark are gone: subscribed from now, the syncs catch up.
                lock.withLock {
                    lastError = "\(channel): \(message); its syncs catch up with a reSync"
                    received[channel] = -1
                }
                switch try client.subscribe(channel, replayFrom: -1, cancel: cancel) {
                case .subscribed: lock.withLock { catchUp(channel) }
                case .refused(let again), .replayInvalid(let again): lock.withLock { refuse(channel, again) }
                }
            case .refused(let message):
                lock.withLock { refuse(channel, message) }
            }
        }
    }

    /// A channel the server would not subscribe to: its syncs catch up now, and again each time
    /// the subscription is tried anew (every retryMaxMs), so they are polled meanwhile.
    private func refuse(_ channel: String, _ message: String) {
        refused.insert(channel)
        refusedAt = Clock.monotonicMillis()
        lastError = "\(channel): \(message); its syncs catch up every \(retryMaxMs / 1000) s instead"
        catchUp(channel)
    }

    /// The syncs of `channel` reSync and clean their ghosts (under the lock).
    private func catchUp(_ channel: String) {
        for route in routes(of: channel) { pending[route.syncId, default: RecordChanges()].needCatchUp(ghosts: true) }
    }

    private func routes(of channel: String) -> [Route] {
        if channel == "/data/ChangeEvents" { return routes }
        return routes.filter { ChangeEvent.channel(of: $0.object).caseInsensitiveEquals(channel) }
    }

    /// Routes the events; how many could be read.
    private func receive(_ deliveries: [BayeuxClient.Delivery]) -> Int {
        guard !deliveries.isEmpty else { return 0 }
        let now = Clock.nowMillis()
        var readable = 0
        // Live sync is woken for changes to apply, not for each event (its count is in the state).
        let asked: Bool = lock.withLock {
            for delivery in deliveries {
                let event: ChangeEvent
                do {
                    event = try ChangeEvent.parse(channel: delivery.channel, data: delivery.data)
                } catch {
                    // Which records it named is unknown: the syncs of its channel catch up.
                    skipped += 1
                    lastError = (error as? StoreError)?.message ?? "\(error)"
                    for route in routes(of: delivery.channel) { pending[route.syncId, default: RecordChanges()].needCatchUp(ghosts: true) }
                    continue
                }
                events += 1
                readable += 1
                lastEventAt = now
                if received[event.channel].map({ event.replayId > $0 }) ?? true { received[event.channel] = event.replayId }
                // This engine's own update or delete is not fetched back. Its creates are: the
                // record then joins the sync down as the next run would bring it (a ghost
                // cleaning, which looks at the sync's own entries, must see it).
                if event.kind != .create && event.kind != .undelete,
                   event.changeOrigin.hasSuffix(ownOrigin) || event.changeOrigin.includes(ownOrigin + ",") { continue }
                for route in routes where route.object.caseInsensitiveEquals(event.entityName) {
                    var changes = pending[route.syncId, default: RecordChanges()]
                    // A gap event names its records but not their values: they are fetched as
                    // any other; an overflow names none.
                    let known = route.byId && event.idsAreExact
                    changes.seen(event.commitTimestamp)
                    switch event.kind {
                    case .create, .update, .undelete, .gapCreate, .gapUpdate, .gapUndelete:
                        if known && route.judgesAlone { changes.changed(event.recordIds) } else { changes.needCatchUp(ghosts: false) }
                    case .delete, .gapDelete:
                        if known { changes.deleted(event.recordIds) } else { changes.needCatchUp(ghosts: true) }
                    case .gapOverflow:
                        changes.needCatchUp(ghosts: true)
                    }
                    pending[route.syncId] = changes
                }
            }
            return !pending.isEmpty
        }
        if asked { wake() }
        return readable
    }
}
