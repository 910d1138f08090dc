import Glibc

/// What to read from each record of a query page: one slot per path. A path is a list of keys
/// (an index path split at its dots); a record's value for a slot is what `SoupPath.project`
/// would find there, for the scalar cases the scanner handles.
package struct ScanPlan {
    package let paths: [[String]]
    /// The slot of the record's id, which messages about a record name it by.
    package let idSlot: Int?
    fileprivate let root: ScanNode

    /// `reservedKeys`: top-level keys whose presence sends a record to the tree path (keys the
    /// store writes). nil when the plan is beyond what the scanner tracks (over 64 keys at one level).
    package init?(paths: [[String]], reservedKeys: [String], idSlot: Int? = nil) {
        self.paths = paths
        self.idSlot = idSlot
        let root = ScanNode(key: [])
        for (slot, path) in paths.enumerated() {
            guard !path.isEmpty else { return nil }
            var node = root
            for key in path { node = node.child(Array(key.utf8)) }
            node.slots.append(slot)
        }
        for key in reservedKeys { root.child(Array(key.utf8)).reserved = true }
        guard root.fits else { return nil }
        self.root = root
    }
}

private final class ScanNode {
    let key: [UInt8]
    var slots: [Int] = []
    var children: [ScanNode] = []
    var reserved = false

    init(key: [UInt8]) { self.key = key }

    func child(_ key: [UInt8]) -> ScanNode {
        if let found = children.first(where: { $0.key == key }) { return found }
        let node = ScanNode(key: key)
        children.append(node)
        return node
    }

    /// Duplicate keys are detected with a 64-bit mask per object.
    var fits: Bool { children.count <= 64 && children.allSatisfy(\.fits) }
}

/// A value read for one slot. Text without escapes stays in the page (`text`); text with
/// escapes is decoded into the page's `strings`.
package enum ScannedValue {
    case null
    case bool(Bool)
    case int(Int64)
    case real(Double)
    case text(start: Int32, count: Int32)
    case decoded(Int32)
}

/// One record of a scanned page: where its object text lies, and whether it must be parsed
/// into a tree instead (escaped keys, duplicate or reserved keys, a path through an array or
/// ending at an object, numbers jansson would judge): rare, handled by the slower path.
package struct ScannedRecord {
    package let start: Int32
    package let end: Int32
    package let needsTree: Bool
    /// The text is exactly what jansson writes for it (compact, no key twice, no escape jansson
    /// writes otherwise, no real): a host's entry stored from its text equals the tree path's.
    package var canonical = false
}

/// A `query` answer (`{totalSize, done, nextRecordsUrl, records}`) read without building a
/// jansson tree: the records stay as text, with the values of the plan's paths. The scanner
/// validates the whole text as strictly as jansson does (syntax, UTF-8, escapes, surrogates),
/// because the record text is stored as it arrived.
package struct ScannedPage {
    package let bytes: [UInt8]
    package let plan: ScanPlan
    package var totalSize: Int64?
    package var done = true
    package var nextRecordsUrl: String?
    package var records: [ScannedRecord] = []
    /// `records.count * plan.paths.count` values, record-major.
    package var values: [ScannedValue] = []
    package var strings: [String] = []

    package func value(record: Int, slot: Int) -> ScannedValue { values[record * plan.paths.count + slot] }

    /// "Record 3 (Id '001…')" for messages about record `k`.
    package func describe(record k: Int) -> String {
        guard let slot = plan.idSlot else { return "Record \(k)" }
        let id = value(record: k, slot: slot)
        if case .int(let v) = id { return "Record \(k) (\(plan.paths[slot].joined(separator: ".")) \(v))" }
        guard let text = string(id) else { return "Record \(k)" }
        return "Record \(k) (\(plan.paths[slot].joined(separator: ".")) '\(text.prefix(100))')"
    }

    /// The text of a text value as a String (nil for other kinds).
    package func string(_ value: ScannedValue) -> String? {
        withText(value) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the bytes of a text value (nil for other kinds).
    package func withText<T>(_ value: ScannedValue, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        switch value {
        case .text(let start, let count):
            return try bytes.withUnsafeBufferPointer { all in
                try body(UnsafeBufferPointer(rebasing: all[Int(start)..<Int(start + count)]))
            }
        case .decoded(let k):
            var s = strings[Int(k)]
            return try s.withUTF8 { try body($0) }
        default:
            return nil
        }
    }

    /// Record `k`'s text as a tree.
    package func parseRecord(_ k: Int) throws -> JSONDocument {
        let record = records[k]
        return try bytes.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { throw StoreError(.internal, "A scanned page has no text") }
            return try JSONDocument.parse(bytes: base + Int(record.start), length: Int(record.end - record.start), what: "entry \(k)", limitDepth: false)
        }
    }

    /// Scans the entries of a host upsert: a JSON array of objects, or one object. nil when the
    /// text is anything else or not valid (the caller parses it with jansson, which reports the
    /// error as it always has).
    /// `canonical`: whether to judge each record's form (`ScannedRecord.canonical`; off, every
    /// record reads as not canonical, and no key list is kept).
    package static func scanEntries(_ bytes: [UInt8], plan: ScanPlan, canonical: Bool = true) -> ScannedPage? {
        guard bytes.count < Int(Int32.max) else { return nil }
        var page = ScannedPage(bytes: bytes, plan: plan)
        let ok = bytes.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var scanner = ByteScanner(p: base, n: buffer.count)
            scanner.judgesForm = canonical
            return scanner.entries(into: &page)
        }
        return ok ? page : nil
    }

    /// Scans `bytes`; nil when the text is not a query answer the scanner can read (the caller
    /// then parses it with jansson, which also reports any syntax error).
    package static func scan(_ bytes: [UInt8], plan: ScanPlan) -> ScannedPage? {
        guard bytes.count < Int(Int32.max) else { return nil }
        var page = ScannedPage(bytes: bytes, plan: plan)
        let ok = bytes.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var scanner = ByteScanner(p: base, n: buffer.count)
            return scanner.page(into: &page)
        }
        return ok ? page : nil
    }
}

private let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
private let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
private let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
private let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")

/// A validating JSON scanner over raw bytes. Methods return false on a syntax error; anything
/// valid that the fast path does not handle sets `unsupported` instead.
private struct ByteScanner {
    let p: UnsafePointer<UInt8>
    let n: Int
    var i = 0
    var unsupported = false
    /// The record being read is still what jansson would write (see ScannedRecord.canonical).
    var canonical = true
    /// Whether records' form is judged at all (host upserts); off, `canonical` ends false.
    var judgesForm = false
    /// Nesting depth, bounded well below jansson's limit; deeper text goes to jansson. Records
    /// (two levels down) then stay within JSONRules.maxDepth, which the fast path relies on.
    var depth = 0
    static let maxDepth = min(512, JSONRules.maxDepth)

    init(p: UnsafePointer<UInt8>, n: Int) {
        self.p = p
        self.n = n
    }

    @inline(__always) mutating func skipSpace() {
        while i < n {
            let c = p[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
            canonical = false
        }
    }

    @inline(__always) func at(_ c: UInt8) -> Bool { i < n && p[i] == c }

    /// A member's key and its colon; the value starts at p[i]. A key holding U+0000 (which
    /// jansson refuses) makes the record `unsupported`: the tree path then refuses it by name.
    @inline(__always) mutating func memberKey() -> StringRange? {
        skipSpace()
        guard at(quote), let key = string() else { return nil }
        if key.escaped && holdsNul(key) { unsupported = true }
        skipSpace()
        guard at(colon) else { return nil }
        i += 1
        skipSpace()
        return i < n ? key : nil
    }

    /// After a member or element: true when a comma says another follows, false when
    /// `closing` ends the container (both consumed), nil on anything else.
    @inline(__always) mutating func separator(_ closing: UInt8) -> Bool? {
        skipSpace()
        guard i < n else { return nil }
        if p[i] == comma { i += 1; return true }
        guard p[i] == closing else { return nil }
        i += 1
        return false
    }

    // MARK: page

    mutating func page(into page: inout ScannedPage) -> Bool {
        skipSpace()
        guard at(openBrace) else { return false }
        i += 1
        var sawRecords = false
        var readable = true
        while true {
            guard let key = memberKey() else { return false }
            unsupported = false
            if key.escaped {
                // An escaped top-level key might spell one the page is read by.
                guard skipValue() else { return false }
                readable = false
            } else if keyEquals(key, "records") {
                guard !sawRecords, at(openBracket) else { return false }
                sawRecords = true
                guard records(into: &page) else { return false }
            } else if keyEquals(key, "totalSize") || keyEquals(key, "done") || keyEquals(key, "nextRecordsUrl") {
                var strings: [String] = []
                let isArrayOrObject = p[i] == openBrace || p[i] == openBracket
                let value = isArrayOrObject ? ScannedValue.null : scalar(strings: &strings, wanted: true)
                if isArrayOrObject { guard skipValue() else { return false } } else if value == nil { return false }
                if keyEquals(key, "totalSize") {
                    if case .int(let v) = value { page.totalSize = v } else { page.totalSize = nil }
                } else if keyEquals(key, "done") {
                    if case .bool(let b) = value { page.done = b } else { page.done = true }
                } else {
                    switch value {
                    case .text(let start, let count):
                        page.nextRecordsUrl = String(decoding: UnsafeBufferPointer(start: p + Int(start), count: Int(count)), as: UTF8.self)
                    case .decoded: page.nextRecordsUrl = strings.first
                    default: page.nextRecordsUrl = nil
                    }
                }
                if unsupported { readable = false }
            } else {
                guard skipValue() else { return false }
                if unsupported { readable = false }
            }
            guard let more = separator(closeBrace) else { return false }
            if !more { break }
        }
        skipSpace()
        return i == n && sawRecords && readable
    }

    mutating func records(into page: inout ScannedPage) -> Bool {
        i += 1
        skipSpace()
        if at(closeBracket) { i += 1; return true }
        while true {
            skipSpace()
            // Records that are not objects are left to the tree path.
            guard at(openBrace) else { return false }
            guard record(into: &page) else { return false }
            guard let more = separator(closeBracket) else { return false }
            if !more { return true }
        }
    }

    /// One record (an object at p[i]) with the values of the plan's paths.
    mutating func record(into page: inout ScannedPage) -> Bool {
        let start = i
        let base = page.values.count
        page.values.append(contentsOf: repeatElement(.null, count: page.plan.paths.count))
        unsupported = false
        canonical = judgesForm
        let ok = page.values.withUnsafeMutableBufferPointer { values -> Bool in
            guard let first = values.baseAddress else { return false }
            return object(node: page.plan.root, values: first + base, strings: &page.strings)
        }
        guard ok else { return false }
        page.records.append(ScannedRecord(start: Int32(start), end: Int32(i), needsTree: unsupported, canonical: canonical))
        unsupported = false
        return true
    }

    /// A host upsert's entries: an array of objects, or one object, and nothing after it.
    mutating func entries(into page: inout ScannedPage) -> Bool {
        skipSpace()
        if at(openBracket) {
            guard records(into: &page) else { return false }
        } else if at(openBrace) {
            guard record(into: &page) else { return false }
        } else {
            return false
        }
        skipSpace()
        return i == n
    }

    /// Notes an object's key: a key seen twice in it (jansson keeps the last value where the
    /// first was) or an object too wide to check cheaply is not canonical.
    @inline(__always) mutating func note(_ key: StringRange, among keys: inout [StringRange]) {
        guard canonical else { return }
        guard keys.count < 64 else { canonical = false; return }
        let length = key.end - key.start
        for other in keys where other.end - other.start == length && memcmp(p + other.start, p + key.start, length) == 0 {
            canonical = false
            return
        }
        keys.append(key)
    }

    // MARK: values

    /// An object at p[i] == '{'. With a node, the values of its paths are recorded.
    mutating func object(node: ScanNode, values: UnsafeMutablePointer<ScannedValue>, strings: inout [String]) -> Bool {
        var seen: UInt64 = 0
        var keys: [StringRange] = []
        if canonical { keys.reserveCapacity(16) }
        return container(closing: closeBrace) { s in
            guard let key = s.memberKey() else { return false }
            s.note(key, among: &keys)
            var match: ScanNode? = nil
            if key.escaped {
                s.unsupported = true
            } else {
                for (k, child) in node.children.enumerated() where child.key.count == key.end - key.start
                    && memcmp(s.p + key.start, child.key, child.key.count) == 0 {
                    let bit: UInt64 = 1 << UInt64(k)
                    if seen & bit != 0 || child.reserved { s.unsupported = true }
                    seen |= bit
                    match = child
                    break
                }
            }
            guard let match else { return s.skipValue() }
            return s.matched(match, values: values, strings: &strings)
        }
    }

    /// An object or array at p[i]: `element` reads each member or element in turn (the
    /// separators, the closing `closing` and the depth bound are handled here).
    @inline(__always) mutating func container(closing: UInt8, _ element: (inout ByteScanner) -> Bool) -> Bool {
        depth += 1
        defer { depth -= 1 }
        guard depth <= ByteScanner.maxDepth else { return false }
        i += 1
        skipSpace()
        if at(closing) { i += 1; return true }
        while true {
            skipSpace()
            guard element(&self) else { return false }
            guard let more = separator(closing) else { return false }
            if !more { return true }
        }
    }

    /// The value of a key on some plan path.
    mutating func matched(_ node: ScanNode, values: UnsafeMutablePointer<ScannedValue>, strings: inout [String]) -> Bool {
        let c = p[i]
        if c == openBrace {
            if !node.slots.isEmpty { unsupported = true }  // an index on an object: stored as its dump
            if node.children.isEmpty { return skipValue() }
            return object(node: node, values: values, strings: &strings)
        }
        if c == openBracket {
            // A path through an array projects every element; an index on an array stores its dump.
            unsupported = true
            return skipValue()
        }
        guard let value = scalar(strings: &strings, wanted: !node.slots.isEmpty) else { return false }
        for slot in node.slots { values[slot] = value }
        return true
    }

    /// A string, number, true, false or null.
    /// `wanted`: the value is read (escapes decoded, reals converted); otherwise only validated.
    mutating func scalar(strings: inout [String], wanted: Bool) -> ScannedValue? {
        let c = p[i]
        if c == quote {
            guard let s = string() else { return nil }
            if !s.escaped || !wanted { return .text(start: Int32(s.start), count: Int32(s.end - s.start)) }
            strings.append(decode(s))
            return .decoded(Int32(strings.count - 1))
        }
        if matchLiteral("true") { return .bool(true) }
        if matchLiteral("false") { return .bool(false) }
        if matchLiteral("null") { return .null }
        return number(wanted: wanted)
    }

    mutating func skipValue() -> Bool {
        guard i < n else { return false }
        switch p[i] {
        case quote:
            return string() != nil
        case openBrace:
            var keys: [StringRange] = []
            return container(closing: closeBrace) { s in
                guard let key = s.memberKey() else { return false }
                s.note(key, among: &keys)
                return s.skipValue()
            }
        case openBracket:
            return container(closing: closeBracket) { $0.skipValue() }
        default:
            if matchLiteral("true") || matchLiteral("false") || matchLiteral("null") { return true }
            return number(wanted: false) != nil
        }
    }

    @inline(__always) mutating func matchLiteral(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard n - i >= count, memcmp(p + i, word.utf8Start, count) == 0 else { return false }
        i += count
        return true
    }

    // MARK: strings

    struct StringRange {
        package let start: Int
        package let end: Int
        package let escaped: Bool
    }

    /// A string at p[i] == '"'; the range excludes the quotes.
    mutating func string() -> StringRange? {
        i += 1
        let start = i
        var escaped = false
        while i < n {
            // Eight plain bytes at a time (none a quote, backslash, control or non-ASCII byte):
            // most of a record's bytes are inside strings.
            while n - i >= 8 && ByteScanner.plain(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)) { i += 8 }
            guard i < n else { break }
            let c = p[i]
            if c == quote {
                let end = i
                i += 1
                return StringRange(start: start, end: end, escaped: escaped)
            }
            if c == backslash {
                escaped = true
                guard escape() else { return nil }
            } else if c < 0x20 {
                return nil
            } else if c < 0x80 {
                i += 1
            } else {
                guard utf8() else { return nil }
            }
        }
        return nil
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Whether none of the eight bytes of `w` is a quote, a backslash, below 0x20 or above 0x7F.
    /// (`x - ones & ~x & highs` flags a zero byte; a flag may also fall on the byte after a
    /// flagged one, which only sends these eight bytes to the byte-by-byte loop.)
    @inline(__always) static func plain(_ w: UInt64) -> Bool {
        let q = w ^ (ones &* UInt64(quote)), b = w ^ (ones &* UInt64(backslash))
        let special = ((q &- ones) & ~q) | ((b &- ones) & ~b) | (w &- ones &* 0x20) | w
        return special & highs == 0
    }

    /// An escape at p[i] == '\\' (surrogates must pair, as jansson requires).
    mutating func escape() -> Bool {
        guard i + 1 < n else { return false }
        switch p[i + 1] {
        case quote, backslash, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            i += 2
            return true
        case UInt8(ascii: "/"):
            // jansson writes "/" unescaped.
            canonical = false
            i += 2
            return true
        case UInt8(ascii: "u"):
            // jansson writes most characters raw, and its own escapes in upper case.
            canonical = false
            guard let u = hex4(i + 2) else { return false }
            i += 6
            if (0xDC00...0xDFFF).contains(u) { return false }
            if (0xD800...0xDBFF).contains(u) {
                guard i + 1 < n, p[i] == backslash, p[i + 1] == UInt8(ascii: "u"),
                      let low = hex4(i + 2), (0xDC00...0xDFFF).contains(low) else { return false }
                i += 6
            }
            return true
        default:
            return false
        }
    }

    /// Whether a validated string's escapes spell U+0000.
    func holdsNul(_ s: StringRange) -> Bool {
        var k = s.start
        while k < s.end {
            guard p[k] == backslash else { k += 1; continue }
            if p[k + 1] == UInt8(ascii: "u") {
                if hex4(k + 2) == 0 { return true }
                k += 6
            } else {
                k += 2
            }
        }
        return false
    }

    func hex4(_ at: Int) -> UInt32? {
        guard at + 4 <= n else { return nil }
        var v: UInt32 = 0
        for k in 0..<4 {
            let c = p[at + k]
            let d: UInt8
            switch c {
            case 0x30...0x39: d = c - 0x30
            case 0x41...0x46: d = c - 0x41 + 10
            case 0x61...0x66: d = c - 0x61 + 10
            default: return nil
            }
            v = v << 4 | UInt32(d)
        }
        return v
    }

    /// One UTF-8 sequence starting at p[i] >= 0x80: no overlongs, surrogates or values past U+10FFFF.
    mutating func utf8() -> Bool {
        let c = p[i]
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        let extra: Int
        switch c {
        case 0xC2...0xDF: extra = 1
        case 0xE0: extra = 2; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: extra = 2
        case 0xED: extra = 2; high = 0x9F
        case 0xF0: extra = 3; low = 0x90
        case 0xF1...0xF3: extra = 3
        case 0xF4: extra = 3; high = 0x8F
        default: return false
        }
        guard i + extra < n else { return false }
        let second = p[i + 1]
        guard second >= low && second <= high else { return false }
        var k = 2
        while k <= extra {
            guard p[i + k] & 0xC0 == 0x80 else { return false }
            k += 1
        }
        i += extra + 1
        return true
    }

    /// The decoded text of a validated string.
    func decode(_ s: StringRange) -> String {
        if !s.escaped { return String(decoding: UnsafeBufferPointer(start: p + s.start, count: s.end - s.start), as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(s.end - s.start)
        var k = s.start
        while k < s.end {
            let c = p[k]
            guard c == backslash else { out.append(c); k += 1; continue }
            let e = p[k + 1]
            k += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(k) ?? 0xFFFD
                k += 4
                if (0xD800...0xDBFF).contains(scalar), let low = hex4(k + 2) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    k += 6
                }
                let u = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                out.append(contentsOf: String(Character(u)).utf8)
            default: out.append(e)  // " \ /
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: numbers

    /// A number in JSON's grammar. Integers out of the 64-bit range and reals that could
    /// overflow are valid text jansson refuses: they mark the record unsupported.
    mutating func number(wanted: Bool) -> ScannedValue? {
        let start = i
        var negative = false
        if at(UInt8(ascii: "-")) { negative = true; i += 1 }
        guard i < n else { return nil }
        var magnitude: UInt64 = 0
        var overflow = false
        if p[i] == 0x30 {
            i += 1
        } else if p[i] >= 0x31 && p[i] <= 0x39 {
            while i < n && p[i] >= 0x30 && p[i] <= 0x39 {
                let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (m2, o2) = m1.addingReportingOverflow(UInt64(p[i] - 0x30))
                overflow = overflow || o1 || o2
                magnitude = m2
                i += 1
            }
        } else {
            return nil
        }
        var isReal = false
        if at(UInt8(ascii: ".")) {
            isReal = true
            i += 1
            guard i < n, p[i] >= 0x30 && p[i] <= 0x39 else { return nil }
            while i < n && p[i] >= 0x30 && p[i] <= 0x39 { i += 1 }
        }
        var exponentDigits = 0
        if at(UInt8(ascii: "e")) || at(UInt8(ascii: "E")) {
            isReal = true
            i += 1
            if at(UInt8(ascii: "+")) || at(UInt8(ascii: "-")) { i += 1 }
            guard i < n, p[i] >= 0x30 && p[i] <= 0x39 else { return nil }
            while i < n && p[i] >= 0x30 && p[i] <= 0x39 { i += 1; exponentDigits += 1 }
        }
        // jansson writes reals its own way ("%.17g"), and -0 as 0.
        if isReal || (negative && magnitude == 0) { canonical = false }
        if isReal {
            let length = i - start
            guard exponentDigits <= 2, length <= 64 else { unsupported = true; return .null }
            guard wanted else { return .null }
            // Swift's conversion ignores the C locale's decimal point (strtod would not).
            let text = String(decoding: UnsafeBufferPointer(start: p + start, count: length), as: UTF8.self)
            return Double(text).map(ScannedValue.real) ?? .null
        }
        let limit: UInt64 = negative ? UInt64(Int64.max) + 1 : UInt64(Int64.max)
        guard !overflow, magnitude <= limit else { unsupported = true; return .null }
        if negative { return .int(magnitude == limit ? Int64.min : -Int64(magnitude)) }
        return .int(Int64(magnitude))
    }

    func keyEquals(_ key: StringRange, _ word: StaticString) -> Bool {
        key.end - key.start == word.utf8CodeUnitCount && memcmp(p + key.start, word.utf8Start, word.utf8CodeUnitCount) == 0
    }
}

extension ScannedPage {
    /// What SoupPath reads at `path` in `record`, in a form comparable with `comparable(record:slot:)`
    /// (reals bit for bit).
    package static func comparable(_ record: JSON, at path: [String]) -> String {
        let projected = SoupPath.project(record, path[...])
        return withExtendedLifetime(projected) { () -> String in
            guard let v = projected.json else { return "null" }
            switch v.kind {
            case .null: return "null"
            case .string: return "s:" + (v.string ?? "")
            case .integer: return "i:\(v.int64 ?? 0)"
            case .real: return "r:\((v.double ?? 0).bitPattern)"
            case .bool: return "b:\(v.bool ?? false)"
            case .object, .array: return "tree"
            }
        }
    }

    /// What the scanner read for record `record` at plan slot `slot`, in a comparable form.
    package func comparable(record: Int, slot: Int) -> String {
        switch value(record: record, slot: slot) {
        case .null: return "null"
        case .int(let v): return "i:\(v)"
        case .real(let v): return "r:\(v.bitPattern)"
        case .bool(let b): return "b:\(b)"
        case let other: return "s:" + (string(other) ?? "?")
        }
    }
}

/// A scalar member's value of a flat object (see `FlatObject.read`).
package enum FlatValue {
    case null, bool(Bool), int(Int64), real(Double), string(String)
}

/// One member of a flat object, valid during the `FlatObject.read` call that passes it.
package struct FlatMember {
    /// The key's bytes (no escapes: an escaped key is left to jansson).
    package let key: UnsafeBufferPointer<UInt8>
    /// The value's JSON text.
    package let raw: UnsafeBufferPointer<UInt8>
    fileprivate let scanned: ScannedValue
    fileprivate let escaped: Bool

    /// The value, its string decoded (only when asked: a member the reader skips costs no copy).
    package var value: FlatValue {
        switch scanned {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let v): return .int(v)
        case .real(let v): return .real(v)
        case .text, .decoded:
            guard let base = raw.baseAddress else { return .string("") }
            let inner = UnsafeBufferPointer(start: base + 1, count: raw.count - 2)
            if !escaped { return .string(String(decoding: inner, as: UTF8.self)) }
            let scanner = ByteScanner(p: base, n: raw.count)
            return .string(scanner.decode(ByteScanner.StringRange(start: 1, end: raw.count - 1, escaped: true)))
        }
    }

    /// The kind of value, for callers that keep only the kind.
    package var kind: UInt8 {
        switch scanned {
        case .null: 1
        case .bool: 2
        case .int: 3
        case .real: 4
        case .text, .decoded: 5
        }
    }
}

/// Reads a JSON object whose members are all scalars (a query spec, as hosts send it) with no
/// tree and no copy of the text: a lookup's spec cost more than its SQLite step through jansson.
/// `next()` gives each member in text order (a key given twice is seen twice; the later wins,
/// as in jansson), then nil; `isValid` then tells whether the whole text was such an object.
/// Not valid: not JSON, or anything the caller must hand to jansson instead (not an object, a
/// nested object or array, an escaped key, a number jansson would judge: out of range, long
/// exponent).
package struct FlatObject {
    /// nil for text the reader never starts on (no bytes, or too many).
    private var scanner: ByteScanner?
    private var state = State.start
    private enum State { case start, members, valid, invalid }

    package init(_ text: UnsafeBufferPointer<UInt8>) {
        if let base = text.baseAddress, text.count < Int(Int32.max) {
            scanner = ByteScanner(p: base, n: text.count)
        } else {
            state = .invalid
        }
    }

    package var isValid: Bool { state == .valid }

    package mutating func next() -> FlatMember? {
        guard var s = scanner else { return nil }
        defer { scanner = s }
        switch state {
        case .valid, .invalid:
            return nil
        case .start:
            s.skipSpace()
            guard s.at(openBrace) else { return fail() }
            s.i += 1
            s.skipSpace()
            if s.at(closeBrace) {
                s.i += 1
                return end(&s)
            }
            state = .members
        case .members:
            guard let more = s.separator(closeBrace) else { return fail() }
            if !more { return end(&s) }
        }
        guard let key = s.memberKey(), !key.escaped, s.p[s.i] != openBrace, s.p[s.i] != openBracket else { return fail() }
        let start = s.i
        var escaped = false
        let scanned: ScannedValue
        if s.p[s.i] == quote {
            guard let range = s.string() else { return fail() }
            escaped = range.escaped
            scanned = .text(start: 0, count: 0)
        } else {
            var none: [String] = []
            guard let value = s.scalar(strings: &none, wanted: true), !s.unsupported else { return fail() }
            scanned = value
        }
        return FlatMember(key: UnsafeBufferPointer(start: s.p + key.start, count: key.end - key.start),
                          raw: UnsafeBufferPointer(start: s.p + start, count: s.i - start), scanned: scanned, escaped: escaped)
    }

    private mutating func fail() -> FlatMember? {
        state = .invalid
        return nil
    }

    private mutating func end(_ s: inout ByteScanner) -> FlatMember? {
        s.skipSpace()
        state = s.i == s.n ? .valid : .invalid
        return nil
    }
}
