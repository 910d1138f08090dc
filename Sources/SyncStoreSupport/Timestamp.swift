/// Salesforce datetimes (`2015-01-21T23:51:33.000+0000`, `...Z`, `...+02:00`) and dates
/// (`2015-01-21`) to and from epoch milliseconds (days), without Foundation.
public enum Timestamp {
    public static func parse(_ text: String) -> Int64? { parse(text, requireFractionDigits: false) }

    public static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Int64? { parse(bytes: b, requireFractionDigits: false) }

    /// `requireFractionDigits`: a `.` after the seconds must be followed by a digit.
    public static func parse(_ text: String, requireFractionDigits: Bool) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0, requireFractionDigits: requireFractionDigits) }
    }

    public static func parse(bytes b: UnsafeBufferPointer<UInt8>, requireFractionDigits: Bool) -> Int64? {
        func digits(_ start: Int, _ count: Int) -> Int? { CivilDate.digits(b, start, count) }
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
            let start = i
            var scale = 100
            while i < b.count && b[i] >= 48 && b[i] <= 57 {
                millis += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            if requireFractionDigits && i == start { return nil }
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
        let days = CivilDate.days(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }

    /// `2015-01-21T23:51:33.000Z` (the form SOQL accepts as a datetime literal), or with `zone`
    /// in place of the `Z` (`+0000`, the form Salesforce answers with).
    public static func format(_ millis: Int64, zone: String = "Z") -> String {
        let ms = ((millis % 1000) + 1000) % 1000
        let totalSeconds = (millis - ms) / 1000
        var days = totalSeconds / 86_400
        var secs = totalSeconds % 86_400
        if secs < 0 { secs += 86_400; days -= 1 }
        let (y, m, d) = CivilDate.civil(days: Int(days))
        let pad = CivilDate.pad
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(Int(secs / 3600), 2)):\(pad(Int(secs % 3600 / 60), 2)):\(pad(Int(secs % 60), 2)).\(pad(Int(ms), 3))\(zone)"
    }

    /// `2015-01-21 23:51:33`: UTC to the whole second (the fraction is dropped), the SQL form some
    /// non-Salesforce backends use for their stamps (the two-phase protocol's tables). `parse`
    /// reads it back.
    public static func formatSpaced(_ millis: Int64) -> String {
        let iso = format(millis - ((millis % 1000) + 1000) % 1000)
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8))
    }

    /// Parses `YYYY-MM-DD` into days since 1970-01-01.
    public static func parseDate(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { b in
            guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
                  let y = CivilDate.digits(b, 0, 4), let m = CivilDate.digits(b, 5, 2), let d = CivilDate.digits(b, 8, 2),
                  (1...12).contains(m), (1...31).contains(d) else { return nil }
            return CivilDate.days(year: y, month: m, day: d)
        }
    }

    /// `YYYY-MM-DD` of a day counted from 1970-01-01.
    public static func formatDate(days: Int) -> String {
        let (y, m, d) = CivilDate.civil(days: days)
        return "\(CivilDate.pad(y, 4))-\(CivilDate.pad(m, 2))-\(CivilDate.pad(d, 2))"
    }
}
