import Foundation
import Hummingbird
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// The inspector's HTTP front: the token, the page and its assets, the JSON API, and the
/// server-sent events of sync states and commits. No CORS headers: other origins' pages cannot read answers.
struct InspectorResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let api: InspectorAPI
    static let maxBody = 16 << 20
    static let tokenHeader = HTTPFields.Element.Name("X-Inspector-Token")!

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        // A page on another name that resolves to 127.0.0.1 (DNS rebinding) is not ours.
        let host = request.head.authority ?? ""
        guard InspectorResponder.isLoopback(host: host) else {
            return reply(.error(.forbidden, code: "FORBIDDEN", "Host '\(host)' is not this inspector's: open the URL it printed"))
        }
        var query: InspectorAPI.Params = [:]
        for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
        let params = query
        let token = request.headers[InspectorResponder.tokenHeader] ?? params["token"] ?? ""
        guard InspectorResponder.same(token, api.settings.token) else {
            return reply(.error(.unauthorized, code: "UNAUTHORIZED", "This inspector needs the token of the URL it printed (?token=...)"))
        }
        let path = request.uri.path
        let method = request.method.rawValue
        switch (method, path) {
        case ("GET", "/"), ("GET", "/index.html"):
            return asset(InspectorPage.html.replacingOccurrences(of: "{{TOKEN}}", with: api.settings.token), type: "text/html; charset=utf-8")
        case ("GET", "/app.js"):
            return asset(InspectorPage.script, type: "text/javascript; charset=utf-8")
        case ("GET", "/app.css"):
            return asset(InspectorPage.style, type: "text/css; charset=utf-8")
        case ("GET", "/api/events"):
            return events(params)
        default:
            break
        }
        if method == "POST" {
            // Only a same-origin script can send JSON with our header: forms and other sites cannot.
            guard request.headers[.contentType]?.hasPrefix("application/json") == true, request.headers[InspectorResponder.tokenHeader] != nil else {
                return reply(.error(.unsupportedMediaType, code: "ARGUMENT", "POST needs Content-Type: application/json and the X-Inspector-Token header"))
            }
        }
        let body: [UInt8]
        do {
            body = Array(try await request.collectBody(upTo: InspectorResponder.maxBody).readableBytesView)
        } catch {
            return reply(.error(.contentTooLarge, code: "ARGUMENT", "The request body is over \(InspectorResponder.maxBody) bytes"))
        }
        let api = self.api
        // Store calls block (SQLite): they run on Dispatch's threads, not Swift's small pool, so
        // a long query never stalls the event streams.
        let answer = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: api.handle(method, path, params, body: body)) }
        }
        return reply(answer)
    }

    /// The store's life as server-sent events: `syncs` with {"now", "syncs", "live"} (or {"now",
    /// "error"}; "live": the live sync state of this process, `InspectorAPI.liveJSON`) each time
    /// the sync states or the live state change (read every 300 ms, and at once when a commit
    /// touched the syncs soup), `change` with {"now", "sequence", "commits", "soups",
    /// "removed"} after commits of the store (a listener of every soup: this process's writes,
    /// syncs, and other processes' commits; those of 100 ms told as one), and a comment line now
    /// and then to notice a closed page.
    private func events(_ params: InspectorAPI.Params) -> Response {
        let api = self.api
        var headers = InspectorResponder.common
        headers[.contentType] = "text/event-stream; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let feed = InspectorChangeFeed()
            let watched: (listeners: ChangeListeners, token: Int64)? = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: feed.listen(to: try? api.store(params))) }
            }
            defer { if let watched { try? watched.listeners.remove(watched.token) } }
            var last = ""
            var quiet = 0
            var tick = 0
            while !Task.isCancelled && !InspectorShutdown.isBegun {
                let change = feed.take()
                if let change {
                    try await writer.write(ByteBuffer(string: "event: change\ndata: \(change.json)\n\n"))
                }
                if tick % 3 == 0 || change?.touchedSyncs == true {
                    let text = await InspectorResponder.syncsEvent(api, params)
                    if text != last {
                        last = text
                        quiet = 0
                        let now = Int64(Date().timeIntervalSince1970 * 1000)
                        try await writer.write(ByteBuffer(string: "event: syncs\ndata: {\"now\":\(now),\(text)}\n\n"))
                    } else {
                        quiet += 1
                        if quiet % 40 == 0 { try await writer.write(ByteBuffer(string: ": still here\n\n")) }
                    }
                }
                tick += 1
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            try await writer.finish(nil)
        })
    }

    /// {"syncs": [...]} or {"error": {...}} without its braces, to follow "now" in one object.
    private static func syncsEvent(_ api: InspectorAPI, _ params: InspectorAPI.Params) async -> String {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let reply: InspectorReply
                do {
                    reply = InspectorReply(json: try api.syncsJSON(try api.store(params)))
                } catch let error as StoreError {
                    reply = .error(.badRequest, code: error.code.name, error.message)
                } catch {
                    reply = .error(.internalServerError, code: "INTERNAL", "\(error)")
                }
                guard reply.status == .ok, let store = try? api.store(params) else {
                    continuation.resume(returning: String(reply.json.dropFirst().dropLast()))
                    return
                }
                continuation.resume(returning: "\"syncs\":" + reply.json + ",\"live\":" + api.liveJSON(store))
            }
        }
    }

    /// Headers of every answer: never cached (they carry store data), never framed, never sniffed.
    static let common: HTTPFields = [
        .cacheControl: "no-store",
        HTTPFields.Element.Name("X-Content-Type-Options")!: "nosniff",
        HTTPFields.Element.Name("X-Frame-Options")!: "DENY",
        HTTPFields.Element.Name("Referrer-Policy")!: "no-referrer",
    ]

    private func asset(_ text: String, type: String) -> Response {
        var headers = InspectorResponder.common
        headers[.contentType] = type
        // Scripts only from this server's files, never inline: a value that slipped past the
        // page's escaping still could not run.
        headers[HTTPFields.Element.Name("Content-Security-Policy")!] =
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    private func reply(_ answer: InspectorReply) -> Response {
        var headers = InspectorResponder.common
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: answer.status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: answer.json)))
    }

    /// 127.0.0.1, localhost or [::1], with any port.
    static func isLoopback(host: String) -> Bool {
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            name = name[name.index(after: name.startIndex)..<end]
        } else if let colon = name.lastIndex(of: ":") {
            name = name[..<colon]
        }
        return name == "127.0.0.1" || name == "localhost" || name == "::1"
    }

    /// Compares without stopping at the first difference (no timing hint about the token).
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}

/// The commits one event stream has not told yet, merged: a soup listener of every soup feeds it
/// (on the store's notifier thread), the stream takes it every 100 ms. It holds one merged
/// change at most, however many commits come: soup names, not entries.
final class InspectorChangeFeed: @unchecked Sendable {
    struct Change {
        let json: String
        let touchedSyncs: Bool
    }

    private let lock = NSLock()
    private var sequence: Int64 = 0
    private var commits: Int64 = 0
    private var soups = Set<String>()
    private var removed = Set<String>()

    /// Adds the listener (nil when the store cannot be opened: the syncs event says why).
    func listen(to store: SmartStore?) -> (listeners: ChangeListeners, token: Int64)? {
        guard let store, let listeners = try? ChangeListeners.of(store),
              let token = try? listeners.add(store: store, soup: nil, owner: 0, { [self] in self.heard($0) }) else { return nil }
        return (listeners, token)
    }

    private func heard(_ notice: String) {
        guard let doc = try? JSONDocument.parse(notice, what: "change notice") else { return }
        let root = doc.root
        lock.withLock {
            sequence = max(sequence, root["sequence"]?.int64 ?? 0)
            commits += max(1, root["commits"]?.int64 ?? 1)
            for part in root["soups"]?.elements ?? [] {
                guard let name = part["soup"]?.string else { continue }
                soups.insert(name)
                if part["removed"]?.bool == true { removed.insert(name) }
            }
        }
    }

    /// The change since the last take, or nil when there was none.
    func take() -> Change? {
        lock.withLock { () -> Change? in
            guard commits > 0 else { return nil }
            let doc = JSONDocument.object()
            doc.root.set("now", owned: JSONMake.int(Int64(Date().timeIntervalSince1970 * 1000)))
            doc.root.set("sequence", owned: JSONMake.int(sequence))
            doc.root.set("commits", owned: JSONMake.int(commits))
            for (key, names) in [("soups", soups), ("removed", removed)] {
                let list = JSONDocument.array()
                for name in names.sorted() { list.root.append(owned: JSONMake.string(name)) }
                doc.root.set(key, owned: list.root.retained())
            }
            let change = Change(json: doc.root.dump(), touchedSyncs: soups.contains("syncs_soup"))
            commits = 0
            soups.removeAll()
            removed.removeAll()
            return change
        }
    }
}
