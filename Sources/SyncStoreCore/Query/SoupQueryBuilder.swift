/// SQL for one page of a query spec, plus the SQL that counts all its rows.
struct QueryPlan {
    enum Rows {
        /// Whole entries: the single column is the stored JSON text.
        case entries
        /// One JSON array per row built from the columns (selectPaths and Smart SQL).
        case values
    }
    let pageSQL: String   // ends with "LIMIT ? OFFSET ?"
    let countSQL: String
    let bindings: [SQLValue]
    let rows: Rows
    /// Smart SQL is checked against the authorizer when prepared.
    let isSmart: Bool
    /// The soup table a non-smart plan reads, to tell a cursor whose soup is gone.
    var soupTable: String? = nil
    /// Smart SQL: how long the count or one page may run (QuerySpec.timeoutMs).
    var timeLimitMs: Int64? = nil

    /// Runs `body` on `db` within the plan's time limit, if it has one.
    func limited<T>(on db: Connection, _ body: () throws -> T) throws -> T {
        guard let timeLimitMs else { return try body() }
        return try StatementDeadline.run(on: db, milliseconds: timeLimitMs, what: "Smart SQL", body)
    }
}

/// Turns a non-smart query spec into SQL over a soup's table (semantics §4).
enum SoupQueryBuilder {
    static func plan(_ spec: QuerySpec, soup: SoupInfo) throws -> QueryPlan {
        let (whereSQL, bindings) = try whereClause(spec, soup: soup)
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
        return QueryPlan(pageSQL: "SELECT \(select) \(from)\(orderSQL) LIMIT ? OFFSET ?",
                         countSQL: "SELECT count(*) \(from)",
                         bindings: bindings, rows: rows, isSmart: false, soupTable: soup.table)
    }

    /// The WHERE condition selecting the spec's rows, shared by queries and removal by query.
    static func whereClause(_ spec: QuerySpec, soup: SoupInfo) throws -> (String, [SQLValue]) {
        func target() -> (String, Bool) {
            let path = spec.indexPath ?? SoupPath.entryId
            let expr = soup.expression(for: path)
            let textual = soup.index(for: path).map { $0.type == .string || $0.type == .fullText } ?? false
            return (expr, textual)
        }
        switch spec.queryType {
        case .exact:
            let (expr, textual) = target()
            guard let key = spec.matchKey else { throw StoreError.argument("An exact query needs a non-null \"matchKey\"") }
            return ("\(expr) = ?", [key.sql(textual: textual)])
        case .like:
            let (expr, textual) = target()
            guard let key = spec.likeKey else { throw StoreError.argument("A like query needs a non-null \"likeKey\"") }
            return ("\(expr) LIKE ?", [key.sql(textual: textual)])
        case .range:
            let (expr, textual) = target()
            var parts: [String] = []
            var values: [SQLValue] = []
            if let begin = spec.beginKey { parts.append("\(expr) >= ?"); values.append(begin.sql(textual: textual)) }
            if let end = spec.endKey { parts.append("\(expr) <= ?"); values.append(end.sql(textual: textual)) }
            return (parts.joined(separator: " AND "), values)
        case .match:
            guard !soup.fullTextIndexes.isEmpty else {
                throw StoreError.argument("Soup '\(soup.name)' has no full_text index; a match query needs one")
            }
            guard var key = spec.matchKey?.text else { throw StoreError.argument("A match query needs a non-null \"matchKey\"") }
            if let path = spec.indexPath {
                guard let index = soup.index(for: path), index.type == .fullText else {
                    throw StoreError.argument("Path '\(path)' of soup '\(soup.name)' is not a full_text index; match queries need one")
                }
                // Qualify every term of the expression with the column, keeping AND/OR/NOT.
                key = "\(index.columnName) : (\(key))"
            }
            return ("id IN (SELECT rowid FROM \(soup.ftsTable) WHERE \(soup.ftsTable) MATCH ?)", [.text(key)])
        case .smart:
            throw StoreError.argument("querySoup does not take smart query specs; use runSmartQuery")
        }
    }
}
