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

    package static func parse(_ json: JSON, dialect: Dialect = .library) throws -> QuerySpec {
        guard json.isObject else { throw StoreError.argument("A query spec must be a JSON object with a \"queryType\"") }
        // A missing or null queryType means range; any other non-string is an error, not "all".
        let given = try optionalString(json, "queryType")
        if given == nil && dialect == .plugin {
            throw StoreError.argument("The query spec has no queryType: use exact, range, like, match or smart")
        }
        let typeName = given ?? "range"
        guard let type = QueryType(rawValue: typeName) else {
            throw StoreError.argument("Unknown queryType '\(typeName)': use exact, range, like, match or smart")
        }
        var spec = QuerySpec(queryType: type)
        spec.nullMatchKeyMatchesNothing = dialect == .plugin
        spec.indexPath = try optionalString(json, "indexPath")
        spec.matchKey = try key(json, "matchKey")
        spec.beginKey = try key(json, "beginKey")
        spec.endKey = try key(json, "endKey")
        spec.likeKey = try key(json, "likeKey")
        spec.smartSql = try optionalString(json, "smartSql")
        spec.orderPath = try optionalString(json, "orderPath")
        if let orderName = try optionalString(json, "order") {
            guard let order = Order(rawValue: orderName) else {
                throw StoreError.argument("Unknown order '\(orderName)': use ascending or descending")
            }
            spec.order = order
        }
        if let size = json["pageSize"], !size.isNull {
            guard let n = size.int64, n >= 1, n <= Int64(maxPageSize) else {
                throw StoreError.argument("pageSize must be an integer from 1 to \(maxPageSize)")
            }
            spec.pageSize = Int(n)
        }
        if let timeout = json["timeoutMs"], !timeout.isNull {
            guard let n = timeout.int64, n >= 1, n <= 3_600_000 else {
                throw StoreError.argument("timeoutMs must be an integer from 1 to 3600000 (milliseconds)")
            }
            spec.timeoutMs = n
        }
        if let paths = json["selectPaths"], !paths.isNull {
            guard paths.isArray else { throw StoreError.argument("selectPaths must be an array of paths") }
            var list: [String] = []
            for p in paths.elements {
                guard let s = p.string else { throw StoreError.argument("selectPaths must contain only strings") }
                try SoupPath.validate(s)
                list.append(s)
            }
            if !list.isEmpty { spec.selectPaths = list }
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

    private static func optionalString(_ json: JSON, _ key: String) throws -> String? {
        guard let v = json[key], !v.isNull else { return nil }
        guard let s = v.string else { throw StoreError.argument("\"\(key)\" must be a string") }
        return s
    }

    private static func key(_ json: JSON, _ name: String) throws -> SQLKey? {
        guard let v = json[name] else { return nil }
        switch v.kind {
        case .null: return nil
        case .string: return .text(v.string ?? "")
        case .integer: return .int(v.int64 ?? 0)
        case .real: return .real(v.double ?? 0)
        case .bool: return .bool(v.bool ?? false)
        case .object, .array: return .text(v.dump())
        }
    }
}
