import Foundation
import SyncStoreSupport

/// OAuth 2.0 token endpoint and bearer-token checks (password and refresh_token grants).
final class Auth: @unchecked Sendable {
    let fixedToken: String?
    let username: String
    let password: String
    let lifetimeMillis: Int64
    private let lock = NSLock()
    private var accessTokens: [String: Int64] = [:]   // token -> expiry (ms)
    private var refreshTokens: Set<String> = []
    private var rng = SplitMix64(seed: UInt64(Clock.nowMillis()))
    static let orgId = "00D000000000001AAA"
    static let userId = "005000000000001AAA"

    init(fixedToken: String?, username: String, password: String, lifetimeSeconds: Int) {
        self.fixedToken = fixedToken
        self.username = username
        self.password = password
        lifetimeMillis = Int64(lifetimeSeconds) * 1000
    }

    private func randomToken(_ n: Int) -> String {
        String(decoding: (0..<n).map { _ in SFId.base62[rng.int(62)] }, as: UTF8.self)
    }

    /// True when the Authorization header carries a live token (`Bearer x` or `OAuth x`).
    func isAuthorized(_ header: String?) -> Bool {
        guard let header else { return false }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, ["bearer", "oauth"].contains(parts[0].lowercased()) else { return false }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        if let fixedToken, token == fixedToken { return true }
        return lock.withLock {
            guard let expiry = accessTokens[token] else { return false }
            if expiry < Clock.nowMillis() {
                accessTokens[token] = nil
                return false
            }
            return true
        }
    }

    /// Expires every issued access token (fault injection: forces clients to refresh).
    func expireAll() { lock.withLock { accessTokens.removeAll() } }

    /// Handles `POST /services/oauth2/token` (form-encoded body).
    func token(form: [String: String], instanceURL: String) -> APIResponse {
        func oauthError(_ status: Int, _ error: String, _ description: String) -> APIResponse {
            APIResponse(status: status, json: .object([("error", .string(error)), ("error_description", .string(description))]))
        }
        let grant = form["grant_type"] ?? ""
        var refresh: String?
        switch grant {
        case "password":
            guard form["username"] == username, form["password"] == password else {
                return oauthError(400, "invalid_grant", "authentication failure")
            }
            refresh = lock.withLock {
                let r = "5Aep" + randomToken(80)
                refreshTokens.insert(r)
                return r
            }
        case "refresh_token":
            let known = lock.withLock { refreshTokens.contains(form["refresh_token"] ?? "") }
            guard known else { return oauthError(400, "invalid_grant", "expired access/refresh token") }
        default:
            return oauthError(400, "unsupported_grant_type", "grant type not supported")
        }
        let now = Clock.nowMillis()
        let access = lock.withLock {
            let t = "\(Auth.orgId.prefix(15))!" + randomToken(96)
            accessTokens[t] = now + lifetimeMillis
            return t
        }
        var pairs: [(String, JSON)] = [
            ("access_token", .string(access)),
            ("instance_url", .string(instanceURL)),
            ("id", .string("\(instanceURL)/id/\(Auth.orgId)/\(Auth.userId)")),
            ("token_type", .string("Bearer")),
            ("issued_at", .string(String(now))),
            ("signature", .string(Data(randomToken(32).utf8).base64EncodedString())),
            ("scope", .string("api refresh_token")),
        ]
        if let refresh { pairs.insert(("refresh_token", .string(refresh)), at: 1) }
        return APIResponse(status: 200, json: .object(pairs))
    }

    func revoke(form: [String: String]) -> APIResponse {
        let token = form["token"] ?? ""
        lock.withLock {
            accessTokens[token] = nil
            refreshTokens.remove(token)
        }
        return APIResponse(status: 200, body: [])
    }
}
