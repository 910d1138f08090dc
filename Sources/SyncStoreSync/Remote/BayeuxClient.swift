import SyncStoreSupport
import SyncStoreCore

/// Salesforce's Streaming API as a CometD client (Bayeux 1.0, long-polling only), over the REST
/// client so it shares its bearer auth and token refresh: handshake, subscribe with the replay
/// extension, connect, disconnect (docs/sync.md#change-events). It keeps the cookies the server
/// sets, which the API requires back. Used by one thread at a time.
package final class BayeuxClient {
    /// What the server said to do after a connect (Bayeux `advice.reconnect`).
    package enum Reconnect: String { case retry, handshake, none }

    /// The server no longer knows this client (`403::Unknown client`, or advice "handshake"):
    /// handshake and subscribe again.
    package struct Rehandshake: Error { package let message: String }

    package enum Subscription {
        case subscribed
        /// The replay id is not held any more (or never was): subscribe from -1 and catch up.
        case replayInvalid(String)
        /// The channel cannot be subscribed to (unknown, not enabled for change events, a quota).
        case refused(String)
    }

    /// One event message: its channel and `data`, kept alive by `owner`.
    package struct Delivery {
        package let owner: JSONDocument
        package let channel: String
        package let data: JSON
    }

    /// The store's REST client now (the host may set a new remote, or token, at any time).
    private let rest: () -> RestClient?
    private var clientId: String?
    private var cookies: [(name: String, value: String)] = []
    private var messageId = 0
    package private(set) var reconnect = Reconnect.retry
    /// The pause the server asks for between a connect's answer and the next connect.
    package private(set) var intervalMs: Int64 = 0
    /// How long the server may hold a connect (its advice, 110 s on Salesforce).
    package private(set) var holdMs: Int64 = 110_000

    package init(rest: @escaping () -> RestClient?) { self.rest = rest }

    package var isHandshaken: Bool { clientId != nil }

    /// Drops the session without telling the server (it forgets an idle client by itself):
    /// the next call must handshake.
    package func forget() { clientId = nil }

    /// The server this client streams from (replay ids are its own).
    package var instance: String { rest()?.current.instanceURL ?? "" }

    /// A new session: the replay extension is asked for, the server's cookies kept.
    package func handshake(cancel: CancelFlag?) throws {
        clientId = nil
        cookies = []
        let message = newMessage("/meta/handshake")
        message.root.set("version", owned: JSONMake.string("1.0"))
        let types = JSONDocument.array()
        types.root.append(owned: JSONMake.string("long-polling"))
        message.root.set("supportedConnectionTypes", owned: types.root.retained())
        let ext = JSONDocument.object()
        ext.root.set("replay", owned: JSONMake.bool(true))
        message.root.set("ext", owned: ext.root.retained())
        let (_, replies) = try exchange(message, cancel: cancel)
        guard let reply = replies.first(where: { $0["channel"]?.string == "/meta/handshake" }) else {
            throw StoreError(.server, "The Streaming API answered the handshake without a handshake reply", retryable: true)
        }
        guard reply["successful"]?.bool == true, let id = reply["clientId"]?.string, !id.isEmpty else {
            let reason = reply["ext"]?["sfdc"]?["failureReason"]?.string ?? reply["error"]?.string ?? "no reason given"
            throw StoreError(.server, "The Streaming API refused the handshake: \(reason)", retryable: true)
        }
        takeAdvice(reply)
        clientId = id
    }

    /// Subscribes to `channel`, replaying from `replayFrom` (-1: new events only, -2: every event
    /// the server holds, N: the events after N).
    package func subscribe(_ channel: String, replayFrom: Int64, cancel: CancelFlag?) throws -> Subscription {
        let message = try sessionMessage("/meta/subscribe")
        message.root.set("subscription", owned: JSONMake.string(channel))
        let replay = JSONDocument.object()
        replay.root.set(channel, owned: JSONMake.int(replayFrom))
        let ext = JSONDocument.object()
        ext.root.set("replay", owned: replay.root.retained())
        message.root.set("ext", owned: ext.root.retained())
        let (_, replies) = try exchange(message, cancel: cancel)
        guard let reply = replies.first(where: { $0["channel"]?.string == "/meta/subscribe" }) else {
            throw StoreError(.server, "The Streaming API answered a subscribe without a subscribe reply", retryable: true)
        }
        if reply["successful"]?.bool == true { return .subscribed }
        let error = reply["error"]?.string ?? "no reason given"
        try checkSession(reply, error: error)
        if error.hasPrefix("400::") && error.includes("replayId") { return .replayInvalid(error) }
        return .refused(error)
    }

    /// One long poll: the events it brought (maybe none when the server's hold time passed).
    /// Throws `Rehandshake` when the session is gone, StoreError for transport and server errors.
    package func connect(cancel: CancelFlag?) throws -> [Delivery] {
        let message = try sessionMessage("/meta/connect")
        message.root.set("connectionType", owned: JSONMake.string("long-polling"))
        // The transfer may be silent for the whole hold: the stall timeout must outlast it.
        let (owner, replies) = try exchange(message, stallTimeoutMs: Int(holdMs) + 30_000, cancel: cancel)
        var events: [Delivery] = []
        for reply in replies {
            guard let channel = reply["channel"]?.string else { continue }
            if channel == "/meta/connect" {
                takeAdvice(reply)
                if reply["successful"]?.bool != true {
                    let error = reply["error"]?.string ?? "the connect was refused"
                    try checkSession(reply, error: error)
                    if reconnect == .none {
                        throw StoreError(.server, "The Streaming API ended the session (\(error)); it is started again later", retryable: true)
                    }
                }
            } else if !channel.hasPrefix("/meta/"), let data = reply["data"] {
                events.append(Delivery(owner: owner, channel: channel, data: data))
            }
        }
        if reconnect == .handshake { throw Rehandshake(message: "The Streaming API asked for a new handshake") }
        return events
    }

    /// Ends the session (best effort: the server forgets an idle client by itself).
    package func disconnect(cancel: CancelFlag?) {
        guard let message = try? sessionMessage("/meta/disconnect") else { return }
        _ = try? exchange(message, cancel: cancel)
        clientId = nil
    }

    // MARK: messages

    private func newMessage(_ channel: String) -> JSONDocument {
        messageId += 1
        let message = JSONDocument.object()
        message.root.set("channel", owned: JSONMake.string(channel))
        message.root.set("id", owned: JSONMake.string(String(messageId)))
        return message
    }

    private func sessionMessage(_ channel: String) throws -> JSONDocument {
        guard let clientId else { throw Rehandshake(message: "No Streaming API session") }
        let message = newMessage(channel)
        message.root.set("clientId", owned: JSONMake.string(clientId))
        return message
    }

    /// `403::Unknown client` or an advice to handshake: the session is gone.
    private func checkSession(_ reply: JSON, error: String) throws {
        if error.hasPrefix("403::") && error.lowercased().includes("unknown client")
            || reply["advice"]?["reconnect"]?.string == Reconnect.handshake.rawValue {
            clientId = nil
            throw Rehandshake(message: error)
        }
        if error.hasPrefix("401::") {
            clientId = nil
            throw StoreError(.auth, "The Streaming API refused the session: \(error)")
        }
    }

    private func takeAdvice(_ reply: JSON) {
        guard let advice = reply["advice"], advice.isObject else { return }
        if let text = advice["reconnect"]?.string, let value = Reconnect(rawValue: text) { reconnect = value }
        if let interval = advice["interval"]?.int64 { intervalMs = max(0, min(interval, 600_000)) }
        if let timeout = advice["timeout"]?.int64 { holdMs = max(1000, min(timeout, 600_000)) }
    }

    /// POSTs one message; the answer's messages (a JSON array). A 401 has been refreshed and
    /// retried by the REST client already; what remains is AUTH. 403 and 400 answers carry
    /// Bayeux replies when the server speaks the protocol, and are read as such.
    private func exchange(_ message: JSONDocument, stallTimeoutMs: Int? = nil,
                          cancel: CancelFlag?) throws -> (JSONDocument, [JSON]) {
        let body = JSONDocument.array()
        body.root.append(owned: message.root.retained())
        var headers: [String] = []
        if !cookies.isEmpty { headers.append("Cookie: " + cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")) }
        guard let rest = rest() else { throw StoreError(.state, "No remote is configured for this store") }
        let version = rest.current.apiVersion
        let path = "/cometd/" + (version.hasPrefix("v") ? String(version.dropFirst()) : version)
        let response = try rest.send("POST", path, body: Array(body.root.dump().utf8), headers: headers,
                                     idempotent: false, stallTimeoutMs: stallTimeoutMs, cancel: cancel)
        for pair in response.cookies {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals]), value = String(pair[pair.index(after: equals)...])
            cookies.removeAll { $0.name == name }
            cookies.append((name, value))
        }
        let doc = try? response.json(what: "Streaming API answer")
        if let doc, doc.root.isArray, response.status == 200 || response.status == 400 || response.status == 403 {
            return (doc, doc.root.elements)
        }
        throw RestClient.error(for: response, method: "POST", path: path)
    }
}
