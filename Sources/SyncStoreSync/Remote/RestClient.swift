import Glibc
import SyncStoreSupport
import SyncStoreCore

/// The Salesforce REST API as the sync engine uses it: bearer auth with one refresh-and-retry
/// on 401, bounded retries with backoff for idempotent requests, and the API's error shapes
/// turned into StoreErrors. Holds a few libcurl handles so concurrent requests (the page
/// prefetch) each keep their own kept-alive connection.
package final class RestClient: @unchecked Sendable {
    private let lock = Lock()
    private var config: RemoteConfig
    private var idle: [HTTPClient] = []
    /// Server clock minus ours, from the Date header of the latest answer (nil before one).
    private var clockOffset: Int64?

    package init(config: RemoteConfig) { self.config = config }

    package var current: RemoteConfig { lock.withLock { config } }

    /// A URL for `path`: absolute paths ("/services/...", e.g. nextRecordsUrl) go on the instance,
    /// others under /services/data/<version>/.
    package func url(_ path: String) -> String {
        let c = current
        if path.hasPrefix("http://") || path.hasPrefix("https://") { return path }
        if path.hasPrefix("/") { return c.instanceURL + path }
        return "\(c.instanceURL)/services/data/\(c.apiVersion)/\(path)"
    }

    /// The server's time now, estimated from the Date header of its latest answer (which has
    /// whole seconds: the estimate is within half a second), nil before any answer.
    package var serverNow: Int64? {
        lock.withLock { clockOffset }.map { Clock.nowMillis() + $0 + 500 }
    }

    /// Sends a request and returns the response whatever its status, after auth handling and
    /// retries. Throws NETWORK when the server cannot be reached, AUTH when the token is
    /// refused and cannot be refreshed, STATE when cancelled. Only idempotent requests (by
    /// default every method but POST; reads sent as POST say so) are sent again after a
    /// transport failure or a 5xx: a write whose answer was lost is the caller's to reconcile.
    /// `stallTimeoutMs` replaces the config's for this request (a long poll is silent for minutes).
    package func send(_ method: String, _ path: String, body: [UInt8]? = nil, headers extra: [String] = [],
              idempotent: Bool? = nil, stallTimeoutMs: Int? = nil, cancel: CancelFlag? = nil) throws -> HTTPResponse {
        let idempotent = idempotent ?? (method != "POST")
        var refreshed = false
        var attempt = 0
        while true {
            attempt += 1
            let c = current
            var request = HTTPRequest(method: method, url: url(path))
            request.headers = [c.authHeader.map { "\($0): \(c.accessToken)" } ?? "Authorization: Bearer \(c.accessToken)", "Accept: application/json"] + extra
            // Names this client in the change events its writes cause (their changeOrigin).
            if let client = c.callOptionsClient { request.headers.append("Sforce-Call-Options: client=\(client)") }
            if body != nil { request.headers.append("Content-Type: application/json") }
            request.body = body
            var settings = c.http
            if let stallTimeoutMs { settings.stallTimeoutMs = stallTimeoutMs }
            let response: HTTPResponse
            do {
                response = try withClient { try $0.perform(request, settings: settings, cancel: cancel) }
                if let date = response.date { lock.withLock { clockOffset = date - Clock.nowMillis() } }
            } catch let error as StoreError where error.code == .network && idempotent && attempt < c.maxAttempts {
                try backoff(attempt, c, cancel)
                continue
            }
            if response.status == 401 {
                guard !refreshed, c.canRefresh else {
                    throw StoreError(.auth, "The server refused the access token (\(RestClient.describe(response))); set new credentials and run the sync again")
                }
                try refreshToken(cancel: cancel)
                refreshed = true
                attempt -= 1
                continue
            }
            if response.status >= 500 && idempotent && attempt < c.maxAttempts {
                try backoff(attempt, c, cancel)
                continue
            }
            return response
        }
    }

    /// Sends and returns the answer's body; any non-2xx status is an error.
    package func body(_ method: String, _ path: String, body: [UInt8]? = nil, headers: [String] = [],
              idempotent: Bool? = nil, cancel: CancelFlag? = nil) throws -> [UInt8] {
        let response = try send(method, path, body: body, headers: headers, idempotent: idempotent, cancel: cancel)
        guard response.isSuccess else { throw RestClient.error(for: response, method: method, path: path) }
        return response.body
    }

    /// Sends and parses a JSON answer; any non-2xx status is an error.
    package func json(_ method: String, _ path: String, body: [UInt8]? = nil, headers: [String] = [],
              idempotent: Bool? = nil, cancel: CancelFlag? = nil) throws -> JSONDocument {
        try RestClient.parse(try self.body(method, path, body: body, headers: headers, idempotent: idempotent, cancel: cancel),
                             method: method, path: path)
    }

    /// Parses an answer's body; an empty body is JSON null.
    package static func parse(_ body: [UInt8], method: String, path: String) throws -> JSONDocument {
        try body.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return JSONDocument(owning: json_null_value()) }
            do {
                // Depth is checked per record when stored, so the message can name the record.
                return try JSONDocument.parse(bytes: base, length: raw.count, what: "server response", limitDepth: false)
            } catch let e as StoreError {
                throw StoreError(.server, "\(method) \(path): \(e.message)")
            }
        }
    }

    /// The error for a server's refusal. Every error status is SERVER (retryable for 5xx) but
    /// 401, which `send` has already turned into AUTH: the local codes (NOT_FOUND, CONFLICT)
    /// name the host's soups, entries and syncs, so a server's 404 (a wrong API version, an
    /// object the org lacks) must not read as a missing sync.
    package static func error(for response: HTTPResponse, method: String, path: String) -> StoreError {
        let text = "\(method) \(RemoteURL.redacted(path)): \(describe(response))"
        if response.status == 401 { return StoreError(.auth, text) }
        return StoreError(.server, text, retryable: response.status >= 500)
    }

    /// "HTTP 400 INVALID_FIELD: No such column 'Foo'" from the API's `[{"message","errorCode"}]`
    /// (or OAuth's `error`, a problem-details object's `title` and `detail`); any other body (a
    /// proxy's HTML page, plain text) by a short plain-text summary, never as it came.
    package static func describe(_ response: HTTPResponse) -> String {
        var text = "HTTP \(response.status)"
        var described = false
        if let doc = try? response.body.withUnsafeBytes({ raw -> JSONDocument? in
            guard let base = raw.baseAddress, raw.count > 0 else { return nil }
            return try JSONDocument.parse(bytes: base, length: raw.count)
        }) {
            let first = doc.root.isArray ? doc.root[0] : doc.root
            if let code = first?["errorCode"]?.string ?? first?["error"]?.string ?? first?["title"]?.string {
                text += " \(code)"; described = true
            }
            if let message = first?["message"]?.string ?? first?["error_description"]?.string ?? first?["detail"]?.string {
                text += ": \(message)"; described = true
            }
        }
        if !described, let summary = ErrorBodySummary.summary(response.body, contentType: response.contentType) {
            text += ": " + summary
        }
        return MessageLimit.bound(text)
    }

    private func backoff(_ attempt: Int, _ c: RemoteConfig, _ cancel: CancelFlag?) throws {
        try RestClient.pause(Int64(c.retryBaseDelayMs << min(attempt - 1, 6)), cancel: cancel)
    }

    /// Sleeps `ms`, waking every 50 ms to see whether the sync was stopped (STATE if so).
    package static func pause(_ ms: Int64, cancel: CancelFlag?) throws {
        var remaining = ms
        while remaining > 0 {
            if cancel?.isCancelled ?? false { throw StoreError(.state, "The sync was stopped while waiting to retry") }
            let step = min(remaining, 50)
            usleep(UInt32(step * 1000))
            remaining -= step
        }
    }

    /// OAuth refresh_token grant; stores the new access token (and instance URL if given).
    private func refreshToken(cancel: CancelFlag?) throws {
        let c = current
        guard let refresh = c.refreshToken, let clientId = c.clientId else {
            throw StoreError(.auth, "No refresh token configured")
        }
        var form = [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", clientId)]
        if let secret = c.clientSecret { form.append(("client_secret", secret)) }
        var request = HTTPRequest(method: "POST", url: c.effectiveTokenURL)
        request.headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        request.body = Array(RemoteURL.query(form).utf8)
        let response = try withClient { try $0.perform(request, settings: c.http, cancel: cancel) }
        guard response.isSuccess else {
            // A token endpoint that is down has not refused the credentials.
            if response.status >= 500 {
                throw StoreError(.server, "Refreshing the access token failed (\(RestClient.describe(response))); run the sync again later", retryable: true)
            }
            throw StoreError(.auth, "Refreshing the access token failed (\(RestClient.describe(response))); set new credentials and run the sync again")
        }
        let doc = try response.body.withUnsafeBytes { raw -> JSONDocument in
            guard let base = raw.baseAddress else { throw StoreError(.auth, "Empty token response") }
            return try JSONDocument.parse(bytes: base, length: raw.count, what: "token response")
        }
        guard let token = doc.root["access_token"]?.string else {
            throw StoreError(.auth, "The token response has no access_token")
        }
        lock.withLock {
            config.accessToken = token
            if let instance = doc.root["instance_url"]?.string, !instance.isEmpty { config.instanceURL = instance }
        }
    }

    private func withClient<T>(_ body: (HTTPClient) throws -> T) throws -> T {
        let client = try lock.withLock { idle.popLast() } ?? HTTPClient()
        defer { lock.withLock { if idle.count < 4 { idle.append(client) } } }
        return try body(client)
    }
}
