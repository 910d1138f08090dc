import Glibc
import SyncStoreSupport

/// SQL for one page of a query spec, plus the SQL that counts all its rows.
package final class QueryPlan {
    package enum Rows: Sendable {
        /// Whole entries: the single column is the stored JSON text.
        case entries
        /// One JSON array per row built from the columns (selectPaths and Smart SQL).
        case values
    }
    package let pageSQL: String   // ends with "LIMIT ? OFFSET ?"
    package let countSQL: String
    package let bindings: [SQLValue]
    package let rows: Rows
    /// Smart SQL is checked against the authorizer when prepared.
    package let isSmart: Bool
    /// The soup table a non-smart plan reads, to tell a cursor whose soup is gone.
    package let soupTable: String?
    /// Smart SQL: how long the count or one page may run (QuerySpec.timeoutMs).
    package let timeLimitMs: Int64?

    // A class: a lookup's cached plan is passed down with one retain, not one per string.
    package init(pageSQL: String, countSQL: String, bindings: [SQLValue], rows: Rows, isSmart: Bool,
                 soupTable: String? = nil, timeLimitMs: Int64? = nil) {
        self.pageSQL = pageSQL
        self.countSQL = countSQL
        self.bindings = bindings
        self.rows = rows
        self.isSmart = isSmart
        self.soupTable = soupTable
        self.timeLimitMs = timeLimitMs
    }

    /// Runs `body` on `db` within the plan's time limit, if it has one.
    package func limited<T>(on db: Connection, _ body: () throws -> T) throws -> T {
        guard let timeLimitMs else { return try body() }
        return try StatementDeadline.run(on: db, milliseconds: timeLimitMs, what: "Smart SQL", body)
    }
}

/// A few recent values by key, the last one compared before any hash (a repeated query asks
/// for the same key again); past `capacity` keys it starts again. Thread-safe.
package final class RecentCache<Key: Hashable, Value>: @unchecked Sendable {
    private let capacity: Int
    private let lock = Lock()
    private var values: [Key: Value] = [:]
    private var lastKey: Key?
    private var lastValue: Value?

    package init(capacity: Int = 64) { self.capacity = capacity }

    package func value(for key: Key) -> Value? { value(isLast: { $0 == key }, key: { key }) }

    /// `isLast` tells whether the last key asked for is this one without making it; `key`
    /// makes it when the table must be asked.
    package func value(isLast: (Key) -> Bool, key: () -> Key) -> Value? {
        lock.withLock {
            if let lastKey, let lastValue, isLast(lastKey) { return lastValue }
            let key = key()
            guard let found = values[key] else { return nil }
            lastKey = key
            lastValue = found
            return found
        }
    }

    package func store(_ value: Value, for key: Key) {
        lock.withLock {
            if values.count >= capacity { values.removeAll(keepingCapacity: true) }
            values[key] = value
            lastKey = key
            lastValue = value
        }
    }
}

/// The SQL of recent query specs by their shape (all but the key values): a repeated lookup
/// only binds new values (building the text was a third of an exact query's time).
package enum PlanCache {
    package struct Shape: Hashable {
        package let queryType: QuerySpec.QueryType
        package let indexPath: String?
        package let orderPath: String?
        package let order: QuerySpec.Order
        package let selectPaths: [String]?
        package let hasBegin: Bool
        package let hasEnd: Bool

        package init(_ spec: QuerySpec) {
            queryType = spec.queryType
            indexPath = spec.indexPath
            orderPath = spec.orderPath
            order = spec.order
            selectPaths = spec.selectPaths
            hasBegin = spec.beginKey != nil
            hasEnd = spec.endKey != nil
        }
    }

    package struct Text {
        package let pageSQL: String
        package let countSQL: String
        package let rows: QueryPlan.Rows
    }
}

/// A lookup on one soup by its spec's template (SpecTemplate), kept in the soup's
/// `RecentCache`: a lookup repeated with new key values is neither parsed nor planned again,
/// only bound (parse and plan were half of a lookup's own time).
package final class CachedLookup: @unchecked Sendable {
    package let spec: QuerySpec
    package let plan: QueryPlan
    package let binding: KeyBinding
    /// Whether the spec filters or orders on an entry date (whose index each lookup makes sure of).
    package let readsDates: Bool

    package init(spec: QuerySpec, plan: QueryPlan, soup: SoupInfo) throws {
        self.spec = spec
        self.plan = plan
        binding = try KeyBinding(spec, soup: soup)
        readsDates = spec.filterAndOrderPaths.contains { $0.flatMap(SoupCatalog.dateColumn) != nil }
    }
}

/// How a spec's key values bind to its condition on one soup: what depends on the spec's shape
/// and the soup (the index's type, a match query's column) is worked out once, so a cached
/// lookup binds new keys without another look at either.
package struct KeyBinding {
    private let queryType: QuerySpec.QueryType
    private let nullMatchKeyMatchesNothing: Bool
    /// Whether the index path's column holds text (booleans bind as "true"/"false" there).
    private let textual: Bool
    /// A match query's full_text column, when it names one.
    private let matchColumn: String?

    package init(_ spec: QuerySpec, soup: SoupInfo) throws {
        queryType = spec.queryType
        nullMatchKeyMatchesNothing = spec.nullMatchKeyMatchesNothing
        textual = soup.index(for: spec.indexPath ?? SoupPath.entryId).map { $0.type == .string || $0.type == .fullText } ?? false
        matchColumn = spec.queryType == .match ? try SoupQueryBuilder.requireFullText(spec, soup: soup) : nil
    }

    package func values(match: QuerySpec.SQLKey?, begin: QuerySpec.SQLKey?, end: QuerySpec.SQLKey?,
                        like: QuerySpec.SQLKey?) throws -> [SQLValue] {
        switch queryType {
        case .exact:
            guard let match else {
                // `= NULL` is never true: the plugins' answer to a null matchKey, no entry.
                if nullMatchKeyMatchesNothing { return [.null] }
                throw StoreError.argument("An exact query needs a non-null \"matchKey\"")
            }
            return [match.sql(textual: textual)]
        case .like:
            guard let like else { throw StoreError.argument("A like query needs a non-null \"likeKey\"") }
            return [like.sql(textual: textual)]
        case .range:
            return [begin, end].compactMap { $0?.sql(textual: textual) }
        case .match:
            guard var key = match?.text else { throw StoreError.argument("A match query needs a non-null \"matchKey\"") }
            if let matchColumn {
                // Qualify every term of the expression with the column, keeping AND/OR/NOT.
                key = "\(matchColumn) : (\(key))"
            }
            return [.text(key)]
        case .smart:
            throw StoreError.argument("querySoup does not take smart query specs; use runSmartQuery")
        }
    }
}

/// Turns a non-smart query spec into SQL over a soup's table (docs/queries.md#query-specs).
package enum SoupQueryBuilder {
    package static func plan(_ spec: QuerySpec, soup: SoupInfo) throws -> QueryPlan {
        let shape = PlanCache.Shape(spec)
        let text: PlanCache.Text
        if let cached = soup.plans.value(for: shape) {
            text = cached
        } else {
            text = try planText(spec, soup: soup)
            soup.plans.store(text, for: shape)
        }
        return QueryPlan(pageSQL: text.pageSQL, countSQL: text.countSQL, bindings: try whereBindings(spec, soup: soup),
                         rows: text.rows, isSmart: false, soupTable: soup.table)
    }

    /// What a cached lookup's plan binds for the keys of `template` (a spec with its template).
    package static func bindings(_ lookup: CachedLookup, keys template: SpecTemplate) throws -> [SQLValue] {
        try lookup.binding.values(match: template.matchKey, begin: template.beginKey, end: template.endKey,
                                  like: template.likeKey)
    }

    private static func planText(_ spec: QuerySpec, soup: SoupInfo) throws -> PlanCache.Text {
        let whereSQL = try whereSQL(spec, soup: soup)
        let from = "FROM \(soup.table)" + (whereSQL.isEmpty ? "" : " WHERE \(whereSQL)")
        let select: String
        let rows: QueryPlan.Rows
        if let paths = spec.selectPaths {
            select = paths.map { soup.expression(for: $0) }.joined(separator: ", ")
            rows = .values
        } else {
            select = "soup"
            rows = .entries
        }
        var orderSQL = ""
        if let orderPath = spec.orderPath ?? spec.indexPath {
            orderSQL = " ORDER BY \(soup.expression(for: orderPath)) \(spec.order == .ascending ? "ASC" : "DESC")"
            // A total order makes LIMIT/OFFSET pages stable when sort keys tie.
            if orderPath != SoupPath.entryId { orderSQL += ", id ASC" }
        } else {
            orderSQL = " ORDER BY id \(spec.order == .ascending ? "ASC" : "DESC")"
        }
        return PlanCache.Text(pageSQL: "SELECT \(select) \(from)\(orderSQL) LIMIT ? OFFSET ?",
                              countSQL: "SELECT count(*) \(from)", rows: rows)
    }

    /// The WHERE condition selecting the spec's rows, shared by queries and removal by query.
    package static func whereClause(_ spec: QuerySpec, soup: SoupInfo) throws -> (String, [SQLValue]) {
        (try whereSQL(spec, soup: soup), try whereBindings(spec, soup: soup))
    }

    /// The condition's text: it depends on the spec's shape only, never on key values.
    private static func whereSQL(_ spec: QuerySpec, soup: SoupInfo) throws -> String {
        let expr = soup.expression(for: spec.indexPath ?? SoupPath.entryId)
        switch spec.queryType {
        case .exact:
            return "\(expr) = ?"
        case .like:
            return "\(expr) LIKE ?"
        case .range:
            var parts: [String] = []
            if spec.beginKey != nil { parts.append("\(expr) >= ?") }
            if spec.endKey != nil { parts.append("\(expr) <= ?") }
            return parts.joined(separator: " AND ")
        case .match:
            try requireFullText(spec, soup: soup)
            return "id IN (SELECT rowid FROM \(soup.ftsTable) WHERE \(soup.ftsTable) MATCH ?)"
        case .smart:
            throw StoreError.argument("querySoup does not take smart query specs; use runSmartQuery")
        }
    }

    /// The values bound to the condition's placeholders, in order.
    private static func whereBindings(_ spec: QuerySpec, soup: SoupInfo) throws -> [SQLValue] {
        try KeyBinding(spec, soup: soup).values(match: spec.matchKey, begin: spec.beginKey, end: spec.endKey, like: spec.likeKey)
    }

    /// A match query needs a full_text index, and its indexPath (if any) must be one; returns
    /// that index's column.
    @discardableResult
    fileprivate static func requireFullText(_ spec: QuerySpec, soup: SoupInfo) throws -> String? {
        guard !soup.fullTextIndexes.isEmpty else {
            throw StoreError.argument("Soup '\(soup.name)' has no full_text index; a match query needs one")
        }
        guard let path = spec.indexPath else { return nil }
        guard let index = soup.index(for: path), index.type == .fullText else {
            throw StoreError.argument("Path '\(path)' of soup '\(soup.name)' is not a full_text index; match queries need one")
        }
        return index.columnName
    }
}
