import CJansson
import Glibc

package enum JSONFlags {
    package static let decode = Int(JSON_DECODE_ANY | JSON_ALLOW_NUL)
    package static let encode = Int(JSON_COMPACT | JSON_ENCODE_ANY)
}

/// A view of a jansson value inside a document. It keeps its document alive (Swift may release
/// an object right after its last use, so a bare pointer could outlive its tree). Removing or
/// replacing a member frees that subtree: take `retained()` of any part still needed first.
package struct JSON {
    package let raw: UnsafeMutablePointer<json_t>
    private let owner: JSONDocument?

    package init(_ raw: UnsafeMutablePointer<json_t>, owner: JSONDocument?) {
        self.raw = raw
        self.owner = owner
    }

    package enum Kind { case object, array, string, integer, real, bool, null }

    package var kind: Kind {
        switch raw.pointee.type {
        case JSON_OBJECT: return .object
        case JSON_ARRAY: return .array
        case JSON_STRING: return .string
        case JSON_INTEGER: return .integer
        case JSON_REAL: return .real
        case JSON_TRUE, JSON_FALSE: return .bool
        default: return .null
        }
    }

    package var isNull: Bool { raw.pointee.type == JSON_NULL }

    /// The same JSON value as `other`, numbers compared by value at any depth (`200` and
    /// `200.0` are one: a server may answer a number sent as an integer as a real).
    package func sameValue(as other: JSON) -> Bool {
        switch (kind, other.kind) {
        case (.integer, .integer): return int64 == other.int64
        case (.integer, .real), (.real, .integer), (.real, .real): return double == other.double
        case (.object, .object):
            let mine = members
            return mine.count == other.members.count
                && mine.allSatisfy { name, value in other[name].map { value.sameValue(as: $0) } ?? false }
        case (.array, .array):
            return count == other.count && zip(elements, other.elements).allSatisfy { $0.sameValue(as: $1) }
        default:
            return json_equal(raw, other.raw) != 0
        }
    }
    package var isObject: Bool { raw.pointee.type == JSON_OBJECT }
    package var isArray: Bool { raw.pointee.type == JSON_ARRAY }

    package subscript(key: String) -> JSON? {
        guard isObject else { return nil }
        // By length: a short key (stored inline) would otherwise be copied to the heap to get
        // its NUL terminator, on every lookup.
        var key = key
        let found = key.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { json_object_getn(raw, $0.baseAddress, $0.count) }
        }
        return found.map { JSON($0, owner: owner) }
    }

    package var count: Int { isArray ? json_array_size(raw) : 0 }

    package subscript(index: Int) -> JSON? {
        guard isArray, index >= 0, let value = json_array_get(raw, index) else { return nil }
        return JSON(value, owner: owner)
    }

    package var elements: [JSON] {
        guard isArray else { return [] }
        var result: [JSON] = []
        result.reserveCapacity(count)
        for i in 0..<count { if let v = json_array_get(raw, i) { result.append(JSON(v, owner: owner)) } }
        return result
    }

    /// Keys and values of an object, in insertion order.
    package var members: [(String, JSON)] {
        guard isObject else { return [] }
        var result: [(String, JSON)] = []
        var iter = json_object_iter(raw)
        while let it = iter {
            if let key = json_object_iter_key(it), let value = json_object_iter_value(it) {
                result.append((String(cString: key), JSON(value, owner: owner)))
            }
            iter = json_object_iter_next(raw, it)
        }
        return result
    }

    package var string: String? {
        guard raw.pointee.type == JSON_STRING, let p = json_string_value(raw) else { return nil }
        let length = json_string_length(raw)
        return p.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    package var int64: Int64? {
        raw.pointee.type == JSON_INTEGER ? Int64(json_integer_value(raw)) : nil
    }

    package var double: Double? {
        switch raw.pointee.type {
        case JSON_REAL: return json_real_value(raw)
        case JSON_INTEGER: return Double(json_integer_value(raw))
        default: return nil
        }
    }

    package var bool: Bool? {
        switch raw.pointee.type {
        case JSON_TRUE: return true
        case JSON_FALSE: return false
        default: return nil
        }
    }

    /// A new reference to this value (for moving it into another container), taken while the
    /// owning document is certainly alive.
    package func retained() -> UnsafeMutablePointer<json_t>? {
        withExtendedLifetime(owner) { cjansson_incref(raw) }
    }

    /// Compact serialization. Objects keep their insertion order.
    package func dump() -> String {
        guard let text = json_dumps(raw, JSONFlags.encode) else { return "null" }
        defer { free(text) }
        return String(cString: text)
    }

    /// Serialization into a malloc'd C string the caller frees (no Swift String round trip).
    package func dumpCString() -> UnsafeMutablePointer<CChar>? {
        json_dumps(raw, JSONFlags.encode)
    }

    // MARK: mutation (the receiver must be an object/array owned by the caller)

    /// Sets `key`, taking ownership of `value` (a new reference).
    package func set(_ key: String, owned value: UnsafeMutablePointer<json_t>?) {
        guard let value else { return }
        json_object_set_new(raw, key, value)
    }

    package func remove(_ key: String) { json_object_del(raw, key) }

    /// Appends, taking ownership of `value`.
    package func append(owned value: UnsafeMutablePointer<json_t>?) {
        guard let value else { return }
        json_array_append_new(raw, value)
    }
}

/// An owning reference to a parsed or built jansson value.
package final class JSONDocument {
    private let raw: UnsafeMutablePointer<json_t>

    /// Takes ownership of one reference to `raw`.
    package init(owning raw: UnsafeMutablePointer<json_t>) { self.raw = raw }

    deinit { cjansson_decref(raw) }

    /// The root value; it keeps this document alive while in use.
    package var root: JSON { JSON(raw, owner: self) }

    /// Parses JSON text under the JSON rule (`JSONRules`): invalid UTF-8, trailing text, NUL
    /// bytes and U+0000 in keys are refused, and so is text nested deeper than
    /// `JSONRules.maxDepth` unless `limitDepth` is false: for text holding entries (host
    /// upserts, server and callback pages), which `EntryWriter` checks one by one, naming the
    /// one at fault (jansson's own limit, 2048, still holds).
    package static func parse(_ text: String, what: String = "JSON", limitDepth: Bool = true) throws -> JSONDocument {
        var text = text
        return try text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return try parse(bytes: "", length: 0, what: what, limitDepth: limitDepth) }
            return try parse(bytes: base, length: bytes.count, what: what, limitDepth: limitDepth)
        }
    }

    /// An optional JSON argument (store config, sync options, sync up target): nil and "" both
    /// mean "not given" (nil result). Any other text must be one JSON value; whitespace alone is
    /// not one and is refused like any malformed text.
    package static func parseOptional(_ text: String?, what: String) throws -> JSONDocument? {
        guard let text, !text.isEmpty else { return nil }
        return try parse(text, what: what)
    }

    /// Parses a C string without copying it into Swift first.
    package static func parse(cString: UnsafePointer<CChar>, what: String = "JSON", limitDepth: Bool = true) throws -> JSONDocument {
        try parse(bytes: cString, length: strlen(cString), what: what, limitDepth: limitDepth)
    }

    /// Parses `length` bytes (not NUL-terminated); see `parse(_:what:limitDepth:)`.
    package static func parse(bytes: UnsafeRawPointer, length: Int, what: String = "JSON", limitDepth: Bool = true) throws -> JSONDocument {
        if let nul = memchr(bytes, 0, length) {
            throw StoreError.argument("Malformed \(what): a NUL byte at offset \(UnsafeRawPointer(nul) - bytes); \(JSONRules.nulRule)")
        }
        if limitDepth, let at = JSONRules.firstTooDeep(bytes.assumingMemoryBound(to: UInt8.self), count: length, limit: JSONRules.maxDepth) {
            throw StoreError.argument("Malformed \(what): nested deeper than \(JSONRules.maxDepth) levels at offset \(at); \(JSONRules.depthRule)")
        }
        var error = json_error_t()
        guard let parsed = json_loadb(bytes.assumingMemoryBound(to: CChar.self), length, JSONFlags.decode, &error) else {
            throw parseError(error, what: what)
        }
        return JSONDocument(owning: parsed)
    }

    private static func parseError(_ error: json_error_t, what: String) -> StoreError {
        var e = error
        var text = withUnsafePointer(to: &e.text) {
            $0.withMemoryRebound(to: CChar.self, capacity: Int(JSON_ERROR_TEXT_LENGTH)) { String(cString: $0) }
        }
        // jansson's own words for two parts of the rule; say the rule too.
        if text.includes("NUL byte in object key") { text += "; \(JSONRules.nulKeyRule)" }
        if text.includes("maximum parsing depth") { text += "; \(JSONRules.depthRule)" }
        return .argument("Malformed \(what) at line \(e.line), column \(e.column): \(text)")
    }

    package static func object() -> JSONDocument { JSONDocument(owning: json_object()) }
    package static func array() -> JSONDocument { JSONDocument(owning: json_array()) }
}

/// Constructors for new jansson values (each returns a new reference).
package enum JSONMake {
    /// A JSON string; invalid UTF-8 is repaired with U+FFFD so output is always valid JSON.
    package static func string(_ s: String) -> UnsafeMutablePointer<json_t>? {
        s.withCString { json_stringn_nocheck($0, s.utf8.count) }
    }
    package static func int(_ v: Int64) -> UnsafeMutablePointer<json_t>? { json_integer(json_int_t(v)) }
    package static func real(_ v: Double) -> UnsafeMutablePointer<json_t>? {
        // JSON has no NaN/Infinity; jansson refuses them.
        v.isFinite ? json_real(v) : json_null()
    }
    package static func bool(_ v: Bool) -> UnsafeMutablePointer<json_t>? { v ? json_true() : json_false() }
    package static func null() -> UnsafeMutablePointer<json_t>? { json_null() }
}
