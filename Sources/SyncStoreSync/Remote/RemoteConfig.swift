import SyncStoreCore
/// Where and as whom a store syncs: a Salesforce-compatible instance and its OAuth tokens.
package struct RemoteConfig: Sendable {
    package var instanceURL: String
    package var apiVersion = "v62.0"
    package var accessToken: String
    package var refreshToken: String?
    package var tokenURL: String?
    package var clientId: String?
    package var clientSecret: String?
    /// A header that carries the token as is (e.g. `X-ZUMO-AUTH`, Azure App Service
    /// authentication) instead of `Authorization: Bearer <token>`.
    package var authHeader: String?
    package var http = HTTPSettings()
    /// Attempts for idempotent requests on network errors and 5xx (first try included).
    package var maxAttempts = 3
    package var retryBaseDelayMs = 200
    /// How long a create sent without an answer may still be committed by the server. Until
    /// that long after the attempt, a retry that does not find the record waits, then looks
    /// again, before it sends the create a second time.
    package var createSettleMs = 10_000
    /// Sent as `Sforce-Call-Options: client=<this>` with every request, so the change events of
    /// this engine's own writes can be told apart (their `changeOrigin` ends with it). Set by the
    /// sync manager, not by the host.
    package var callOptionsClient: String?

    package init(instanceURL: String, accessToken: String) {
        self.instanceURL = instanceURL
        self.accessToken = accessToken
    }

    /// `{"instanceUrl", "accessToken", "apiVersion"?, "refreshToken"?, "tokenUrl"?, "clientId"?,
    ///   "clientSecret"?, "authHeader"?, "caBundle"?, "verifyTls"?, "connectTimeoutMs"?, "stallTimeoutMs"?,
    ///   "maxAttempts"?, "retryBaseDelayMs"?, "createSettleMs"?}`
    package static func parse(_ text: String) throws -> RemoteConfig {
        let doc = try JSONDocument.parse(text, what: "remote config")
        let root = doc.root
        guard root.isObject else { throw StoreError.argument("The remote config must be a JSON object") }
        func string(_ key: String) throws -> String? {
            guard let v = root[key], !v.isNull else { return nil }
            guard let s = v.string else { throw StoreError.argument("Remote config \"\(key)\" must be a string") }
            return s
        }
        func int(_ key: String, _ range: ClosedRange<Int64>) throws -> Int? {
            guard let v = root[key], !v.isNull else { return nil }
            guard let i = v.int64, range.contains(i) else {
                throw StoreError.argument("Remote config \"\(key)\" must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return Int(i)
        }
        guard var url = try string("instanceUrl"), url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw StoreError.argument("Remote config needs \"instanceUrl\" starting with https:// (or http:// for a local server)")
        }
        while url.hasSuffix("/") { url.removeLast() }
        // A host must follow the scheme ("https://" alone was taken as the URL "https:").
        let authority = url.dropFirst(url.hasPrefix("https://") ? 8 : 7)
        guard let first = authority.first, first != "/" else {
            throw StoreError.argument("Remote config \"instanceUrl\" has no host: give https://<host>[:port]")
        }
        guard let token = try string("accessToken") else {
            throw StoreError.argument("Remote config needs \"accessToken\"")
        }
        var config = RemoteConfig(instanceURL: url, accessToken: token)
        if let v = try string("apiVersion") {
            let version = v.hasPrefix("v") ? v : "v" + v
            // ASCII digits on both sides of one dot: the version goes into every request's path.
            let parts = version.utf8.dropFirst().split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) else {
                throw StoreError.argument("apiVersion must look like v62.0")
            }
            config.apiVersion = version
        }
        config.refreshToken = try string("refreshToken")
        config.tokenURL = try string("tokenUrl")
        config.clientId = try string("clientId")
        config.clientSecret = try string("clientSecret")
        if let name = try string("authHeader") {
            // An HTTP token (RFC 9110): the name goes into every request's headers as it is.
            let allowed = Set("!#$%&'*+-.^_`|~".utf8)
            guard !name.isEmpty, name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || allowed.contains($0) }) else {
                throw StoreError.argument("Remote config \"authHeader\" must be a header name (letters, digits, '-'...), e.g. X-ZUMO-AUTH")
            }
            config.authHeader = name
        }
        config.http.caBundle = try string("caBundle")
        if let v = root["verifyTls"], !v.isNull {
            guard let b = v.bool else { throw StoreError.argument("verifyTls must be true or false") }
            config.http.verifyTLS = b
        }
        if let v = try int("connectTimeoutMs", 1...600_000) { config.http.connectTimeoutMs = v }
        if let v = try int("stallTimeoutMs", 1000...3_600_000) { config.http.stallTimeoutMs = v }
        if let v = try int("maxAttempts", 1...10) { config.maxAttempts = v }
        if let v = try int("retryBaseDelayMs", 0...60_000) { config.retryBaseDelayMs = v }
        if let v = try int("createSettleMs", 0...600_000) { config.createSettleMs = v }
        return config
    }

    package var canRefresh: Bool { refreshToken != nil && clientId != nil }
    package var effectiveTokenURL: String { tokenURL ?? "\(instanceURL)/services/oauth2/token" }
}

package enum RemoteURL {
    /// Percent-encodes everything but RFC 3986 unreserved characters.
    package static func encode(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out.append("%")
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }

    package static func query(_ items: [(String, String)]) -> String {
        items.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// A URL without its query string, for messages (queries may hold data).
    package static func redacted(_ url: String) -> String {
        guard let q = url.firstIndex(of: "?") else { return url }
        return String(url[..<q]) + "?…"
    }
}
