import Foundation
import SyncStoreSupport

/// The Streaming API: CometD (Bayeux 1.0) long-polling at `POST /cometd/<version>`, with the
/// replay extension, serving the change events (ChangeEvents.swift) on `/data/ChangeEvents` and
/// `/data/<Object>ChangeEvent`.
///
/// Sessions live in memory (a restart forgets them: clients re-handshake, with replay ids).
/// Database work (subscribe checks, reading events) runs on the store queue under the store
/// lock like every API request; a held long poll waits off it, on a continuation that a
/// commit's publish (or its timeout, or a newer connect) resumes.
final class Streaming: @unchecked Sendable {
    let api: API
    /// How long a connect is held without events (the advice `timeout`).
    let timeoutMillis: Int
    /// A client that has not connected for this long after its last reply is forgotten.
    let sessionMillis: Int
    static let maxEventsPerReply = 1000
    static let minVersion = 37
    static let cookieName = "BAYEUX_BROWSER"

    enum WakeReason: Sendable { case event, timeout, superseded, forgotten, disconnected }

    /// One client (a handshake). Fields are guarded by `Streaming.lock`.
    final class Session: @unchecked Sendable {
        struct Subscription {
            let channel: String
            /// nil: `/data/ChangeEvents` (every entity).
            let entity: String?
            /// Replay id of the last event delivered (or skipped) on this subscription.
            var cursor: Int64
        }
        let clientId: String
        let browser: String
        var subscriptions: [Subscription] = []
        var lastReplyMillis: Int64
        var connectsAnswered = 0
        var connectsHeld = 0
        var waiter: (token: Int, continuation: CheckedContinuation<WakeReason, Never>)?
        /// Set by a publish that found no waiter: the next wait returns at once.
        var signalled = false
        var ended: WakeReason?

        init(clientId: String, browser: String, now: Int64) {
            self.clientId = clientId
            self.browser = browser
            lastReplyMillis = now
        }
    }

    private let lock = NSLock()
    private var sessions: [String: Session] = [:]
    private var rng = SplitMix64(seed: UInt64(bitPattern: Clock.nowMillis()) ^ 0x5eed_c0de)
    private var nextToken = 0
    /// Set by `shutdown()`: connects are answered at once, so a graceful shutdown (which waits
    /// for requests in flight) does not wait for long polls.
    private var shuttingDown = false

    init(api: API, timeoutMillis: Int, sessionMillis: Int) {
        self.api = api
        self.timeoutMillis = timeoutMillis
        self.sessionMillis = sessionMillis
        api.store.locked {
            api.store.events.onPublish = { [weak self] entities in self?.published(entities) }
        }
    }

    private var events: ChangeEvents { api.store.events }

    /// `/cometd/62.0`, also with a message type appended (`/cometd/62.0/connect`, as CometD
    /// clients send by default).
    static func isPath(_ path: String) -> Bool { path == "/cometd" || path.hasPrefix("/cometd/") }

    private func random(_ n: Int, lowercase: Bool) -> String {
        let chars = lowercase ? Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8) : SFId.base62
        return lock.withLock { String(decoding: (0..<n).map { _ in chars[rng.int(chars.count)] }, as: UTF8.self) }
    }

    // MARK: the route

    func handle(method: String, path: String, headers: [String: String], body: [UInt8], unknownClientFault: Bool) async -> APIResponse {
        let s = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard s.count == 2 || s.count == 3, s[0] == "cometd", Streaming.isVersion(s[1]) else { return APIResponse(error: .notFound) }
        guard method == "POST" else { return APIResponse(error: APIError.methodNotAllowed(method, allowed: ["POST"])) }
        guard api.auth.isAuthorized(headers["authorization"]) else { return APIResponse(error: .invalidSession) }
        let messages: [JSON]
        switch Streaming.parse(body) {
        case .failure(let bad): return Streaming.answer(400, bad, cookie: nil)
        case .success(let m): messages = m
        }
        let browser = Streaming.cookie(headers["cookie"], Streaming.cookieName)
        var replies: [[UInt8]] = []
        var setCookie: String?
        for msg in messages {
            let channel = msg["channel"]?.stringValue ?? ""
            if unknownClientFault, let clientId = msg["clientId"]?.stringValue {
                forget(clientId, reason: .forgotten)
                replies.append(unknownClient(msg))
                continue
            }
            switch channel {
            case "/meta/handshake":
                let (reply, cookie) = handshake(msg, browser: browser)
                replies.append(reply)
                if let cookie { setCookie = cookie }
            case "/meta/subscribe", "/meta/unsubscribe":
                replies.append(await subscribe(msg, browser: browser, subscribing: channel == "/meta/subscribe"))
            case "/meta/connect":
                replies.append(contentsOf: await connect(msg, browser: browser))
            case "/meta/disconnect":
                replies.append(disconnect(msg, browser: browser))
            default:
                let error = channel.hasPrefix("/meta/") ? "400::Unknown meta channel \(channel)" : "403::Publishing is not supported: \(channel)"
                replies.append(Streaming.reply(msg, successful: false, [("error", .string(error))]))
            }
        }
        return Streaming.answer(200, replies, cookie: setCookie)
    }

    /// `37.0` ... `66.0` (the Streaming API came with 37.0 for change events here).
    static func isVersion(_ seg: String) -> Bool {
        let parts = seg.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "0", let major = Int(parts[0]) else { return false }
        return (minVersion...API.maxVersion).contains(major)
    }

    /// The messages of a body (an array of objects with a channel, or one such object); else the
    /// error replies to send with a 400.
    static func parse(_ body: [UInt8]) -> Result<[JSON], BadRequest> {
        let json: JSON
        do {
            json = try JSON.parse(body)
        } catch let e as JSONParseError {
            return .failure(BadRequest([errorReply("400::Malformed JSON: \(e.message)")]))
        } catch {
            return .failure(BadRequest([Streaming.errorReply("400::Malformed JSON")]))
        }
        let list: [JSON]
        switch json {
        case .array(let a): list = a
        case .object: list = [json]
        default: return .failure(BadRequest([Streaming.errorReply("400::The body must be an array of Bayeux messages")]))
        }
        guard !list.isEmpty else { return .failure(BadRequest([Streaming.errorReply("400::The body must be an array of Bayeux messages")])) }
        var bad: [[UInt8]] = []
        for m in list {
            if m.objectValue == nil {
                bad.append(Streaming.errorReply("400::A Bayeux message must be an object, got \(m.tokenName)"))
            } else if (m["channel"]?.stringValue ?? "").isEmpty {
                bad.append(Streaming.reply(m, successful: false, [("error", .string("400::A Bayeux message needs a channel"))]))
            } else if let id = m["clientId"], id.stringValue == nil {
                bad.append(Streaming.reply(m, successful: false, [("error", .string("400::clientId must be a string"))]))
            }
        }
        return bad.isEmpty ? .success(list) : .failure(BadRequest(bad))
    }

    struct BadRequest: Error { let replies: [[UInt8]]; init(_ r: [[UInt8]]) { replies = r } }

    private static func answer(_ status: Int, _ bad: BadRequest, cookie: String?) -> APIResponse { answer(status, bad.replies, cookie: cookie) }

    private static func answer(_ status: Int, _ replies: [[UInt8]], cookie: String?) -> APIResponse {
        var w = JSONWriter()
        w.raw("[")
        for (i, r) in replies.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw(r)
        }
        w.raw("]")
        var headers = [("Content-Type", "application/json;charset=UTF-8")]
        if let cookie { headers.append(("Set-Cookie", "\(cookieName)=\(cookie); Path=/")) }
        return APIResponse(status: status, headers: headers, body: w.bytes)
    }

    static func errorReply(_ text: String) -> [UInt8] {
        JSON.object([("successful", .bool(false)), ("error", .string(text))]).serialized
    }

    /// A reply to `msg`: its channel, clientId and (last) id echoed, `successful`, then `extra`.
    static func reply(_ msg: JSON, successful: Bool, _ extra: [(String, JSON)]) -> [UInt8] {
        var pairs: [(String, JSON)] = [("channel", msg["channel"] ?? .null)]
        if let c = msg["clientId"] { pairs.append(("clientId", c)) }
        pairs.append(("successful", .bool(successful)))
        pairs.append(contentsOf: extra)
        if let id = msg["id"] { pairs.append(("id", id)) }
        return JSON.object(pairs).serialized
    }

    private func unknownClient(_ msg: JSON) -> [UInt8] {
        var extra: [(String, JSON)] = []
        if let sub = msg["subscription"] { extra.append(("subscription", sub)) }
        extra.append(("error", .string("403::Unknown client")))
        extra.append(("advice", .object([("reconnect", .string("handshake")), ("interval", .int(0))])))
        return Streaming.reply(msg, successful: false, extra)
    }

    private var retryAdvice: JSON {
        .object([("reconnect", .string("retry")), ("interval", .int(0)), ("timeout", .int(Int64(timeoutMillis)))])
    }

    static func cookie(_ header: String?, _ name: String) -> String? {
        for part in (header ?? "").split(separator: ";") {
            let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if kv.count == 2, kv[0] == name, !kv[1].isEmpty { return kv[1] }
        }
        return nil
    }

    // MARK: sessions

    /// The session of a message, if its client is known and the request carries its cookie.
    private func session(_ msg: JSON, browser: String?) -> Session? {
        guard let id = msg["clientId"]?.stringValue else { return nil }
        return lock.withLock { () -> Session? in
            guard let s = sessions[id] else { return nil }
            if isExpired(s, now: Clock.monotonicMillis()) {
                sessions[id] = nil
                s.ended = .forgotten
                return nil
            }
            return s.browser == browser ? s : nil
        }
    }

    /// Lock held.
    private func isExpired(_ s: Session, now: Int64) -> Bool {
        s.connectsHeld == 0 && now - s.lastReplyMillis > Int64(sessionMillis)
    }

    /// Drops sessions idle past `--cometd-session-ms`. Lock held.
    private func sweep() {
        let now = Clock.monotonicMillis()
        for (id, s) in sessions where isExpired(s, now: now) {
            sessions[id] = nil
            s.ended = .forgotten
        }
    }

    /// Forgets a client; a connect it holds is answered at once.
    private func forget(_ clientId: String, reason: WakeReason) {
        let waiter: CheckedContinuation<WakeReason, Never>? = lock.withLock {
            guard let s = sessions.removeValue(forKey: clientId) else { return nil }
            s.ended = reason
            let w = s.waiter?.continuation
            s.waiter = nil
            return w
        }
        waiter?.resume(returning: reason)
    }

    /// The server is stopping (SIGTERM/SIGINT, its task cancelled): answers every held connect
    /// now, and later ones at once.
    func shutdown() {
        let waiters: [CheckedContinuation<WakeReason, Never>] = lock.withLock {
            shuttingDown = true
            var out: [CheckedContinuation<WakeReason, Never>] = []
            for s in sessions.values {
                if let w = s.waiter { out.append(w.continuation) }
                s.waiter = nil
            }
            return out
        }
        for w in waiters { w.resume(returning: .superseded) }
    }

    /// After a commit (store lock held): wakes the held connects of subscribers of `entities`.
    private func published(_ entities: Set<String>) {
        let wake: [CheckedContinuation<WakeReason, Never>] = lock.withLock {
            var out: [CheckedContinuation<WakeReason, Never>] = []
            for s in sessions.values where s.subscriptions.contains(where: { $0.entity.map(entities.contains) ?? true }) {
                if let w = s.waiter {
                    s.waiter = nil
                    out.append(w.continuation)
                } else {
                    s.signalled = true
                }
            }
            return out
        }
        for c in wake { c.resume(returning: .event) }
    }

    // MARK: meta channels

    private func handshake(_ msg: JSON, browser: String?) -> ([UInt8], String?) {
        if let types = msg["supportedConnectionTypes"]?.arrayValue, !types.contains(where: { $0.stringValue == "long-polling" }) {
            return (Streaming.reply(msg, successful: false, [
                ("error", .string("403::Handshake denied")),
                ("supportedConnectionTypes", .array([.string("long-polling")])),
                ("ext", .object([("sfdc", .object([("failureReason", .string("403::Unsupported connection type: only long-polling is served"))]))])),
                ("advice", .object([("reconnect", .string("none")), ("interval", .int(0))])),
            ]), nil)
        }
        let clientId = random(27, lowercase: true)
        // A client that already has a browser cookie keeps it (several clients may share a jar).
        let cookie = browser ?? random(24, lowercase: false)
        lock.withLock {
            sweep()
            sessions[clientId] = Session(clientId: clientId, browser: cookie, now: Clock.monotonicMillis())
        }
        var pairs: [(String, JSON)] = [
            ("channel", .string("/meta/handshake")),
            ("clientId", .string(clientId)),
            ("successful", .bool(true)),
            ("version", .string("1.0")),
            ("supportedConnectionTypes", .array([.string("long-polling")])),
            ("ext", .object([("replay", .bool(true)), ("payload.format", .bool(true))])),
            ("advice", retryAdvice),
        ]
        if let id = msg["id"] { pairs.append(("id", id)) }
        return (JSON.object(pairs).serialized, cookie)
    }

    private func subscribe(_ msg: JSON, browser: String?, subscribing: Bool) async -> [UInt8] {
        guard let session = session(msg, browser: browser) else { return unknownClient(msg) }
        guard let channel = msg["subscription"]?.stringValue, !channel.isEmpty else {
            return Streaming.reply(msg, successful: false, [("subscription", msg["subscription"] ?? .null),
                                                            ("error", .string("400::subscription must be a channel name"))])
        }
        let subscription: [(String, JSON)] = [("subscription", .string(channel))]
        if !subscribing {
            lock.withLock { session.subscriptions.removeAll { $0.channel == channel } }
            return Streaming.reply(msg, successful: true, subscription)
        }
        // The replay id for this channel; none is -1 (new events only).
        var replayId: Int64 = -1
        if let given = msg["ext"]?["replay"]?[channel] {
            guard let n = given.intValue ?? given.stringValue.flatMap({ Int64($0) }) else {
                return Streaming.reply(msg, successful: false, subscription + [("error", .string(Streaming.invalidReplayId(given.text)))])
            }
            replayId = n
        }
        let events = self.events
        let chosen = replayId
        let outcome: Result<Session.Subscription, StreamingError> = await onStore {
            try? events.enforceRetention()
            let entity = events.entity(ofChannel: channel)
            guard entity != nil || channel == ChangeEvents.allChannel else {
                return .failure(StreamingError("400::The channel you requested to subscribe to does not exist {\(channel)}"))
            }
            guard events.isValidReplayId(chosen) else { return .failure(StreamingError(Streaming.invalidReplayId(String(chosen)))) }
            let cursor: Int64 = chosen == -1 ? events.newestReplayId : chosen == -2 ? 0 : chosen
            return .success(Session.Subscription(channel: channel, entity: entity, cursor: cursor))
        }
        switch outcome {
        case .failure(let e):
            return Streaming.reply(msg, successful: false, subscription + [("error", .string(e.text))])
        case .success(let sub):
            lock.withLock {
                if let i = session.subscriptions.firstIndex(where: { $0.channel == channel }) {
                    session.subscriptions[i] = sub
                } else {
                    session.subscriptions.append(sub)
                }
            }
            return Streaming.reply(msg, successful: true, subscription)
        }
    }

    static func invalidReplayId(_ id: String) -> String {
        "400::The replayId {\(id)} you provided was invalid.  Please provide a valid ID, -2 to replay all events, or -1 to replay only new events."
    }

    struct StreamingError: Error { let text: String; init(_ t: String) { text = t } }

    private func connect(_ msg: JSON, browser: String?) async -> [[UInt8]] {
        guard let session = session(msg, browser: browser) else { return [unknownClient(msg)] }
        // One outstanding connect per client: an older one is answered now.
        let (older, first): (CheckedContinuation<WakeReason, Never>?, Bool) = lock.withLock {
            let w = session.waiter?.continuation
            session.waiter = nil
            session.connectsHeld += 1
            return (w, session.connectsAnswered == 0 || shuttingDown)
        }
        older?.resume(returning: .superseded)
        let deadline = Clock.monotonicMillis() + (first ? 0 : Int64(timeoutMillis))
        var delivered: [[UInt8]] = []
        var ended: WakeReason?
        while true {
            lock.withLock { session.signalled = false }
            delivered = await onStore { [self] in (try? collect(session)) ?? [] }
            if !delivered.isEmpty { break }
            let remaining = deadline - Clock.monotonicMillis()
            if remaining <= 0 { break }
            let reason = await wait(session, millis: remaining)
            if reason == .event { continue }
            if reason == .forgotten || reason == .disconnected { ended = reason }
            break
        }
        lock.withLock {
            session.connectsHeld -= 1
            session.connectsAnswered += 1
            session.lastReplyMillis = Clock.monotonicMillis()
        }
        switch ended {
        case .forgotten?:
            return [unknownClient(msg)]
        case .disconnected?:
            return [Streaming.reply(msg, successful: true, [("advice", .object([("reconnect", .string("none")), ("interval", .int(0))]))])]
        default:
            return delivered + [Streaming.reply(msg, successful: true, [("advice", retryAdvice)])]
        }
    }

    /// Waits for an event for `session`, a newer connect, its end, the server's shutdown, the
    /// request task's cancellation or `millis`.
    private func wait(_ session: Session, millis: Int64) async -> WakeReason {
        await withTaskCancellationHandler {
            await waitUncancelled(session, millis: millis)
        } onCancel: { [self] in
            let w: CheckedContinuation<WakeReason, Never>? = lock.withLock {
                let w = session.waiter?.continuation
                session.waiter = nil
                return w
            }
            w?.resume(returning: .superseded)
        }
    }

    private func waitUncancelled(_ session: Session, millis: Int64) async -> WakeReason {
        await withCheckedContinuation { (c: CheckedContinuation<WakeReason, Never>) in
            let (now, token): (WakeReason?, Int) = lock.withLock {
                if let ended = session.ended { return (ended, 0) }
                if shuttingDown || Task.isCancelled { return (.superseded, 0) }
                if session.signalled {
                    session.signalled = false
                    return (.event, 0)
                }
                nextToken += 1
                session.waiter = (nextToken, c)
                return (nil, nextToken)
            }
            if let now {
                c.resume(returning: now)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(millis))) { [self] in
                let w: CheckedContinuation<WakeReason, Never>? = lock.withLock {
                    guard let w = session.waiter, w.token == token else { return nil }
                    session.waiter = nil
                    return w.continuation
                }
                w?.resume(returning: .timeout)
            }
        }
    }

    /// The events waiting for `session` (at most `maxEventsPerReply`), in replay order, each once
    /// per subscription whose channel it is on; advances the cursors. Store lock held.
    private func collect(_ session: Session) throws -> [[UInt8]] {
        let subs = lock.withLock { session.ended == nil ? session.subscriptions : [] }
        guard !subs.isEmpty else { return [] }
        let limit = Streaming.maxEventsPerReply
        let lists = try subs.map { try events.events(after: $0.cursor, entity: $0.entity, limit: limit) }
        var next = [Int](repeating: 0, count: lists.count)
        var out: [[UInt8]] = []
        while out.count < limit {
            // The subscription with the oldest next event (ties: in subscription order).
            var best: Int?
            for i in lists.indices where next[i] < lists[i].count {
                if best == nil || lists[i][next[i]].replayId < lists[best!][next[best!]].replayId { best = i }
            }
            guard let b = best else { break }
            let e = lists[b][next[b]]
            next[b] += 1
            out.append(message(e, channel: subs[b].channel))
        }
        lock.withLock {
            for (i, sub) in subs.enumerated() where next[i] > 0 {
                if let j = session.subscriptions.firstIndex(where: { $0.channel == sub.channel }) {
                    session.subscriptions[j].cursor = lists[i][next[i] - 1].replayId
                }
            }
        }
        return out
    }

    /// `{"channel","data":{"schema","payload","event":{"replayId"}}}`.
    private func message(_ e: ChangeEvents.StoredEvent, channel: String) -> [UInt8] {
        var w = JSONWriter(capacity: e.payload.count + 160)
        w.raw("{\"channel\":")
        w.string(channel)
        w.raw(",\"data\":{\"schema\":")
        w.string(events.schemaId(ofEntity: e.entity))
        w.raw(",\"payload\":")
        w.raw(e.payload)
        w.raw(",\"event\":{\"replayId\":\(e.replayId)}}}")
        return w.bytes
    }

    private func disconnect(_ msg: JSON, browser: String?) -> [UInt8] {
        guard let session = session(msg, browser: browser) else { return unknownClient(msg) }
        forget(session.clientId, reason: .disconnected)
        return Streaming.reply(msg, successful: true, [])
    }

    private func onStore<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        let store = api.store
        return await withCheckedContinuation { continuation in
            DevResponder.storeQueue.async { continuation.resume(returning: store.locked { body() }) }
        }
    }

    // MARK: admin

    /// `GET /__devserver/events`'s `clients`: each known client, its subscriptions and cursors.
    func describeClients() -> [JSON] {
        lock.withLock {
            sweep()
            let now = Clock.monotonicMillis()
            return sessions.values.sorted { $0.clientId < $1.clientId }.map { s in
                .object([
                    ("clientId", .string(s.clientId)),
                    ("connecting", .bool(s.connectsHeld > 0)),
                    ("idleMillis", .int(s.connectsHeld > 0 ? 0 : now - s.lastReplyMillis)),
                    ("subscriptions", .object(s.subscriptions.map { ($0.channel, .int($0.cursor)) })),
                ])
            }
        }
    }
}
