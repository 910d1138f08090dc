import CJansson

/// A parsed JSON document. Objects keep key order (Salesforce clients read fields in order).
/// Used for request bodies and schema files only: query results never pass through it.
enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        for (k, v) in pairs where k == key { return v }
        return nil
    }

    /// Case-insensitive key lookup (Salesforce field names are case-insensitive).
    func value(forKeyIgnoringCase key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        let lower = key.lowercased()
        for (k, v) in pairs where k.lowercased() == lower { return v }
        return nil
    }

    var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    var arrayValue: [JSON]? { if case .array(let a) = self { return a }; return nil }
    var objectValue: [(String, JSON)]? { if case .object(let o) = self { return o }; return nil }
    var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }
    var isNull: Bool { if case .null = self { return true }; return false }

    /// The JSON type name Salesforce uses in deserialization errors.
    var tokenName: String {
        switch self {
        case .null: return "VALUE_NULL"
        case .bool(let b): return b ? "VALUE_TRUE" : "VALUE_FALSE"
        case .int: return "VALUE_NUMBER_INT"
        case .double: return "VALUE_NUMBER_FLOAT"
        case .string: return "VALUE_STRING"
        case .array: return "START_ARRAY"
        case .object: return "START_OBJECT"
        }
    }
}

struct JSONParseError: Error { let message: String }

extension JSON {
    /// Parses with jansson (one C pass) and converts to the Swift tree.
    static func parse(_ bytes: [UInt8]) throws -> JSON {
        var error = json_error_t()
        let root: UnsafeMutablePointer<json_t>? = bytes.withUnsafeBufferPointer { buf in
            buf.baseAddress.map { base in
                base.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                    json_loadb($0, buf.count, 0x4 /* JSON_DECODE_ANY */, &error)
                }
            } ?? nil
        }
        guard let root else {
            let text = withUnsafeBytes(of: error.text) { raw -> String in
                let chars = raw.bindMemory(to: UInt8.self)
                let end = chars.firstIndex(of: 0) ?? chars.count
                return String(decoding: chars[0..<end], as: UTF8.self)
            }
            throw JSONParseError(message: "\(text) at [line:\(error.line), column:\(error.column)]")
        }
        defer { cjansson_decref(root) }
        return convert(root, depth: 0)
    }

    static func parse(_ text: String) throws -> JSON { try parse(Array(text.utf8)) }

    private static func convert(_ node: UnsafeMutablePointer<json_t>, depth: Int) -> JSON {
        // jansson itself limits nesting depth on load, so this recursion is bounded.
        switch cjansson_typeof(node) {
        case 0: // JSON_OBJECT
            var pairs: [(String, JSON)] = []
            var iter = json_object_iter(node)
            while let it = iter {
                let keyLen = json_object_iter_key_len(it)
                let key: String
                if let k = json_object_iter_key(it) {
                    key = k.withMemoryRebound(to: UInt8.self, capacity: keyLen) {
                        String(decoding: UnsafeBufferPointer(start: $0, count: keyLen), as: UTF8.self)
                    }
                } else { key = "" }
                if let v = json_object_iter_value(it) { pairs.append((key, convert(v, depth: depth + 1))) }
                iter = json_object_iter_next(node, it)
            }
            return .object(pairs)
        case 1: // JSON_ARRAY
            let n = json_array_size(node)
            var items: [JSON] = []
            items.reserveCapacity(n)
            for i in 0..<n { if let v = json_array_get(node, i) { items.append(convert(v, depth: depth + 1)) } }
            return .array(items)
        case 2: // JSON_STRING
            let len = json_string_length(node)
            guard let p = json_string_value(node) else { return .string("") }
            return .string(p.withMemoryRebound(to: UInt8.self, capacity: len) {
                String(decoding: UnsafeBufferPointer(start: $0, count: len), as: UTF8.self)
            })
        case 3: return .int(Int64(json_integer_value(node)))
        case 4: return .double(json_real_value(node))
        case 5: return .bool(true)
        case 6: return .bool(false)
        default: return .null
        }
    }
}

/// Appends JSON text to a byte buffer; the serializer used for every response we build by hand.
struct JSONWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// A JSON array of strings.
    mutating func strings(_ list: [String]) {
        raw("[")
        for (i, item) in list.enumerated() {
            if i > 0 { raw(",") }
            string(item)
        }
        raw("]")
    }

    mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }
    mutating func raw(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 10: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
            case 13: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
            case 9: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<32:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(c >> 4)], hex[Int(c & 15)]])
            default: bytes.append(c)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func value(_ v: JSON) {
        switch v {
        case .null: raw("null")
        case .bool(let b): raw(b ? "true" : "false")
        case .int(let i): raw(String(i))
        case .double(let d): raw(d.isFinite ? formatDouble(d) : "null")
        case .string(let s): string(s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                value(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let pairs):
            bytes.append(UInt8(ascii: "{"))
            for (i, (k, item)) in pairs.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                string(k)
                bytes.append(UInt8(ascii: ":"))
                value(item)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

func formatDouble(_ d: Double) -> String {
    if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) + ".0" }
    return String(d)
}

extension JSON {
    var serialized: [UInt8] {
        var w = JSONWriter()
        w.value(self)
        return w.bytes
    }
    var text: String { String(decoding: serialized, as: UTF8.self) }
}
