import SyncStoreSupport
import SyncStoreCore

/// Rewrites a sync down SOQL query (docs/sync.md#incremental-sync): adds the id and modification-date fields to
/// the SELECT, a timestamp filter for incremental runs (parenthesized, so a WHERE with OR keeps
/// its meaning), and ORDER BY the modification date when the query has no ORDER BY.
package struct SoqlRewriter {
    package let query: String
    private let bytes: [UInt8]
    /// Top-level clause keyword positions (outside strings and parentheses).
    private var clauses: [(keyword: String, start: Int, end: Int)] = []

    package static let clauseKeywords = ["SELECT", "FROM", "WHERE", "WITH", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "FOR", "UPDATE"]

    package init(_ query: String) throws {
        self.query = query
        bytes = Array(query.utf8)
        var depth = 0
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "'") {
                i += 1
                while i < bytes.count && bytes[i] != UInt8(ascii: "'") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
                i += 1
                continue
            }
            if c == UInt8(ascii: "(") { depth += 1 } else if c == UInt8(ascii: ")") { depth -= 1 }
            if depth == 0 && SoqlRewriter.isWordStart(bytes, i) {
                var j = i
                while j < bytes.count && SoqlRewriter.isWord(bytes[j]) { j += 1 }
                let word = String(decoding: bytes[i..<j], as: UTF8.self).uppercased()
                if SoqlRewriter.clauseKeywords.contains(word) { clauses.append((word, i, j)) }
                i = j
                continue
            }
            i += 1
        }
        guard depth == 0, clauses.first?.keyword == "SELECT", let from = clauses.first(where: { $0.keyword == "FROM" }), from.start > 0 else {
            throw StoreError.argument("The target's SOQL query must look like SELECT fields FROM object [WHERE ...]: '\(query)'")
        }
    }

    private static func isWord(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 || c == 46
    }
    private static func isWordStart(_ b: [UInt8], _ i: Int) -> Bool { isWord(b[i]) && (i == 0 || !isWord(b[i - 1])) }

    private func text(_ from: Int, _ to: Int) -> String {
        String(decoding: bytes[from..<max(from, to)], as: UTF8.self).trimmingSpaces()
    }

    private func clause(_ keyword: String) -> (start: Int, end: Int, bodyEnd: Int)? {
        guard let index = clauses.firstIndex(where: { $0.keyword == keyword }) else { return nil }
        let bodyEnd = index + 1 < clauses.count ? clauses[index + 1].start : bytes.count
        return (clauses[index].start, clauses[index].end, bodyEnd)
    }

    /// Top-level fields of the SELECT list.
    package var fields: [String] {
        guard let select = clause("SELECT") else { return [] }
        var fields: [String] = []
        var depth = 0
        var start = select.end
        for i in select.end..<select.bodyEnd {
            switch bytes[i] {
            case UInt8(ascii: "("): depth += 1
            case UInt8(ascii: ")"): depth -= 1
            case UInt8(ascii: ",") where depth == 0:
                fields.append(text(start, i))
                start = i + 1
            default: break
            }
        }
        fields.append(text(start, select.bodyEnd))
        return fields.filter { !$0.isEmpty }
    }

    /// The query as the sync runs it.
    package func syncQuery(idField: String, modificationField: String, since: Int64?) -> String {
        var selected = fields
        for required in [idField, modificationField] where !selected.contains(where: { $0.caseInsensitiveEquals(required) }) {
            selected.append(required)
        }
        let filter = since.map { "\(modificationField) >= \(Timestamp.format($0))" }
        return build(fields: selected, extraFilter: filter, defaultOrder: "ORDER BY \(modificationField)", keepOrder: true)
    }

    /// Whether the sync query's rows come in ascending order of `field`: the query has no ORDER
    /// BY (the sync adds one) or its first ordering term is that field, ascending.
    package func ordersAscending(by field: String) -> Bool {
        guard let order = clause("ORDER") else { return true }
        let body = text(order.end, order.bodyEnd)
        var words = body.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }).map(String.init)
        guard words.first?.uppercased() == "BY" else { return false }
        words.removeFirst()
        let firstTerm = words.joined(separator: " ").split(separator: ",", maxSplits: 1).first.map(String.init) ?? ""
        let parts = firstTerm.split(separator: " ").map { $0.uppercased() }
        guard let name = parts.first, name == field.uppercased() else { return false }
        return parts.count == 1 || parts[1] == "ASC" || parts[1] == "NULLS"
    }

    /// The same scope, ids only, for finding ghosts (no timestamp filter, no ordering needed).
    package func idQuery(idField: String) -> String {
        build(fields: [idField], extraFilter: nil, defaultOrder: nil, keepOrder: false)
    }

    /// The object whose deleted records are exactly this query's ghosts: a query of every record
    /// of one object (no WHERE, WITH, GROUP BY, HAVING, LIMIT or OFFSET), nil otherwise (then a
    /// record can also leave the scope by an edit, and only a full comparison finds it).
    package var wholeObject: String? {
        guard ["WHERE", "WITH", "GROUP", "HAVING", "LIMIT", "OFFSET"].allSatisfy({ clause($0) == nil }) else { return nil }
        return object
    }

    /// The object the query reads (its FROM), nil when that is not a plain name.
    package var object: String? {
        guard let from = clause("FROM") else { return nil }
        let name = text(from.end, from.bodyEnd)
        guard !name.isEmpty, name.utf8.allSatisfy({ SoqlRewriter.isWord($0) && $0 != UInt8(ascii: ".") }) else { return nil }
        return name
    }

    /// Whether a record's membership in the query's result depends on that record alone, so
    /// that the records a change event names can be fetched on their own (docs/sync.md#change-events):
    /// no GROUP BY, HAVING, LIMIT or OFFSET.
    package var judgesRecordsAlone: Bool { ["GROUP", "HAVING", "LIMIT", "OFFSET"].allSatisfy { clause($0) == nil } }

    /// The sync query restricted to records by Salesforce `Id` (letters and digits only, checked
    /// by the caller): the records among them that are in the query's scope.
    package func recordsQuery(ids: [String], idField: String, modificationField: String) -> String {
        var selected = fields
        for required in [idField, modificationField] where !selected.contains(where: { $0.caseInsensitiveEquals(required) }) {
            selected.append(required)
        }
        let list = ids.map { "'\($0)'" }.joined(separator: ",")
        return build(fields: selected, extraFilter: "Id IN (\(list))", defaultOrder: "ORDER BY \(modificationField)", keepOrder: true)
    }

    private func build(fields: [String], extraFilter: String?, defaultOrder: String?, keepOrder: Bool) -> String {
        guard let from = clause("FROM") else { return query }
        var out = "SELECT " + fields.joined(separator: ", ") + " " + text(from.start, from.bodyEnd)
        let whereClause = clause("WHERE").map { text($0.end, $0.bodyEnd) }
        switch (extraFilter, whereClause) {
        case let (filter?, condition?): out += " WHERE (\(filter)) AND (\(condition))"
        case let (filter?, nil): out += " WHERE \(filter)"
        case let (nil, condition?): out += " WHERE \(condition)"
        case (nil, nil): break
        }
        for keyword in ["WITH", "GROUP", "HAVING"] {
            if let c = clause(keyword) { out += " " + text(c.start, c.bodyEnd) }
        }
        if let order = clause("ORDER") {
            if keepOrder { out += " " + text(order.start, order.bodyEnd) }
        } else if let defaultOrder {
            out += " " + defaultOrder
        }
        for keyword in ["LIMIT", "OFFSET"] {
            if let c = clause(keyword) { out += " " + text(c.start, c.bodyEnd) }
        }
        return out
    }
}

extension String {
    package func trimmingSpaces() -> String {
        var s = Substring(self)
        // "\r\n" is one Character (a header line's end), equal to neither "\r" nor "\n".
        func isSpace(_ c: Character) -> Bool { c == " " || c == "\n" || c == "\t" || c == "\r" || c == "\r\n" }
        while let f = s.first, isSpace(f) { s = s.dropFirst() }
        while let l = s.last, isSpace(l) { s = s.dropLast() }
        return String(s)
    }

    package func caseInsensitiveEquals(_ other: String) -> Bool { lowercased() == other.lowercased() }
}
