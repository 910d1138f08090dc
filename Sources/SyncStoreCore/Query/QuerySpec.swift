import Glibc
import SyncStoreSupport

/// A parsed query spec (docs/queries.md#query-specs).
package struct QuerySpec {
    package enum QueryType: String { case exact, range, like, match, smart }
    package enum Order: String { case ascending, descending }

    package var queryType: QueryType
    package var indexPath: String?
    package var matchKey: SQLKey?
    package var beginKey: SQLKey?
    package var endKey: SQLKey?
    package var likeKey: SQLKey?
    package var smartSql: String?
    package var orderPath: String?
    package var order: Order = .ascending
    package var pageSize: Int = 10
    package var selectPaths: [String]?
    /// How long one Smart SQL step (the count, or one page) may run before it is stopped.
    package var timeoutMs: Int64 = QuerySpec.defaultTimeoutMs
    /// An exact query whose matchKey is null matches no entry (the hybrid plugins' reading)
    /// instead of being refused.
    package var nullMatchKeyMatchesNothing = false

    /// The paths the spec filters and orders on (the entry dates among them are indexed first).
    package var filterAndOrderPaths: [String?] { [indexPath, orderPath] }

    /// Whose rules a spec is read by: the library's (a missing queryType is range, an exact
    /// query needs a matchKey) or the hybrid plugins' (queryType is required, as the SDK's
    /// QuerySpec always sends it; an exact query with a null matchKey matches nothing).
    package enum Dialect { case library, plugin }

    /// A key value from the spec, kept with its JSON type.
    package enum SQLKey {
        case text(String), int(Int64), real(Double), bool(Bool)
        /// The bound value; booleans match how the index stores them ("true" in text columns).
        package func sql(textual: Bool) -> SQLValue {
            switch self {
            case .text(let s): return .text(s)
            case .int(let i): return .int(i)
            case .real(let d): return .real(d)
            case .bool(let b): return textual ? .text(b ? "true" : "false") : .int(b ? 1 : 0)
            }
        }
        package var text: String {
            switch self {
            case .text(let s): return s
            case .int(let i): return String(i)
            case .real(let d): return String(d)
            case .bool(let b): return b ? "true" : "false"
            }
        }
    }

    package static let maxPageSize = 100_000
    package static let defaultTimeoutMs: Int64 = 30_000

    /// One member of a spec as parse reads it.
    private enum Member {
        case absent, null, string(String), int(Int64), real(Double), bool(Bool)
        /// An object or an array: its JSON text, or its strings when it is an array of strings
        /// only (nil elements: not strings).
        case container(text: String, strings: [String?]?)
    }

    /// The members parse reads, in the scanner's slot order.
    private enum Key: Int, CaseIterable {
        case queryType, indexPath, matchKey, beginKey, endKey, likeKey, smartSql, orderPath, order, pageSize, timeoutMs, selectPaths
        var name: String { Key.names[rawValue] }
        static let names = Key.allCases.map { String(describing: $0) }

        /// The key spelled by `utf8`, if the spec reads it.
        init?(utf8: UnsafeBufferPointer<UInt8>) {
            func spells(_ name: StaticString) -> Bool {
                guard let bytes = utf8.baseAddress, name.utf8CodeUnitCount == utf8.count else { return false }
                return memcmp(name.utf8Start, bytes, utf8.count) == 0
            }
            let key: Key
            switch utf8.first {
            case UInt8(ascii: "q"): key = .queryType
            case UInt8(ascii: "i"): key = .indexPath
            case UInt8(ascii: "m"): key = .matchKey
            case UInt8(ascii: "b"): key = .beginKey
            case UInt8(ascii: "e"): key = .endKey
            case UInt8(ascii: "l"): key = .likeKey
            case UInt8(ascii: "s"): guard utf8.count > 1 else { return nil }; key = utf8[1] == UInt8(ascii: "m") ? .smartSql : .selectPaths
            case UInt8(ascii: "o"): key = utf8.count == 5 ? .order : .orderPath
            case UInt8(ascii: "p"): key = .pageSize
            case UInt8(ascii: "t"): key = .timeoutMs
            default: return nil
            }
            guard spells(key.staticName) else { return nil }
            self = key
        }

        private var staticName: StaticString {
            switch self {
            case .queryType: "queryType"
            case .indexPath: "indexPath"
            case .matchKey: "matchKey"
            case .beginKey: "beginKey"
            case .endKey: "endKey"
            case .likeKey: "likeKey"
            case .smartSql: "smartSql"
            case .orderPath: "orderPath"
            case .order: "order"
            case .pageSize: "pageSize"
            case .timeoutMs: "timeoutMs"
            case .selectPaths: "selectPaths"
            }
        }
    }

    package static func parse(_ json: JSON, dialect: Dialect = .library) throws -> QuerySpec {
        guard json.isObject else { throw StoreError.argument("A query spec must be a JSON object with a \"queryType\"") }
        return try parse(dialect: dialect) { key in
            guard let v = json[key.name] else { return .absent }
            switch v.kind {
            case .null: return .null
            case .string: return .string(v.string ?? "")
            case .integer: return .int(v.int64 ?? 0)
            case .real: return .real(v.double ?? 0)
            case .bool: return .bool(v.bool ?? false)
            case .object: return .container(text: v.dump(), strings: nil)
            case .array: return .container(text: v.dump(), strings: v.elements.map(\.string))
            }
        }
    }

    /// Parses spec text. A flat object (every member a scalar: what hosts send for a lookup) is
    /// read in place by `FlatObject`; anything else (selectPaths, odd numbers) by jansson, as
    /// `parse(_:)`.
    package static func parse(text: String, dialect: Dialect = .library) throws -> QuerySpec {
        var text = text
        if let spec = try text.withUTF8({ try parse(flat: $0, dialect: dialect) }) { return spec }
        let doc = try JSONDocument.parse(text, what: "query spec")
        return try parse(doc.root, dialect: dialect)
    }

    /// The spec in `utf8` (any bytes: the reader validates UTF-8 as jansson does) when it is a
    /// flat object; nil when it is not valid JSON or not flat: parse it as text then, which
    /// reads it with jansson and reports what is wrong.
    package static func parse(flat utf8: UnsafeBufferPointer<UInt8>, dialect: Dialect = .library) throws -> QuerySpec? {
        try withUnsafeTemporaryAllocation(of: Member.self, capacity: Key.allCases.count) { members in
            guard let first = members.baseAddress else { return nil }
            first.initialize(repeating: .absent, count: members.count)
            defer { first.deinitialize(count: members.count) }
            var reader = FlatObject(utf8)
            while let member = reader.next() {
                guard let key = Key(utf8: member.key) else { continue }
                switch member.value {
                case .null: members[key.rawValue] = .null
                case .bool(let b): members[key.rawValue] = .bool(b)
                case .int(let v): members[key.rawValue] = .int(v)
                case .real(let v): members[key.rawValue] = .real(v)
                case .string(let s): members[key.rawValue] = .string(s)
                }
            }
            guard reader.isValid else { return nil }
            return try parse(dialect: dialect) { members[$0.rawValue] }
        }
    }

    private static func parse(dialect: Dialect, member: (Key) -> Member) throws -> QuerySpec {
        // A missing or null queryType means range; any other non-string is an error, not "all".
        let given = try optionalString(member, .queryType)
        if given == nil && dialect == .plugin {
            throw StoreError.argument("The query spec has no queryType: use exact, range, like, match or smart")
        }
        let typeName = given ?? "range"
        guard let type = QueryType(rawValue: typeName) else {
            throw StoreError.argument("Unknown queryType '\(typeName)': use exact, range, like, match or smart")
        }
        var spec = QuerySpec(queryType: type)
        spec.nullMatchKeyMatchesNothing = dialect == .plugin
        spec.indexPath = try optionalString(member, .indexPath)
        spec.matchKey = key(member(.matchKey))
        spec.beginKey = key(member(.beginKey))
        spec.endKey = key(member(.endKey))
        spec.likeKey = key(member(.likeKey))
        spec.smartSql = try optionalString(member, .smartSql)
        spec.orderPath = try optionalString(member, .orderPath)
        if let orderName = try optionalString(member, .order) {
            guard let order = Order(rawValue: orderName) else {
                throw StoreError.argument("Unknown order '\(orderName)': use ascending or descending")
            }
            spec.order = order
        }
        switch member(.pageSize) {
        case .absent, .null: break
        case .int(let n) where n >= 1 && n <= Int64(maxPageSize): spec.pageSize = Int(n)
        default: throw StoreError.argument("pageSize must be an integer from 1 to \(maxPageSize)")
        }
        switch member(.timeoutMs) {
        case .absent, .null: break
        case .int(let n) where n >= 1 && n <= 3_600_000: spec.timeoutMs = n
        default: throw StoreError.argument("timeoutMs must be an integer from 1 to 3600000 (milliseconds)")
        }
        switch member(.selectPaths) {
        case .absent, .null: break
        case .container(_, let strings?):
            var list: [String] = []
            for p in strings {
                guard let p else { throw StoreError.argument("selectPaths must contain only strings") }
                try SoupPath.validate(p)
                list.append(p)
            }
            if !list.isEmpty { spec.selectPaths = list }
        default: throw StoreError.argument("selectPaths must be an array of paths")
        }
        for path in [spec.indexPath, spec.orderPath].compactMap({ $0 }) { try SoupPath.validate(path) }
        try spec.check()
        return spec
    }

    private func check() throws {
        switch queryType {
        case .exact:
            guard indexPath != nil else { throw StoreError.argument("An exact query needs \"indexPath\"") }
            guard matchKey != nil || nullMatchKeyMatchesNothing else {
                throw StoreError.argument("An exact query needs a non-null \"matchKey\"")
            }
        case .like:
            guard indexPath != nil else { throw StoreError.argument("A like query needs \"indexPath\"") }
            guard likeKey != nil else { throw StoreError.argument("A like query needs a non-null \"likeKey\"") }
        case .match:
            guard matchKey != nil else { throw StoreError.argument("A match query needs a non-null \"matchKey\"") }
        case .smart:
            guard let sql = smartSql, !sql.isEmpty else { throw StoreError.argument("A smart query needs \"smartSql\"") }
        case .range:
            if (beginKey != nil || endKey != nil) && indexPath == nil {
                throw StoreError.argument("A range query with beginKey or endKey needs \"indexPath\"")
            }
        }
    }

    private static func optionalString(_ member: (Key) -> Member, _ key: Key) throws -> String? {
        switch member(key) {
        case .absent, .null: return nil
        case .string(let s): return s
        default: throw StoreError.argument("\"\(key.name)\" must be a string")
        }
    }

    private static func key(_ member: Member) -> SQLKey? {
        switch member {
        case .absent, .null: return nil
        case .string(let s): return .text(s)
        case .int(let v): return .int(v)
        case .real(let v): return .real(v)
        case .bool(let b): return .bool(b)
        case .container(let text, _): return .text(text)
        }
    }
}

extension QuerySpec.SQLKey {
    /// A key member's value (null: no key).
    init?(_ value: FlatValue) {
        switch value {
        case .null: return nil
        case .string(let s): self = .text(s)
        case .int(let v): self = .int(v)
        case .real(let v): self = .real(v)
        case .bool(let b): self = .bool(b)
        }
    }
}

/// A flat spec's text without the values of its keys (matchKey, beginKey, endKey, likeKey),
/// plus those values. Two specs with one template parse alike but for their keys (the
/// template keeps each key's JSON type, which the checks and the SQL depend on), so a lookup
/// repeated with new keys can reuse the first one's parse and plan (`SoupInfo.lookups`).
package struct SpecTemplate {
    /// The template's bytes: valid only during the `read` call that passes this value.
    package let text: UnsafeBufferPointer<UInt8>
    package let matchKey: QuerySpec.SQLKey?
    package let beginKey: QuerySpec.SQLKey?
    package let endKey: QuerySpec.SQLKey?
    package let likeKey: QuerySpec.SQLKey?

    /// Whether `bytes` is this template (memcmp: a generic element-by-element comparison was
    /// a fiftieth of a lookup).
    package func isText(_ bytes: [UInt8]) -> Bool {
        bytes.count == text.count && bytes.withUnsafeBufferPointer { stored in
            guard let a = stored.baseAddress, let b = text.baseAddress else { return stored.count == 0 }
            return memcmp(a, b, stored.count) == 0
        }
    }

    /// Calls `body` with the template of `utf8`; nil when `utf8` is not a flat object (see
    /// FlatObject). The template is built on the stack: a lookup allocates nothing for it.
    package static func read<T>(_ utf8: UnsafeBufferPointer<UInt8>, _ body: (SpecTemplate) throws -> T?) rethrows -> T? {
        // Each member's quotes and colon outweigh the template's two separators: the template
        // is never longer than the text (and a member that would not fit sends it to jansson).
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(utf8.count, 1)) { buffer -> T? in
            guard let base = buffer.baseAddress else { return nil }
            var length = 0
            var match: QuerySpec.SQLKey?, begin: QuerySpec.SQLKey?, end: QuerySpec.SQLKey?, like: QuerySpec.SQLKey?
            var reader = FlatObject(utf8)
            while let member = reader.next() {
                let key = QuerySpec.keyMember(member.key)
                let value = key == nil ? member.raw.count : 1
                guard let name = member.key.baseAddress, length + member.key.count + value + 2 <= buffer.count else { return nil }
                // NUL never occurs in JSON text, so it separates the parts unambiguously.
                (base + length).update(from: name, count: member.key.count)
                length += member.key.count
                base[length] = 0
                switch key {
                case .matchKey?: match = QuerySpec.SQLKey(member.value)
                case .beginKey?: begin = QuerySpec.SQLKey(member.value)
                case .endKey?: end = QuerySpec.SQLKey(member.value)
                case .likeKey?: like = QuerySpec.SQLKey(member.value)
                case nil:
                    if let raw = member.raw.baseAddress { (base + length + 1).update(from: raw, count: member.raw.count) }
                }
                // A key's value is left out; its JSON type stays.
                if key == nil { length += 1 + member.raw.count } else { base[length + 1] = member.kind; length += 2 }
                base[length] = 0
                length += 1
            }
            guard reader.isValid else { return nil }
            return try body(SpecTemplate(text: UnsafeBufferPointer(start: base, count: length),
                                         matchKey: match, beginKey: begin, endKey: end, likeKey: like))
        }
    }
}

extension QuerySpec {
    package enum KeyMember { case matchKey, beginKey, endKey, likeKey }

    /// Which key member `name` spells, if any.
    static func keyMember(_ name: UnsafeBufferPointer<UInt8>) -> KeyMember? {
        switch Key(utf8: name) {
        case .matchKey?: .matchKey
        case .beginKey?: .beginKey
        case .endKey?: .endKey
        case .likeKey?: .likeKey
        default: nil
        }
    }
}
