import Foundation

/// Salesforce timestamps: `2015-01-21T23:51:33.000+0000`, UTC, millisecond precision.
/// Stored in SQLite in exactly this text form so that text order is time order and query
/// results can be emitted without conversion.
enum SFTime {
    /// The real clock. Only bookkeeping that must not move with `--clock-offset` (token expiry,
    /// cursor idling, request logs) reads it; everything a client sees uses `serverNowMillis()`.
    static func nowMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The server's clock: the real clock shifted by `--clock-offset` (or
    /// `PUT /__devserver/clock`). Record stamps, the `Date` header, the `updated`/`deleted`
    /// windows and SOQL date literals all read this one.
    static func serverNowMillis() -> Int64 { nowMillis() + ClockOffset.shared.millis }

    // Days from civil, after H. Hinnant's public-domain algorithm.
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civil(days z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    private static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// Years 0001...9999; wider values (say a client's epoch-ms parameter) are clamped, never trap.
    static let minMillis: Int64 = -62_135_596_800_000
    static let maxMillis: Int64 = 253_402_300_799_999

    static func format(millis unclamped: Int64) -> String {
        let millis = min(max(unclamped, minMillis), maxMillis)
        let ms = Int(((millis % 1000) + 1000) % 1000)
        let secs = (millis - Int64(ms)) / 1000
        var dayCount = Int(secs / 86400)
        var rem = Int(secs % 86400)
        if rem < 0 { rem += 86400; dayCount -= 1 }
        let (y, m, d) = civil(days: dayCount)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rem / 3600, 2)):\(pad(rem / 60 % 60, 2)):\(pad(rem % 60, 2)).\(pad(ms, 3))+0000"
    }

    static func formatDate(days: Int) -> String {
        let (y, m, d) = civil(days: days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }

    /// Parses `YYYY-MM-DD` into days since epoch.
    static func parseDate(_ s: String) -> Int? {
        let b = Array(s.utf8)
        guard b.count == 10, b[4] == 45, b[7] == 45,
              let y = digits(b, 0, 4), let m = digits(b, 5, 2), let d = digits(b, 8, 2),
              (1...12).contains(m), (1...31).contains(d) else { return nil }
        return days(year: y, month: m, day: d)
    }

    /// Parses ISO-8601 datetimes as Salesforce accepts them: `2026-01-01T00:00:00Z`,
    /// `2026-01-01T00:00:00.000+0000`, `+05:30` offsets, and (leniently) a bare date.
    static func parseDateTime(_ s: String) -> Int64? {
        let b = Array(s.utf8)
        if b.count == 10, let d = parseDate(s) { return Int64(d) * 86_400_000 }
        guard b.count >= 19, b[4] == 45, b[7] == 45, b[10] == 84 || b[10] == 32, b[13] == 58, b[16] == 58,
              let y = digits(b, 0, 4), let mo = digits(b, 5, 2), let d = digits(b, 8, 2),
              let h = digits(b, 11, 2), let mi = digits(b, 14, 2), let sec = digits(b, 17, 2),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, sec < 61 else { return nil }
        var i = 19
        var ms = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var scale = 100
            let start = i
            while i < b.count, (48...57).contains(b[i]) {
                ms += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            if i == start { return nil }
        }
        var offsetMinutes = 0
        if i < b.count {
            if b[i] == 90 { // Z
                i += 1
            } else if b[i] == 43 || b[i] == 45 {
                let sign = b[i] == 43 ? 1 : -1
                i += 1
                guard let oh = digits(b, i, 2) else { return nil }
                i += 2
                if i < b.count, b[i] == 58 { i += 1 }
                guard let om = digits(b, i, 2) else { return nil }
                i += 2
                offsetMinutes = sign * (oh * 60 + om)
            }
        }
        guard i == b.count else { return nil }
        let daysCount = Int64(days(year: y, month: mo, day: d))
        let secs = daysCount * 86400 + Int64(h * 3600 + mi * 60 + sec) - Int64(offsetMinutes * 60)
        return secs * 1000 + Int64(ms)
    }

    private static func digits(_ b: [UInt8], _ at: Int, _ n: Int) -> Int? {
        guard at >= 0, at + n <= b.count else { return nil }
        var v = 0
        for i in at..<(at + n) {
            guard (48...57).contains(b[i]) else { return nil }
            v = v * 10 + Int(b[i] - 48)
        }
        return v
    }

    static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// RFC 7231 date, for Last-Modified.
    static func httpDate(millis unclamped: Int64) -> String {
        let millis = min(max(unclamped, 0), maxMillis)
        let secs = millis / 1000
        let dayCount = Int(secs / 86400)
        let rem = Int(secs % 86400)
        let (y, m, d) = civil(days: dayCount)
        let wd = weekdays[((dayCount % 7) + 7) % 7]
        return "\(wd), \(pad(d, 2)) \(months[m - 1]) \(pad(y, 4)) \(pad(rem / 3600, 2)):\(pad(rem / 60 % 60, 2)):\(pad(rem % 60, 2)) GMT"
    }

    /// Parses `Tue, 13 Jan 2026 10:00:00 GMT` (also accepts ISO-8601, which some clients send).
    static func parseHTTPDate(_ s: String) -> Int64? {
        if let iso = parseDateTime(s.trimmingCharacters(in: .whitespaces)) { return iso }
        let parts = s.split(separator: " ").map(String.init)
        guard parts.count >= 5,
              let d = Int(parts[1]), let mIndex = months.firstIndex(of: parts[2]), let y = Int(parts[3]),
              (1...31).contains(d), (1...9999).contains(y) else { return nil }
        let hms = parts[4].split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (0..<24).contains(hms[0]), (0..<60).contains(hms[1]), (0...60).contains(hms[2]) else { return nil }
        let daysCount = Int64(days(year: y, month: mIndex + 1, day: d))
        return (daysCount * 86400 + Int64(hms[0] * 3600 + hms[1] * 60 + hms[2])) * 1000
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
