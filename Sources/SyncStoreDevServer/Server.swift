import Foundation
import Hummingbird
import SyncStoreSupport

/// Request context that can close the connection, so faults can drop it.
struct DevContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// Closes the underlying channel (kept as a closure: the target imports only Hummingbird).
    let closeConnection: @Sendable () -> Void

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        let channel = source.channel
        closeConnection = { channel.close(promise: nil) }
    }

    var maxUploadSize: Int { 64 << 20 }
}

struct ConnectionDropped: Error {}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
    var current: Int { lock.withLock { value } }
}

/// The HTTP front: admin endpoints, fault injection, then the API (synchronous, under the store lock).
struct DevResponder: HTTPResponder {
    typealias Context = DevContext
    let api: API
    /// The Streaming API (`/cometd/<version>`) over the change events.
    let streaming: Streaming
    let faults: Faults
    let adminEnabled: Bool
    /// `--verbose`: one stderr line per request (method, path, status, ms, injected fault).
    let logRequests: Bool
    static let maxBody = 64 << 20
    static let storeQueue = DispatchQueue(label: "syncstore-devserver.store")
    static let apiCalls = Counter()
    /// Streaming API requests (handshakes, subscribes, long polls), not API calls.
    static let streamingCalls = Counter()

    private func log(_ method: String, _ path: String, _ status: String, _ started: Int64, _ fault: FaultRule.Action?,
                     body: [UInt8] = [], answer: [UInt8] = []) {
        guard logRequests else { return }
        let faultText = fault.map { " fault=\($0)" } ?? ""
        // Writes show what they sent and got (bounded): enough to follow one record through a run.
        let detail = method == "GET" || (body.isEmpty && answer.isEmpty) ? ""
            : " sent=\(String(decoding: body.prefix(600), as: UTF8.self)) got=\(String(decoding: answer.prefix(600), as: UTF8.self))"
        let line = "\(SFTime.format(millis: Clock.nowMillis())) \(method) \(path) -> \(status) \(Clock.nowMillis() - started)ms\(faultText)\(detail)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func respond(to request: Request, context: DevContext) async throws -> Response {
        var request = request
        let started = Clock.nowMillis()
        let method = request.method.rawValue
        let path = request.uri.path
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: DevResponder.maxBody)
        } catch {
            return makeResponse(APIResponse(error: APIError(413, "REQUEST_TOO_LARGE", "Request body exceeds \(DevResponder.maxBody) bytes")))
        }
        let bytes = Array(body.readableBytesView)
        if path.hasPrefix("/__devserver/") {
            return makeResponse(admin(method: method, path: path, body: bytes))
        }
        let isStreaming = Streaming.isPath(path)
        let decision = faults.decide(method: method, path: path,
                                     namesStreamingClient: isStreaming && String(decoding: bytes, as: UTF8.self).contains("\"clientId\""))
        if decision.latencyMillis > 0 { try await Task.sleep(nanoseconds: UInt64(decision.latencyMillis) * 1_000_000) }
        if decision.action != nil, decision.action != .dropAfter, decision.action != .dropMid, decision.action != .repeatLocator,
           decision.action != .unknownClient {
            log(method, path, "fault", started, decision.action)
        }
        switch decision.action {
        case .status(let code)?:
            let errorCode = code == 503 ? "SERVER_UNAVAILABLE" : (code >= 500 ? "UNKNOWN_EXCEPTION" : "REQUEST_LIMIT_EXCEEDED")
            var r = APIResponse(error: APIError(code, errorCode, "Injected fault: HTTP \(code) for \(method) \(path)"))
            if code == 503 || code == 429 { r.headers.append(("Retry-After", "1")) }
            return makeResponse(r)
        case .htmlPage(let code)?:
            return makeResponse(APIResponse(status: code, headers: [("Content-Type", "text/html")], body: Array(DevResponder.errorPage(code).utf8)))
        case .unauthorized?:
            return makeResponse(APIResponse(error: .invalidSession))
        case .expireTokens?:
            api.auth.expireAll()
            return makeResponse(APIResponse(error: .invalidSession))
        case .dropBefore?:
            return try await drop(context)
        default:
            break
        }
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            // Several Cookie fields are one list (the Streaming API reads its session cookie).
            if name == "cookie", let earlier = headers[name] { headers[name] = earlier + "; " + field.value } else { headers[name] = field.value }
        }
        if isStreaming {
            _ = DevResponder.streamingCalls.next()
            // A long poll waits off the store queue; it is not an API call (no Sforce-Limit-Info).
            let resp = await streaming.handle(method: method, path: path, headers: headers, body: bytes,
                                              unknownClientFault: decision.action == .unknownClient)
            log(method, path, String(resp.status), started, decision.action, body: bytes, answer: resp.body)
            return try await finish(resp, decision, context)
        }
        var apiRequest = APIRequest(method: method, rawPath: path, rawQuery: request.uri.query, headers: headers, body: bytes)
        apiRequest.repeatLocator = decision.action == .repeatLocator
        let handled = apiRequest
        let api = self.api
        // SQLite work runs on one serial queue, not on Swift's small cooperative pool, so a long
        // query never stalls latency sleeps, admin calls or connection handling.
        var resp = await withCheckedContinuation { continuation in
            DevResponder.storeQueue.async { continuation.resume(returning: api.handle(handled)) }
        }
        log(method, path, String(resp.status), started, decision.action, body: bytes, answer: Array(resp.body))
        // Clients (simple-salesforce's api_usage, the SDKs) read this header; counted per process.
        resp.headers.append(("Sforce-Limit-Info", "api-usage=\(DevResponder.apiCalls.next())/1000000"))
        return try await finish(resp, decision, context)
    }

    /// The answer, or what an after-handling fault (drop=after, drop=mid) does instead.
    private func finish(_ resp: APIResponse, _ decision: FaultDecision, _ context: DevContext) async throws -> Response {
        switch decision.action {
        case .dropAfter?:
            // The request was handled (and committed); the client never hears about it.
            return try await drop(context)
        case .dropMid?:
            var r = makeResponse(resp, streamed: false)
            let half = Array(resp.body.prefix(max(resp.body.count / 2, 1)))
            let close = context.closeConnection
            r.headers[.contentLength] = String(max(resp.body.count, 2))
            r.body = ResponseBody { writer in
                try await writer.write(ByteBuffer(bytes: half))
                close()
                throw ConnectionDropped()
            }
            return r
        default:
            return makeResponse(resp)
        }
    }

    /// A web server's error page (the `html=CODE` fault): a title, a heading, a script and
    /// styles, padded to about 3 KB, as proxies and load balancers answer.
    static func errorPage(_ code: Int) -> String {
        let reasons = [500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Temporarily Unavailable",
                       504: "Gateway Time-out", 404: "Not Found", 403: "Forbidden", 429: "Too Many Requests"]
        let reason = reasons[code] ?? "Error"
        let filler = String(repeating: "<p class=\"pad\">Please try again later. &nbsp;Reference&#58; #\(code)</p>\n", count: 40)
        return """
        <!DOCTYPE html>
        <html><head><meta charset="utf-8"><title>\(code)</title>
        <style>body { font-family: sans-serif; } .pad { color: #888; }</style>
        <script>window.__errorPage = { status: \(code) };</script></head>
        <body><center><h1>\(code) \(reason)</h1></center><hr><center>nginx</center>
        \(filler)</body></html>
        """
    }

    private func drop(_ context: DevContext) async throws -> Response {
        context.closeConnection()
        throw ConnectionDropped()
    }

    private func makeResponse(_ r: APIResponse, streamed: Bool = false) -> Response {
        var fields = HTTPFields()
        if !r.body.isEmpty, !r.headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            fields[.contentType] = "application/json;charset=UTF-8"
        }
        for (name, value) in r.headers {
            if let n = HTTPFields.Element.Name(name) { fields.append(HTTPFields.Element(name: n, value: value)) }
        }
        let status = HTTPResponse.Status(code: r.status)
        if r.body.isEmpty { return Response(status: status, headers: fields) }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: r.body)))
    }

    /// `/__devserver/twophase` (with `--twophase`): GET shows the synchronise answer shape; PUT
    /// (or POST) sets it, body `plain` (per table, the rows; 409 on a repeated add, as
    /// `--twophase-plain`) or `operations` (the default), bare or as `{"answer": ...}`.
    /// Answers `{"answer"}`.
    private func twoPhase(method: String, body: [UInt8]) -> APIResponse {
        guard let tp = api.twoPhase else { return APIResponse(error: .notFound) }
        switch method {
        case "GET":
            break
        case "PUT", "POST":
            var text = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if let json = try? JSON.parse(body), let value = json["answer"]?.stringValue { text = value }
            switch text {
            case "plain": tp.setPlain(true)
            case "operations": tp.setPlain(false)
            default: return APIResponse(error: APIError(400, "INVALID_INPUT", "The two-phase answer shape is 'plain' or 'operations'"))
            }
        default:
            return APIResponse(error: APIError.methodNotAllowed(method, allowed: ["GET", "PUT"]))
        }
        return APIResponse(status: 200, json: .object([("answer", .string(tp.plain ? "plain" : "operations"))]))
    }

    /// `/__devserver/clock`: GET shows the offset and both clocks; PUT (or POST) sets the offset in
    /// seconds (body `-600` or `{"offsetSeconds": -600}`, at most one day either way); DELETE
    /// sets it back to 0. Answers `{"offsetSeconds", "serverTime", "realTime"}`.
    private func clock(method: String, body: [UInt8]) -> APIResponse {
        switch method {
        case "GET":
            break
        case "PUT", "POST":
            let text = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            var millis = ClockOffset.parseSeconds(text)
            if millis == nil, let json = try? JSON.parse(body), let value = json["offsetSeconds"] {
                switch value {
                case .int(let i): millis = ClockOffset.parseSeconds(String(i))
                case .double(let d): millis = ClockOffset.parseSeconds(String(d))
                case .string(let s): millis = ClockOffset.parseSeconds(s)
                default: break
                }
            }
            guard let millis, ClockOffset.shared.set(millis: millis) else {
                return APIResponse(error: APIError(400, "INVALID_INPUT", "The clock offset must be a number of seconds within one day (-86400...86400): '\(text)'"))
            }
        case "DELETE":
            ClockOffset.shared.set(millis: 0)
        default:
            return APIResponse(error: APIError.methodNotAllowed(method, allowed: ["GET", "PUT", "DELETE"]))
        }
        let offset = ClockOffset.shared.millis
        let seconds: JSON = offset % 1000 == 0 ? .int(offset / 1000) : .double(Double(offset) / 1000)
        return APIResponse(status: 200, json: .object([
            ("offsetSeconds", seconds),
            ("serverTime", .string(SFTime.format(millis: SFTime.serverNowMillis()))),
            ("realTime", .string(SFTime.format(millis: Clock.nowMillis()))),
        ]))
    }

    /// `GET /__devserver/events`: the retained change events and the Streaming API's clients,
    /// `{"count", "oldestReplayId", "newestReplayId", "purgedThroughReplayId", "retention",
    /// "clients": [{"clientId", "connecting", "idleMillis", "subscriptions": {channel: cursor}}]}`.
    /// `POST /__devserver/events/purge`: purges every retained event (replaying from an older id
    /// then fails as an expired replay id does); answers `{"purged": N}` and the same fields.
    private func eventsAdmin(method: String, path: String) -> APIResponse {
        let purging = path.hasSuffix("/purge")
        guard method == (purging ? "POST" : "GET") else { return APIResponse(error: APIError.methodNotAllowed(method, allowed: [purging ? "POST" : "GET"])) }
        let store = api.store
        do {
            var pairs: [(String, JSON)] = try store.locked {
                var pairs: [(String, JSON)] = []
                if purging {
                    pairs.append(("purged", .int(Int64(try store.events.purgeAll()))))
                } else {
                    try store.events.enforceRetention()
                }
                let e = store.events
                pairs += [
                    ("count", .int(Int64(e.retainedCount))),
                    ("oldestReplayId", e.oldestRetainedReplayId.map { .int($0) } ?? .null),
                    ("newestReplayId", .int(e.newestReplayId)),
                    ("purgedThroughReplayId", .int(e.purgedThrough)),
                    ("retention", .int(Int64(e.retention))),
                ]
                return pairs
            }
            let clients = streaming.describeClients()
            pairs.append(("connectedClients", .int(Int64(clients.count))))
            pairs.append(("clients", .array(clients)))
            return APIResponse(status: 200, json: .object(pairs))
        } catch {
            return APIResponse(error: APIError(500, "UNKNOWN_EXCEPTION", "\(error)"))
        }
    }

    /// `/__devserver/faults`: GET shows the rules and counters, PUT replaces the spec, DELETE clears it.
    /// `POST /__devserver/import`: loads records as `--import` does (explicit ids and timestamps,
    /// e.g. to make LastModifiedDate ties mid-test); answers `{"imported": N}`.
    private func admin(method: String, path: String, body: [UInt8]) -> APIResponse {
        guard adminEnabled else { return APIResponse(error: .notFound) }
        if path == "/__devserver/import" {
            guard method == "POST" else { return APIResponse(error: APIError.methodNotAllowed(method, allowed: ["POST"])) }
            do {
                let json = try JSON.parse(body)
                let n = try api.store.locked { try Seeder(store: api.store).importFile(json) }
                return APIResponse(status: 200, json: .object([("imported", .int(Int64(n)))]))
            } catch let e as JSONParseError {
                return APIResponse(error: APIError.jsonParser(e.message))
            } catch {
                return APIResponse(error: APIError(400, "INVALID_INPUT", "\(error)"))
            }
        }
        if path == "/__devserver/clock" { return clock(method: method, body: body) }
        if path == "/__devserver/requests" {
            // What a client sent: an idle live client should send nothing but long polls.
            return APIResponse(status: 200, json: .object([("requests", .int(Int64(DevResponder.apiCalls.current))),
                                                           ("streaming", .int(Int64(DevResponder.streamingCalls.current)))]))
        }
        if path == "/__devserver/events" || path == "/__devserver/events/purge" { return eventsAdmin(method: method, path: path) }
        if path == "/__devserver/twophase" { return twoPhase(method: method, body: body) }
        guard path == "/__devserver/faults" else { return APIResponse(error: .notFound) }
        let text: [(String, String)] = [("Content-Type", "text/plain; charset=utf-8")]
        switch method {
        case "GET":
            return APIResponse(status: 200, headers: text, body: Array(faults.describe().utf8))
        case "PUT", "POST":
            do {
                try faults.set(String(decoding: body, as: UTF8.self))
                return APIResponse(status: 200, headers: text, body: Array(faults.describe().utf8))
            } catch {
                return APIResponse(status: 400, headers: text, body: Array("\(error)\n".utf8))
            }
        case "DELETE":
            try? faults.set("")
            return APIResponse(status: 204, body: [])
        default:
            return APIResponse(error: APIError.methodNotAllowed(method, allowed: ["GET", "PUT", "DELETE"]))
        }
    }
}
