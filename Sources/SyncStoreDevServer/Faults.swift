import Foundation

/// Fault injection (`--faults SPEC`, or `PUT /__devserver/faults` with `--admin`).
///
///     SPEC   := PART (';' PART)*
///     PART   := 'seed=' INT | RULE
///     RULE   := [METHOD] [PATH-GLOB] ITEM+          (whitespace separated)
///     ITEM   := latency=MS[-MS] | status=CODE | html=CODE | drop=before|after|mid | unauthorized
///             | expire-tokens | repeat-locator | unknown-client | rate=P | times=N | after=N
///
/// METHOD is GET/POST/PATCH/PUT/DELETE (default: any). PATH-GLOB starts with '/' or '*',
/// '*' matches any run of characters including '/', matched against the path without query
/// (default: every path). A rule fires with probability `rate` (default 1), skipping its first
/// `after` matches, at most `times` times. Latency of all firing rules adds up; the first firing
/// rule with an action decides the action. Randomness comes from `seed` (default 1), so a
/// sequential client sees the same faults on every run. `html=CODE` answers CODE with a web
/// server's HTML error page (about 3 KB, text/html), as a proxy or load balancer does. `repeat-locator` only applies to GET
/// `query`/`queryAll` requests (first pages and locator pages); other requests pass it by.
/// `unknown-client` only applies to Streaming API requests (`/cometd/...`) that name a client
/// (not a bare handshake): their messages are answered `403::Unknown client` and the client's
/// session is forgotten; other requests pass it by.
struct FaultRule: CustomStringConvertible {
    enum Action: Equatable {
        case status(Int)
        case htmlPage(Int)
        case dropBefore, dropAfter, dropMid
        case unauthorized
        case expireTokens
        /// The query answer's `nextRecordsUrl` names the page just served (`done` false).
        case repeatLocator
        /// A Streaming API request's client is forgotten: `403::Unknown client`.
        case unknownClient
    }

    var method: String?
    var glob: String = "*"
    var latency: (Int, Int)?
    var action: Action?
    var rate: Double = 1
    var times: Int?
    var after = 0
    var seen = 0
    var fired = 0

    var description: String {
        var parts: [String] = []
        if let method { parts.append(method) }
        parts.append(glob)
        if let (lo, hi) = latency { parts.append(lo == hi ? "latency=\(lo)ms" : "latency=\(lo)-\(hi)ms") }
        switch action {
        case .status(let c)?: parts.append("status=\(c)")
        case .htmlPage(let c)?: parts.append("html=\(c)")
        case .dropBefore?: parts.append("drop=before")
        case .dropAfter?: parts.append("drop=after")
        case .dropMid?: parts.append("drop=mid")
        case .unauthorized?: parts.append("unauthorized")
        case .expireTokens?: parts.append("expire-tokens")
        case .repeatLocator?: parts.append("repeat-locator")
        case .unknownClient?: parts.append("unknown-client")
        case nil: break
        }
        if rate != 1 { parts.append("rate=\(rate)") }
        if let times { parts.append("times=\(times)") }
        if after > 0 { parts.append("after=\(after)") }
        parts.append("(matched \(seen), fired \(fired))")
        return parts.joined(separator: " ")
    }
}

struct FaultSpecError: Error, CustomStringConvertible { let description: String }

struct FaultDecision {
    var latencyMillis = 0
    var action: FaultRule.Action?
}

final class Faults: @unchecked Sendable {
    private let lock = NSLock()
    private var rules: [FaultRule] = []
    private var rng = SplitMix64(seed: 1)
    private(set) var spec = ""

    func set(_ spec: String) throws {
        let (rules, seed) = try Faults.parse(spec)
        lock.withLock {
            self.rules = rules
            self.rng = SplitMix64(seed: seed)
            self.spec = spec
        }
    }

    func describe() -> String {
        lock.withLock { (["spec: \(spec)"] + rules.map { "rule: \($0)" }).joined(separator: "\n") + "\n" }
    }

    static func parse(_ spec: String) throws -> ([FaultRule], UInt64) {
        var rules: [FaultRule] = []
        var seed: UInt64 = 1
        for part in spec.split(separator: ";") {
            let words = part.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "," }).map(String.init)
            if words.isEmpty { continue }
            if words.count == 1, words[0].hasPrefix("seed=") {
                guard let s = UInt64(words[0].dropFirst(5)) else { throw FaultSpecError(description: "faults: bad seed '\(words[0])'") }
                seed = s
                continue
            }
            var rule = FaultRule()
            for w in words {
                let kv = w.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let key = kv[0].lowercased()
                let value = kv.count > 1 ? kv[1] : nil
                func bad() -> FaultSpecError { FaultSpecError(description: "faults: cannot understand '\(w)' in '\(part.trimmingCharacters(in: .whitespaces))'") }
                func setAction(_ a: FaultRule.Action) throws {
                    guard rule.action == nil else { throw FaultSpecError(description: "faults: one action per rule ('\(part)')") }
                    rule.action = a
                }
                switch key {
                case _ where value == nil && ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"].contains(w.uppercased()) && w == w.uppercased():
                    rule.method = w.uppercased()
                case _ where value == nil && (w.hasPrefix("/") || w.hasPrefix("*")):
                    rule.glob = w
                case "latency":
                    guard let v = value else { throw bad() }
                    let nums = v.lowercased().replacingOccurrences(of: "ms", with: "").split(separator: "-").compactMap { Int($0) }
                    guard nums.count == 1 || nums.count == 2, nums.allSatisfy({ $0 >= 0 && $0 <= 600_000 }) else { throw bad() }
                    rule.latency = (nums[0], nums.count == 2 ? max(nums[0], nums[1]) : nums[0])
                case "status":
                    guard let v = value, let code = Int(v), (400...599).contains(code) else { throw bad() }
                    try setAction(.status(code))
                case "html":
                    guard let v = value, let code = Int(v), (400...599).contains(code) else { throw bad() }
                    try setAction(.htmlPage(code))
                case "drop":
                    switch value?.lowercased() {
                    case "before": try setAction(.dropBefore)
                    case "after": try setAction(.dropAfter)
                    case "mid": try setAction(.dropMid)
                    default: throw bad()
                    }
                case "unauthorized", "401":
                    guard value == nil else { throw bad() }
                    try setAction(.unauthorized)
                case "expire-tokens":
                    guard value == nil else { throw bad() }
                    try setAction(.expireTokens)
                case "repeat-locator":
                    guard value == nil else { throw bad() }
                    try setAction(.repeatLocator)
                case "unknown-client":
                    guard value == nil else { throw bad() }
                    try setAction(.unknownClient)
                case "rate":
                    guard let v = value, let p = Double(v), (0...1).contains(p) else { throw bad() }
                    rule.rate = p
                case "times":
                    guard let v = value, let n = Int(v), n >= 0 else { throw bad() }
                    rule.times = n
                case "after":
                    guard let v = value, let n = Int(v), n >= 0 else { throw bad() }
                    rule.after = n
                default:
                    throw bad()
                }
            }
            guard rule.latency != nil || rule.action != nil else {
                throw FaultSpecError(description: "faults: rule '\(part.trimmingCharacters(in: .whitespaces))' has no latency= or action")
            }
            rules.append(rule)
        }
        return (rules, seed)
    }

    /// `namesStreamingClient`: a `/cometd/` request with a message naming a clientId (where
    /// `unknown-client` applies).
    func decide(method: String, path: String, namesStreamingClient: Bool = false) -> FaultDecision {
        lock.withLock {
            var d = FaultDecision()
            for i in rules.indices {
                let r = rules[i]
                if let m = r.method, m != method { continue }
                if !Faults.glob(r.glob, matches: path) { continue }
                if r.action == .repeatLocator && !(method == "GET" && Faults.isQueryPath(path)) { continue }
                if r.action == .unknownClient && !namesStreamingClient { continue }
                if r.action != nil && d.action != nil { continue }
                rules[i].seen += 1
                if rules[i].seen <= r.after { continue }
                if let t = r.times, r.fired >= t { continue }
                if r.rate < 1 && Double(rng.next() % 1_000_000) / 1_000_000 >= r.rate { continue }
                rules[i].fired += 1
                if let (lo, hi) = r.latency { d.latencyMillis += lo + (hi > lo ? Int(rng.next() % UInt64(hi - lo + 1)) : 0) }
                if let a = r.action { d.action = a }
            }
            return d
        }
    }

    /// `/services/data/vNN.N/query[...]` or `queryAll[...]`: where `repeat-locator` applies.
    static func isQueryPath(_ path: String) -> Bool {
        let s = path.split(separator: "/", omittingEmptySubsequences: true)
        return s.count >= 4 && s[0] == "services" && s[1] == "data" && (s[3] == "query" || s[3] == "queryAll")
    }

    /// '*' matches any run of characters (including '/'); everything else literally.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        let p = Array(pattern.utf8), t = Array(text.utf8)
        var pi = 0, ti = 0, star = -1, mark = 0
        while ti < t.count {
            if pi < p.count, p[pi] != UInt8(ascii: "*"), p[pi] == t[ti] {
                pi += 1; ti += 1
            } else if pi < p.count, p[pi] == UInt8(ascii: "*") {
                star = pi; mark = ti; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; ti = mark
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == UInt8(ascii: "*") { pi += 1 }
        return pi == p.count
    }
}
