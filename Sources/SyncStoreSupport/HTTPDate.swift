/// HTTP dates (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 IMF-fixdate) to and from epoch
/// milliseconds.
public enum HTTPDate {
    static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `millis` must be at least 0: before 1970 the time of day would come out negative.
    public static func format(millis: Int64) -> String {
        let secs = millis / 1000
        let dayCount = Int(secs / 86400)
        let rem = Int(secs % 86400)
        let (y, m, d) = CivilDate.civil(days: dayCount)
        let wd = weekdays[((dayCount % 7) + 7) % 7]
        let pad = CivilDate.pad
        return "\(wd), \(pad(d, 2)) \(months[m - 1]) \(pad(y, 4)) \(pad(rem / 3600, 2)):\(pad(rem / 60 % 60, 2)):\(pad(rem % 60, 2)) GMT"
    }

    /// Strict: exactly `Www, DD Mon YYYY HH:MM:SS GMT`. Lenient (what a server accepts from
    /// clients): the zone may be missing or other, and the year must be 1...9999.
    public static func parse(_ text: String, strict: Bool = true) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard strict ? parts.count == 6 && parts[5] == "GMT" : parts.count >= 5,
              let day = Int(parts[1]), let year = Int(parts[3]), let month = months.firstIndex(of: String(parts[2])),
              (1...31).contains(day), strict || (1...9999).contains(year) else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let h = Int(time[0]), let m = Int(time[1]), let sec = Int(time[2]),
              (0..<24).contains(h), (0..<60).contains(m), (0...60).contains(sec) else { return nil }
        let days = CivilDate.days(year: year, month: month + 1, day: day)
        return (Int64(days) * 86_400 + Int64(h * 3600 + m * 60 + sec)) * 1000
    }
}
