import Foundation
import SyncStoreSupport

/// Salesforce timestamps: `2015-01-21T23:51:33.000+0000`, UTC, millisecond precision.
/// Stored in SQLite in exactly this text form so that text order is time order and query
/// results can be emitted without conversion.
enum SFTime {
    /// The server's clock: the real clock shifted by `--clock-offset` (or
    /// `PUT /__devserver/clock`). Record stamps, the `Date` header, the `updated`/`deleted`
    /// windows and SOQL date literals all read this one. Only bookkeeping that must not move
    /// with `--clock-offset` (token expiry, cursor idling, request logs) reads `Clock.nowMillis()`.
    static func serverNowMillis() -> Int64 { Clock.nowMillis() + ClockOffset.shared.millis }

    /// Years 0001...9999; wider values (say a client's epoch-ms parameter) are clamped, never trap.
    static let minMillis: Int64 = -62_135_596_800_000
    static let maxMillis: Int64 = 253_402_300_799_999

    static func format(millis unclamped: Int64) -> String {
        Timestamp.format(min(max(unclamped, minMillis), maxMillis), zone: "+0000")
    }

    /// Parses ISO-8601 datetimes as Salesforce accepts them: `2026-01-01T00:00:00Z`,
    /// `2026-01-01T00:00:00.000+0000`, `+05:30` offsets, and (leniently) a bare date.
    static func parseDateTime(_ s: String) -> Int64? {
        if s.utf8.count == 10, let d = Timestamp.parseDate(s) { return Int64(d) * 86_400_000 }
        return Timestamp.parse(s, requireFractionDigits: true)
    }

    /// RFC 7231 date, for Last-Modified.
    static func httpDate(millis unclamped: Int64) -> String {
        HTTPDate.format(millis: min(max(unclamped, 0), maxMillis))
    }

    /// Parses `Tue, 13 Jan 2026 10:00:00 GMT` (also accepts ISO-8601, which some clients send).
    static func parseHTTPDate(_ s: String) -> Int64? {
        if let iso = parseDateTime(s.trimmingCharacters(in: .whitespaces)) { return iso }
        return HTTPDate.parse(s, strict: false)
    }
}

/// The server clock's shift from the real clock (fault injection: a server whose clock is ahead
/// of or behind its clients'). At most one day either way.
final class ClockOffset: @unchecked Sendable {
    static let shared = ClockOffset()
    static let maxMillis: Int64 = 86_400_000
    private let lock = NSLock()
    private var value: Int64 = 0

    var millis: Int64 { lock.withLock { value } }

    /// Sets the offset in milliseconds; false (and unchanged) when it is beyond one day.
    @discardableResult
    func set(millis: Int64) -> Bool {
        guard abs(millis) <= ClockOffset.maxMillis else { return false }
        lock.withLock { value = millis }
        return true
    }

    /// Parses seconds as given on the command line or to the admin endpoint: `-600`, `+90`,
    /// `1.5`. nil when malformed or beyond one day.
    static func parseSeconds(_ text: String) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let seconds = Double(t.hasPrefix("+") ? String(t.dropFirst()) : t), seconds.isFinite,
              abs(seconds) <= Double(maxMillis / 1000) else { return nil }
        return Int64((seconds * 1000).rounded())
    }
}

/// Hands out strictly increasing write timestamps (ms) from the server clock, so SystemModstamp
/// never repeats and never goes back: when the clock offset is lowered at run time, stamps go on
/// one millisecond apart until the shifted clock passes the last one (as an org's would).
final class WriteClock: @unchecked Sendable {
    private var last: Int64 = 0
    private let lock = NSLock()

    func advance(past value: Int64) { lock.withLock { last = max(last, value) } }

    func next() -> Int64 {
        lock.withLock {
            last = max(SFTime.serverNowMillis(), last + 1)
            return last
        }
    }
}

/// 18-character Salesforce ids: 3-char key prefix, 12 base-62 chars, 3-char case checksum.
enum SFId {
    static let base62 = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    static let suffixChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345".utf8)

    static func make(prefix: String, sequence: Int64) -> String {
        var body = [UInt8](repeating: UInt8(ascii: "0"), count: 12)
        var n = sequence
        var i = 11
        while n > 0 && i >= 0 {
            body[i] = base62[Int(n % 62)]
            n /= 62
            i -= 1
        }
        return to18(prefix + String(decoding: body, as: UTF8.self)) ?? prefix
    }

    static func isIdChar(_ c: UInt8) -> Bool {
        (48...57).contains(c) || (65...90).contains(c) || (97...122).contains(c)
    }

    /// Converts a 15-char id to 18 chars; validates an 18-char one. nil when malformed.
    static func to18(_ id: String) -> String? {
        let b = Array(id.utf8)
        guard b.count == 15 || b.count == 18, b.allSatisfy(isIdChar) else { return nil }
        var suffix: [UInt8] = []
        for chunk in 0..<3 {
            var bits = 0
            for j in 0..<5 where (65...90).contains(b[chunk * 5 + j]) { bits |= 1 << j }
            suffix.append(suffixChars[bits])
        }
        if b.count == 18 {
            // Accept a case-insensitively matching suffix, as the API does.
            guard String(decoding: b[15...], as: UTF8.self).uppercased() == String(decoding: suffix, as: UTF8.self) else { return nil }
            return String(decoding: b[0..<15] + suffix, as: UTF8.self)
        }
        return id + String(decoding: suffix, as: UTF8.self)
    }
}
