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
