/// Salesforce datetimes (`2015-01-21T23:51:33.000+0000`, `...Z`, `...+02:00`) to and from
/// epoch milliseconds, without Foundation.
public enum Timestamp {
    static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Int64? {
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var v = 0
            for i in start..<(start + count) {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard b.count >= 19, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: " "),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
              let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
              let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var millis = 0
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 100
            while i < b.count && b[i] >= 48 && b[i] <= 57 {
                millis += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        var offsetMinutes = 0
        if i < b.count {
            if b[i] == UInt8(ascii: "Z") {
                i += 1
            } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
                let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
                guard let oh = digits(i + 1, 2) else { return nil }
                var j = i + 3
                if j < b.count && b[j] == UInt8(ascii: ":") { j += 1 }
                guard let om = digits(j, 2) else { return nil }
                offsetMinutes = sign * (oh * 60 + om)
                i = j + 2
            } else {
                return nil
            }
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year, month, day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }

    /// `2015-01-21T23:51:33.000Z`, the form SOQL accepts as a datetime literal.
    public static func format(_ millis: Int64) -> String {
        let ms = ((millis % 1000) + 1000) % 1000
        let totalSeconds = (millis - ms) / 1000
        var days = totalSeconds / 86_400
        var secs = totalSeconds % 86_400
        if secs < 0 { secs += 86_400; days -= 1 }
        let (y, m, d) = civilFromDays(Int(days))
        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(Int(secs / 3600), 2)):\(pad(Int(secs % 3600 / 60), 2)):\(pad(Int(secs % 60), 2)).\(pad(Int(ms), 3))Z"
    }

    /// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 IMF-fixdate) in epoch ms.
    static func parseHTTPDate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]),
              let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].firstIndex(of: String(parts[2])),
              (1...31).contains(day) else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let h = Int(time[0]), let m = Int(time[1]), let sec = Int(time[2]),
              (0..<24).contains(h), (0..<60).contains(m), (0...60).contains(sec) else { return nil }
        let days = daysFromCivil(year, month + 1, day)
        return (Int64(days) * 86_400 + Int64(h * 3600 + m * 60 + sec)) * 1000
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    private static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
