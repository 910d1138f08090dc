/// Finds where each element of a response's top-level "records" array lies in the response
/// text, so a synced record can be stored as the server sent it instead of being serialized
/// again (serializing was a fifth of the sync down cost). Returns nil when the text does not
/// have the expected shape; callers then fall back to serializing.
enum RecordSlicer {
    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    private static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    private static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    private static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")
    private static let recordsKey = Array("records".utf8)

    static func recordRanges(_ b: [UInt8]) -> [Range<Int>]? {
        var i = 0
        let n = b.count
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }
        func skipSpace() { while i < n && isSpace(b[i]) { i += 1 } }
        func skipString() -> Bool {
            i += 1
            while i < n {
                if b[i] == backslash { i += 2; continue }
                if b[i] == quote { i += 1; return true }
                i += 1
            }
            return false
        }
        func skipValue() -> Bool {
            skipSpace()
            guard i < n else { return false }
            switch b[i] {
            case quote:
                return skipString()
            case openBrace, openBracket:
                var depth = 0
                while i < n {
                    let c = b[i]
                    if c == quote {
                        guard skipString() else { return false }
                        continue
                    }
                    if c == openBrace || c == openBracket {
                        depth += 1
                    } else if c == closeBrace || c == closeBracket {
                        depth -= 1
                        if depth == 0 { i += 1; return true }
                    }
                    i += 1
                }
                return false
            default:
                while i < n && b[i] != comma && b[i] != closeBrace && b[i] != closeBracket && !isSpace(b[i]) { i += 1 }
                return true
            }
        }
        skipSpace()
        guard i < n, b[i] == openBrace else { return nil }
        i += 1
        while true {
            skipSpace()
            guard i < n, b[i] == quote else { return nil }
            let keyStart = i + 1
            guard skipString() else { return nil }
            let isRecords = b[keyStart..<(i - 1)].elementsEqual(recordsKey)
            skipSpace()
            guard i < n, b[i] == colon else { return nil }
            i += 1
            skipSpace()
            if isRecords {
                guard i < n, b[i] == openBracket else { return nil }
                i += 1
                var ranges: [Range<Int>] = []
                skipSpace()
                if i < n && b[i] == closeBracket { return ranges }
                while true {
                    skipSpace()
                    let start = i
                    guard skipValue() else { return nil }
                    ranges.append(start..<i)
                    skipSpace()
                    guard i < n else { return nil }
                    if b[i] == comma { i += 1; continue }
                    return b[i] == closeBracket ? ranges : nil
                }
            }
            guard skipValue() else { return nil }
            skipSpace()
            guard i < n, b[i] == comma else { return nil }
            i += 1
        }
    }
}
