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
