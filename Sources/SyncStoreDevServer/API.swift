import Foundation

/// A transport-independent request: the HTTP layer and `/composite` subrequests both build these.
struct APIRequest {
    var method: String
    var segments: [String]
    var query: [String: String]
    /// Lower-cased header names.
    var headers: [String: String]
    var body: [UInt8]
    /// Fault `repeat-locator`: a query answer's `nextRecordsUrl` names the page just served.
    var repeatLocator = false

    /// Splits a raw (percent-encoded) path and query string.
    init(method: String, rawPath: String, rawQuery: String?, headers: [String: String], body: [UInt8]) {
        self.method = method.uppercased()
        segments = rawPath.split(separator: "/", omittingEmptySubsequences: true).map { percentDecode(String($0), plusIsSpace: false) }
        query = parseForm(rawQuery ?? "")
        self.headers = headers
        self.body = body
    }

    func segment(_ i: Int) -> String? { i < segments.count ? segments[i] : nil }

    func json() throws -> JSON {
        guard !body.isEmpty else { throw APIError.jsonParser("No content to map due to end-of-input") }
        do { return try JSON.parse(body) } catch let e as JSONParseError {
            throw APIError.jsonParser("Unexpected character in request body: \(e.message)")
        }
    }
}

struct APIResponse {
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8]

    init(status: Int, headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    init(status: Int, headers: [(String, String)] = [], json: JSON) { self.init(status: status, headers: headers, body: json.serialized) }

    init(error: APIError) { self.init(status: error.status, body: error.body) }
}

func percentDecode(_ s: String, plusIsSpace: Bool) -> String {
    var out: [UInt8] = []
    let b = Array(s.utf8)
    var i = 0
    func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }
    while i < b.count {
        if b[i] == 37, i + 2 < b.count, let h = hex(b[i + 1]), let l = hex(b[i + 2]) {
            out.append(h << 4 | l)
            i += 3
        } else {
            out.append(plusIsSpace && b[i] == 43 ? 32 : b[i])
            i += 1
        }
    }
    return String(decoding: out, as: UTF8.self)
}

func parseForm(_ s: String) -> [String: String] {
    var out: [String: String] = [:]
    for pair in s.split(separator: "&") {
        let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard let k = kv.first, !k.isEmpty else { continue }
        out[percentDecode(k, plusIsSpace: true)] = kv.count > 1 ? percentDecode(kv[1], plusIsSpace: true) : ""
    }
    return out
}

/// Routes `/services/...` requests. Everything below `handle` runs with the store lock held,
/// so a request (including a whole `/composite` call) sees and writes a consistent database.
final class API: @unchecked Sendable {
    let store: Store
    let auth: Auth
    let cursors = CursorStore()
    var baseURL = "http://127.0.0.1"
    var minBatchSize = 200
    /// Records per query page when the request asks for no batch size (the API's is 2000, and
    /// it may choose fewer for wide records).
    var defaultBatchSize = 2000
    /// Children of one parent returned inline by a child subquery; the rest are paged.
    var childBatchSize = 200
    /// `--datasync`: the `/tables/{table}` routes (Datasync.swift); nil when not served.
    var datasync: DatasyncTables?
    /// `--twophase`: the two-phase protocol's routes under /twophase/.
    var twoPhase: TwoPhase?
    /// Versions an org serves today: v31.0 (Summer '14, the oldest not retired) to v66.0 (Spring '26).
    static let minVersion = 31
    static let maxVersion = 66

    init(store: Store, auth: Auth) {
        self.store = store
        self.auth = auth
    }

    var schema: Schema { store.schema }

    func handle(_ req: APIRequest) -> APIResponse {
        var resp: APIResponse
        do {
            resp = try route(req)
        } catch let e as APIError {
            resp = APIResponse(error: e)
        } catch {
            resp = APIResponse(error: APIError(500, "UNKNOWN_EXCEPTION", "An unexpected error occurred: \(error)"))
        }
        if resp.status != 204, resp.status != 304, !resp.headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            resp.headers.append(("Content-Type", "application/json;charset=UTF-8"))
        }
        return resp
    }

    private func route(_ req: APIRequest) throws -> APIResponse {
        let s = req.segments
        if s.count == 3, s[0] == "id" || (s[0] == "services" && s[1] == "oauth2" && s[2] == "userinfo") {
            // Identity URL (the token response's `id`) and OpenID userinfo, for login flows.
            guard auth.isAuthorized(req.headers["authorization"]) else { throw APIError.invalidSession }
            return APIResponse(status: 200, json: .object([
                ("id", .string("\(baseURL)/id/\(Auth.orgId)/\(Auth.userId)")), ("user_id", .string(Auth.userId)),
                ("organization_id", .string(Auth.orgId)), ("username", .string(auth.username)),
                ("display_name", .string("Dev User")), ("email", .string(auth.username)),
                ("urls", .object([("rest", .string("\(baseURL)/services/data/v{version}/")),
                                  ("sobjects", .string("\(baseURL)/services/data/v{version}/sobjects/")),
                                  ("query", .string("\(baseURL)/services/data/v{version}/query/"))])),
            ]))
        }
        if s.first == "tables", let datasync {
            // The same tokens as the Salesforce routes, as a bearer token or in X-ZUMO-AUTH.
            let zumo = req.headers["x-zumo-auth"].map { "Bearer \($0)" }
            guard auth.isAuthorized(req.headers["authorization"] ?? zumo) else { return datasync.problem(401, "Unauthorized: send Authorization: Bearer <token> or X-ZUMO-AUTH: <token>") }
            return try store.locked { try datasync.handle(req, baseURL: baseURL) }
        }
        if s.first == "twophase", let twoPhase {
            guard auth.isAuthorized(req.headers["authorization"]) else { throw APIError.invalidSession }
            return try twoPhase.route(req)
        }
        guard s.first == "services" else { throw APIError.notFound }
        if s.count == 3, s[1] == "oauth2" {
            guard req.method == "POST" else { throw APIError.methodNotAllowed(req.method, allowed: ["POST"]) }
            let form = parseForm(String(decoding: req.body, as: UTF8.self)).merging(req.query) { a, _ in a }
            switch s[2] {
            case "token": return auth.token(form: form, instanceURL: baseURL)
            case "revoke": return auth.revoke(form: form)
            default: throw APIError.notFound
            }
        }
        guard s.count >= 2, s[1] == "data" else { throw APIError.notFound }
        if s.count == 2 { return APIResponse(status: 200, json: versionsJSON()) }
        guard let version = parseVersion(s[2]) else { throw APIError.notFound }
        guard auth.isAuthorized(req.headers["authorization"]) else { throw APIError.invalidSession }
        return try store.locked {
            // Change events of this request's writes name it as their origin.
            store.events.origin = API.changeOrigin(req.headers["sforce-call-options"], version: version)
            defer { store.events.origin = "" }
            return try dispatch(req, version: version)
        }
    }

    /// A change event's `changeOrigin` for a REST request: `com/salesforce/api/rest/60.0`, with
    /// `;client=<id>` when `Sforce-Call-Options` names a client (`client=<id>[, other=...]`).
    static func changeOrigin(_ callOptions: String?, version: String) -> String {
        let base = "com/salesforce/api/rest/\(version)"
        for option in (callOptions ?? "").split(separator: ",") {
            let kv = option.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if kv.count == 2, kv[0].lowercased() == "client", !kv[1].isEmpty { return "\(base);client=\(kv[1])" }
        }
        return base
    }

    /// Routes a request below `/services/data/vNN.N/`; the store lock must be held.
    func dispatch(_ req: APIRequest, version: String) throws -> APIResponse {
        let s = Array(req.segments.dropFirst(3))
        guard let resource = s.first else {
            try allow(req, ["GET"])
            return APIResponse(status: 200, json: resourcesJSON(version))
        }
        switch resource {
        case "sobjects": return try sobjectsRoute(req, Array(s.dropFirst()), version: version)
        case "query", "queryAll":
            try allow(req, ["GET"])
            return try queryRoute(req, rest: Array(s.dropFirst()), all: resource == "queryAll", version: version)
        case "search":
            try allow(req, ["GET"])
            return try search(req, version: version)
        case "composite": return try compositeRoute(req, Array(s.dropFirst()), version: version)
        case "connect":
            guard s.count == 3, s[1] == "briefcase", s[2] == "priming-records" else { throw APIError.notFound }
            try allow(req, ["GET"])
            return try primingRecords(req, version: version)
        case "ui-api":
            guard s.count == 3, s[1] == "layout" else { throw APIError.notFound }
            try allow(req, ["GET"])
            return try layout(req, type: s[2], version: version)
        case "limits":
            try allow(req, ["GET"])
            return APIResponse(status: 200, json: .object([
                ("DailyApiRequests", .object([("Max", .int(1_000_000)), ("Remaining", .int(1_000_000))])),
            ]))
        default: throw APIError.notFound
        }
    }

    func allow(_ req: APIRequest, _ methods: [String]) throws {
        guard methods.contains(req.method) else { throw APIError.methodNotAllowed(req.method, allowed: methods) }
    }

    /// `v60.0` -> `60.0` for versions this server speaks.
    func parseVersion(_ seg: String) -> String? {
        guard seg.hasPrefix("v") else { return nil }
        let v = seg.dropFirst()
        let parts = v.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = Int(parts[0]), parts[1] == "0", (API.minVersion...API.maxVersion).contains(major) else { return nil }
        return String(v)
    }

    static let releaseNames = ["Summer", "Winter", "Spring"]

    private func versionsJSON() -> JSON {
        .array((API.minVersion...API.maxVersion).map { v in
            // v31 was Summer '14; three releases a year, the year turning with Winter.
            let idx = v - 31
            let name = API.releaseNames[idx % 3]
            let year = 14 + (idx + 2) / 3
            return .object([("label", .string("\(name) '\(year)")), ("url", .string("/services/data/v\(v).0")), ("version", .string("\(v).0"))])
        })
    }

    /// `60.0` -> 60: for answers that changed shape at a version (upsert's `created`).
    static func major(_ version: String) -> Int { Int(version.split(separator: ".").first ?? "") ?? maxVersion }

    private func resourcesJSON(_ v: String) -> JSON {
        let names = ["sobjects", "query", "queryAll", "search", "composite", "limits", "connect", "ui-api"]
        return .object(names.map { ($0, .string("/services/data/v\(v)/\($0)")) })
    }

    func object(_ name: String) throws -> SObjectDef {
        guard let obj = schema.object(name) else {
            throw APIError(404, "NOT_FOUND", "The requested resource does not exist")
        }
        return obj
    }

    /// Formats a SOQL/SOSL error the way the API does: the query line, a caret, the position.
    func apiError(_ e: SoqlError, text: String) -> APIError {
        let bytes = Array(text.utf8)
        let offset = min(max(e.offset, 0), bytes.count)
        var row = 1, lineStart = 0
        for (i, c) in bytes[0..<offset].enumerated() where c == 10 { row += 1; lineStart = i + 1 }
        let lineEnd = bytes[lineStart...].firstIndex(of: 10) ?? bytes.count
        let line = String(decoding: bytes[lineStart..<lineEnd], as: UTF8.self)
        let col = offset - lineStart + 1
        let caret = String(repeating: " ", count: max(col - 1, 0)) + "^"
        let message = "\n\(line)\n\(caret)\nERROR at Row:\(row):Column:\(col)\n\(e.message)"
        switch e.kind {
        case .malformed: return APIError(400, "MALFORMED_QUERY", message)
        case .invalidField: return APIError(400, "INVALID_FIELD", message)
        case .invalidType: return APIError(400, "INVALID_TYPE", message)
        case .invalidFilter: return APIError(400, "INVALID_QUERY_FILTER_OPERATOR", message)
        }
    }
}
