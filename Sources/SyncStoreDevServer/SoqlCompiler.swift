import SyncStoreSupport

/// Translates a parsed SOQL query into one SQLite statement whose single result column is the
/// finished record JSON (built by SQLite's json_object), so the server never materializes
/// records as Swift values on the query path.

struct CompiledQuery {
    var sql: String
    var binds: [SQLValue]
    /// `SELECT COUNT() FROM ...`: the statement yields one integer, the response has no records.
    var countOnly: Bool
}

/// A LEFT JOIN to a parent object, created on first use of a relationship path.
private struct Join {
    let alias: String
    let object: SObjectDef
    let sql: String
}

/// The objects visible in one SELECT: the FROM object and the parents reached from it.
private final class Scope {
    let object: SObjectDef
    let alias: String
    let soqlAlias: String?
    var joins: [String: Join] = [:]
    var joinOrder: [String] = []

    init(object: SObjectDef, alias: String, soqlAlias: String?) {
        self.object = object
        self.alias = alias
        self.soqlAlias = soqlAlias
    }

    var joinSQL: String { joinOrder.compactMap { joins[$0]?.sql }.joined(separator: " ") }
}

private struct ResolvedField {
    let sql: String
    let field: FieldDef
    /// Canonical relationship names walked, with each join's alias and object.
    let relationships: [(name: String, alias: String, object: SObjectDef)]
}

/// JSON output tree: nested objects for parent relationships, in SELECT order.
private final class OutNode {
    enum Entry { case value(String), node(OutNode), child(String) }
    let object: SObjectDef
    let alias: String
    var keys: [String] = []
    var entries: [String: Entry] = [:]

    init(object: SObjectDef, alias: String) {
        self.object = object
        self.alias = alias
    }

    func add(_ key: String, _ entry: Entry) {
        if entries[key] == nil { keys.append(key) }
        if case .node = entries[key] { return }
        entries[key] = entry
    }

    func childNode(_ key: String, object: SObjectDef, alias: String) -> OutNode {
        if case .node(let n) = entries[key] { return n }
        let n = OutNode(object: object, alias: alias)
        add(key, .node(n))
        return n
    }
}

final class SoqlCompiler {
    let schema: Schema
    let version: String
    private var binds: [SQLValue] = []
    private var aliasCounter = 0
    private let todayDays: Int

    init(schema: Schema, version: String, nowMillis: Int64 = SFTime.serverNowMillis()) {
        self.schema = schema
        self.version = version
        self.todayDays = Int(nowMillis / 86_400_000)
    }

    private func nextAlias(_ p: String) -> String {
        aliasCounter += 1
        return "\(p)\(aliasCounter)"
    }

    private func bind(_ v: SQLValue) -> String {
        binds.append(v)
        return "?\(binds.count)"
    }

    func object(named name: String, offset: Int) throws -> SObjectDef {
        guard let obj = schema.object(name) else {
            throw SoqlError(kind: .invalidType, offset: offset, message: "sObject type '\(name)' is not supported. If you are attempting to use a custom object, be sure to append the '__c' after the entity name. Please reference your WSDL or the describe call for the appropriate names.")
        }
        return obj
    }

    // MARK: entry point

    func compile(_ q: SoqlQuery, includeDeleted: Bool) throws -> CompiledQuery {
        let obj = try object(named: q.from, offset: q.fromOffset)
        let scope = Scope(object: obj, alias: "t0", soqlAlias: q.alias)
        let isCountOnly = q.items.count == 1 && {
            if case .aggregate("COUNT", nil, nil, _) = q.items[0] { return true }
            return false
        }()
        let hasAggregates = q.items.contains { if case .aggregate = $0 { return true }; return false }
        if q.items.contains(where: { if case .aggregate("COUNT", nil, _, _) = $0 { return true }; return false }) && !isCountOnly {
            throw SoqlError(kind: .malformed, offset: q.fromOffset, message: "COUNT() must be the only element in the SELECT list.")
        }

        var selectSQL: String
        if isCountOnly {
            selectSQL = "count(*)"
        } else if hasAggregates || !q.groupBy.isEmpty {
            selectSQL = try aggregateSelect(q, scope: scope)
        } else {
            selectSQL = try recordSelect(q.items, scope: scope, rootAlias: scope.alias)
        }
        var whereParts: [String] = []
        if !includeDeleted && !q.allRows { whereParts.append("t0.\"IsDeleted\" = 0") }
        if let c = q.condition { whereParts.append(try condition(c, scope: scope)) }
        var groupSQL = ""
        if !q.groupBy.isEmpty && !isCountOnly {
            groupSQL = " GROUP BY " + (try q.groupBy.map { try resolve($0, scope: scope).sql }).joined(separator: ", ")
            if let h = q.having { groupSQL += " HAVING " + (try condition(h, scope: scope)) }
        }
        let orderSQL = isCountOnly ? "" : try orderBy(q.orderBy, scope: scope, aggregate: hasAggregates || !q.groupBy.isEmpty)
        var sql = "SELECT \(selectSQL) FROM \(obj.tableName) t0 \(scope.joinSQL)"
        if !whereParts.isEmpty { sql += " WHERE " + whereParts.joined(separator: " AND ") }
        sql += groupSQL
        if isCountOnly {
            // COUNT() honours LIMIT: count the limited row set.
            if q.limit != nil || q.offset != nil {
                sql = "SELECT count(*) FROM (SELECT 1 FROM \(obj.tableName) t0 \(scope.joinSQL)"
                if !whereParts.isEmpty { sql += " WHERE " + whereParts.joined(separator: " AND ") }
                sql += " LIMIT \(q.limit ?? -1) OFFSET \(q.offset ?? 0))"
            }
            return CompiledQuery(sql: sql, binds: binds, countOnly: true)
        }
        sql += orderSQL
        if q.limit != nil || q.offset != nil { sql += " LIMIT \(q.limit ?? -1) OFFSET \(q.offset ?? 0)" }
        return CompiledQuery(sql: sql, binds: binds, countOnly: false)
    }

    // MARK: field resolution

    private func resolve(_ ref: FieldRef, scope: Scope) throws -> ResolvedField {
        var path = ref.path
        if path.count > 1, let a = scope.soqlAlias, path[0].lowercased() == a.lowercased() { path.removeFirst() }
        var obj = scope.object
        var alias = scope.alias
        var walked: [(name: String, alias: String, object: SObjectDef)] = []
        var key = ""
        for rel in path.dropLast() {
            guard let lookup = obj.relationship(rel), let target = lookup.referenceTo.flatMap({ schema.object($0) }) else {
                throw SoqlError(kind: .invalidField, offset: ref.offset, message: "Didn't understand relationship '\(rel)' in field path. If you are attempting to use a custom relationship, be sure to append the '__r' after the custom relationship name. Please reference your WSDL or the describe call for the appropriate names.")
            }
            let relName = lookup.relationshipName ?? rel
            key += "." + relName.lowercased()
            if let j = scope.joins[key] {
                alias = j.alias
            } else {
                let jAlias = nextAlias("j")
                scope.joins[key] = Join(alias: jAlias, object: target,
                                        sql: "LEFT JOIN \(target.tableName) \(jAlias) ON \(jAlias).\"Id\" = \(alias).\"\(lookup.name)\" AND \(jAlias).\"IsDeleted\" = 0")
                scope.joinOrder.append(key)
                alias = jAlias
            }
            obj = target
            walked.append((relName, alias, target))
        }
        guard let last = path.last, let field = obj.field(last) else {
            throw SoqlError(kind: .invalidField, offset: ref.offset, message: "No such column '\(path.last ?? "")' on entity '\(obj.name)'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name. Please reference your WSDL or the describe call for the appropriate names.")
        }
        return ResolvedField(sql: "\(alias).\"\(field.name)\"", field: field, relationships: walked)
    }

    /// The JSON value expression for a column: booleans are stored as 0/1.
    private func jsonValue(_ sql: String, _ field: FieldDef) -> String {
        field.type == .boolean ? "json(CASE WHEN \(sql) THEN 'true' ELSE 'false' END)" : sql
    }

    private func attributesSQL(_ obj: SObjectDef, alias: String) -> String {
        "json_object('type','\(obj.name)','url','/services/data/v\(version)/sobjects/\(obj.name)/' || \(alias).\"Id\")"
    }

    // MARK: record SELECT

    private func recordSelect(_ items: [SelectItem], scope: Scope, rootAlias: String) throws -> String {
        let root = OutNode(object: scope.object, alias: rootAlias)
        for item in items {
            switch item {
            case .field(let ref):
                let r = try resolve(ref, scope: scope)
                var node = root
                for rel in r.relationships { node = node.childNode(rel.name, object: rel.object, alias: rel.alias) }
                node.add(r.field.name, .value(jsonValue(r.sql, r.field)))
            case .subquery(let sub):
                guard let rel = scope.object.childRelationship(sub.from) else {
                    throw SoqlError(kind: .invalidType, offset: sub.fromOffset, message: "Didn't understand relationship '\(sub.from)' in FROM part of query call. If you are attempting to use a custom relationship, be sure to append the '__r' after the custom relationship name. Please reference your WSDL or the describe call for the appropriate names.")
                }
                root.add(rel.name, .child(try childSubquery(sub, relationship: rel, parentAlias: scope.alias)))
            case .aggregate(_, _, _, let offset):
                throw SoqlError(kind: .malformed, offset: offset, message: "Aggregate functions need GROUP BY or must be alone")
            case .fieldsMacro(let which, _):
                for f in scope.object.fields where which == "ALL" || (which == "CUSTOM") == f.name.hasSuffix("__c") {
                    root.add(f.name, .value(jsonValue("\(scope.alias).\"\(f.name)\"", f)))
                }
            }
        }
        return nodeSQL(root, isRoot: true)
    }

    private func nodeSQL(_ node: OutNode, isRoot: Bool) -> String {
        var pairs: [String] = ["'attributes'", attributesSQL(node.object, alias: node.alias)]
        for key in node.keys {
            guard let e = node.entries[key] else { continue }
            pairs.append("'\(key)'")
            switch e {
            case .value(let sql): pairs.append(sql)
            case .node(let child): pairs.append(nodeSQL(child, isRoot: false))
            case .child(let sql): pairs.append(sql)
            }
        }
        let obj = jsonObjectSQL(pairs)
        return isRoot ? obj : "json(CASE WHEN \(node.alias).\"Id\" IS NULL THEN NULL ELSE \(obj) END)"
    }

    /// json_object takes at most 127 arguments; wider records are built in chunks and merged.
    private func jsonObjectSQL(_ pairs: [String]) -> String {
        let chunkSize = 120
        if pairs.count <= chunkSize { return "json_object(\(pairs.joined(separator: ",")))" }
        var chunks: [String] = []
        var i = 0
        while i < pairs.count {
            let end = min(i + chunkSize, pairs.count)
            chunks.append("json_object(\(pairs[i..<end].joined(separator: ",")))")
            i = end
        }
        return chunks.dropFirst().reduce(chunks[0]) { "json_patch(\($0),\($1))" }
    }

    private func childSubquery(_ sub: SoqlQuery, relationship: ChildRelationship, parentAlias: String) throws -> String {
        let childObj = try object(named: relationship.childSObject, offset: sub.fromOffset)
        let alias = nextAlias("c")
        let scope = Scope(object: childObj, alias: alias, soqlAlias: sub.alias)
        if sub.items.contains(where: { if case .subquery = $0 { return true }; return false }) {
            throw SoqlError(kind: .malformed, offset: sub.fromOffset, message: "Nesting of semi join sub-selects is not supported")
        }
        let rowSQL = try recordSelect(sub.items, scope: scope, rootAlias: alias)
        var whereParts = ["\(alias).\"\(relationship.field)\" = \(parentAlias).\"Id\"", "\(alias).\"IsDeleted\" = 0"]
        if let c = sub.condition { whereParts.append(try condition(c, scope: scope)) }
        var inner = "SELECT \(rowSQL) AS r FROM \(childObj.tableName) \(alias) \(scope.joinSQL) WHERE \(whereParts.joined(separator: " AND "))"
        inner += try orderBy(sub.orderBy, scope: scope, aggregate: false)
        if sub.limit != nil || sub.offset != nil { inner += " LIMIT \(sub.limit ?? -1) OFFSET \(sub.offset ?? 0)" }
        return "(SELECT json(CASE WHEN count(*) = 0 THEN NULL ELSE json_object('totalSize', count(*), 'done', json('true'), 'records', json_group_array(json(r))) END) FROM (\(inner)))"
    }

    // MARK: aggregate SELECT

    private func aggregateSelect(_ q: SoqlQuery, scope: Scope) throws -> String {
        var pairs = ["'attributes'", "json_object('type','AggregateResult')"]
        var exprIndex = 0
        let grouped = Set(try q.groupBy.map { try resolve($0, scope: scope).sql })
        for item in q.items {
            switch item {
            case .field(let ref):
                let r = try resolve(ref, scope: scope)
                guard grouped.contains(r.sql) else {
                    throw SoqlError(kind: .malformed, offset: ref.offset, message: "Field must be grouped or aggregated: \(r.field.name)")
                }
                pairs.append("'\(r.field.name)'")
                pairs.append(jsonValue(r.sql, r.field))
            case .aggregate(let fn, let arg, let alias, _):
                let key: String
                if let alias { key = alias } else { key = "expr\(exprIndex)"; exprIndex += 1 }
                pairs.append("'\(key.replacingOccurrences(of: "'", with: "''"))'")
                pairs.append(try aggregateSQL(fn, arg, scope: scope))
            case .subquery(let sub):
                throw SoqlError(kind: .malformed, offset: sub.fromOffset, message: "Subqueries are not allowed in aggregate queries")
            case .fieldsMacro(_, let offset):
                throw SoqlError(kind: .malformed, offset: offset, message: "FIELDS() is not allowed in aggregate queries")
            }
        }
        return jsonObjectSQL(pairs)
    }

    private func aggregateSQL(_ fn: String, _ arg: FieldRef?, scope: Scope) throws -> String {
        guard let arg else { return "count(*)" }
        let r = try resolve(arg, scope: scope)
        switch fn {
        case "COUNT": return "count(\(r.sql))"
        case "COUNT_DISTINCT": return "count(DISTINCT \(r.sql))"
        case "SUM", "AVG":
            guard r.field.type.isNumeric else {
                throw SoqlError(kind: .malformed, offset: arg.offset, message: "field \(r.field.name) does not support aggregate operator \(fn)")
            }
            return fn == "SUM" ? "total(\(r.sql))" : "avg(\(r.sql))"
        default: return "\(fn.lowercased())(\(r.sql))"
        }
    }

    // MARK: ORDER BY

    private func orderBy(_ items: [OrderItem], scope: Scope, aggregate: Bool) throws -> String {
        var parts: [String] = []
        for item in items {
            let expr: String
            switch item.item {
            case .field(let ref): expr = try resolve(ref, scope: scope).sql
            case .aggregate(let fn, let arg, _, _): expr = try aggregateSQL(fn, arg, scope: scope)
            case .subquery(let sub): throw SoqlError(kind: .malformed, offset: sub.fromOffset, message: "unexpected subquery in ORDER BY")
            case .fieldsMacro(_, let offset): throw SoqlError(kind: .malformed, offset: offset, message: "unexpected FIELDS() in ORDER BY")
            }
            parts.append("\(expr) \(item.ascending ? "ASC" : "DESC") NULLS \(item.nullsFirst ? "FIRST" : "LAST")")
        }
        // A stable tie-break keeps paging deterministic.
        if !aggregate { parts.append("\(scope.alias).rowid") }
        return parts.isEmpty ? "" : " ORDER BY " + parts.joined(separator: ", ")
    }

    // MARK: WHERE

    private func condition(_ c: Condition, scope: Scope) throws -> String {
        switch c {
        case .and, .or:
            // Flatten chains iteratively: long AND/OR lists must not become deep SQL nesting.
            let isAnd: Bool
            if case .and = c { isAnd = true } else { isAnd = false }
            var operands: [Condition] = []
            var stack = [c]
            while let x = stack.popLast() {
                switch x {
                case .and(let a, let b) where isAnd: stack.append(b); stack.append(a)
                case .or(let a, let b) where !isAnd: stack.append(b); stack.append(a)
                default: operands.append(x)
                }
            }
            return "(" + (try operands.map { try condition($0, scope: scope) }).joined(separator: isAnd ? " AND " : " OR ") + ")"
        case .not:
            var negate = false
            var inner = c
            while case .not(let x) = inner { negate.toggle(); inner = x }
            let sql = try condition(inner, scope: scope)
            return negate ? "(NOT \(sql))" : sql
        case .compare(let ref, let op, let lit):
            let r = try resolve(ref, scope: scope)
            return try comparison(r, op: op, lit, ref: ref)
        case .inList(let ref, let negated, let lits):
            let r = try resolve(ref, scope: scope)
            var values: [String] = []
            var hasNull = false
            for lit in lits {
                if case .null = lit.value { hasNull = true; continue }
                guard let v = try sqlValue(lit, for: r.field, ref: ref) else { continue }
                values.append(bind(v))
            }
            // Every predicate is two-valued (a null field never matches, `!=`/NOT IN match nulls),
            // so NOT/AND/OR behave as in SOQL rather than SQL's three-valued logic.
            let list = values.joined(separator: ",")
            if negated {
                var parts: [String] = []
                if !values.isEmpty { parts.append("(\(r.sql) NOT IN (\(list)) OR \(r.sql) IS NULL)") }
                if hasNull { parts.append("\(r.sql) IS NOT NULL") }
                return parts.isEmpty ? "1" : "(" + parts.joined(separator: " AND ") + ")"
            }
            var parts: [String] = []
            if !values.isEmpty { parts.append("(\(r.sql) IN (\(list)) AND \(r.sql) IS NOT NULL)") }
            if hasNull { parts.append("\(r.sql) IS NULL") }
            return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
        case .inQuery(let ref, let negated, let sub):
            let r = try resolve(ref, scope: scope)
            let sub = try semiJoin(sub)
            return negated ? "(\(r.sql) NOT IN (\(sub)) OR \(r.sql) IS NULL)" : "(\(r.sql) IN (\(sub)) AND \(r.sql) IS NOT NULL)"
        case .like(let ref, let lit):
            let r = try resolve(ref, scope: scope)
            guard r.field.type.isText || r.field.type == .id || r.field.type == .reference, case .string(_, let pattern) = lit.value else {
                throw SoqlError(kind: .invalidField, offset: ref.offset, message: "invalid operator on field: \(r.field.name)")
            }
            return "(\(r.sql) LIKE \(bind(.text(pattern))) ESCAPE '\\' AND \(r.sql) IS NOT NULL)"
        case .aggregateCompare(let fn, let arg, let op, let lit):
            let value: SQLValue
            switch lit.value {
            case .number(let n): value = Int64(n).map { .int($0) } ?? .real(Double(n) ?? 0)
            case .string(let str, _): value = .text(str)
            case .date(let d): value = .text(d)
            case .datetime(let ms): value = .text(SFTime.format(millis: ms))
            default: throw SoqlError(kind: .malformed, offset: lit.offset, message: "unexpected value in HAVING")
            }
            return "(\(try aggregateSQL(fn, arg, scope: scope)) \(op) \(bind(value)))"
        case .search(let terms, let fields):
            var termParts: [String] = []
            for term in terms {
                let ors = fields.compactMap { scope.object.field($0) }.map { "\(scope.alias).\"\($0.name)\" LIKE \(bind(.text(term))) ESCAPE '\\'" }
                termParts.append(ors.isEmpty ? "0" : "(" + ors.joined(separator: " OR ") + ")")
            }
            return termParts.isEmpty ? "1" : "coalesce(" + termParts.joined(separator: " AND ") + ", 0)"
        }
    }

    private func semiJoin(_ sub: SoqlQuery) throws -> String {
        let obj = try object(named: sub.from, offset: sub.fromOffset)
        let alias = nextAlias("s")
        let scope = Scope(object: obj, alias: alias, soqlAlias: sub.alias)
        guard sub.items.count == 1, case .field(let ref) = sub.items[0] else {
            throw SoqlError(kind: .malformed, offset: sub.fromOffset, message: "Semi join sub-selects can only select one field")
        }
        let r = try resolve(ref, scope: scope)
        // NULLs in a NOT IN list would make the whole predicate NULL.
        var whereParts = ["\(alias).\"IsDeleted\" = 0", "\(r.sql) IS NOT NULL"]
        if let c = sub.condition { whereParts.append(try condition(c, scope: scope)) }
        var sql = "SELECT \(r.sql) FROM \(obj.tableName) \(alias) \(scope.joinSQL) WHERE \(whereParts.joined(separator: " AND "))"
        if sub.limit != nil { sql += " LIMIT \(sub.limit ?? -1)" }
        return sql
    }

    private func comparison(_ r: ResolvedField, op: String, _ lit: Literal, ref: FieldRef) throws -> String {
        if case .null = lit.value {
            switch op {
            case "=": return "(\(r.sql) IS NULL)"
            case "!=": return "(\(r.sql) IS NOT NULL)"
            default: throw SoqlError(kind: .malformed, offset: lit.offset, message: "unexpected token: 'null'")
            }
        }
        if case .relativeDate(let name, let n) = lit.value {
            guard r.field.type == .date || r.field.type == .datetime else {
                throw SoqlError(kind: .invalidField, offset: lit.offset, message: "value of filter criterion for field '\(r.field.name)' must be of type \(typeName(r.field.type)) and should not be enclosed in quotes")
            }
            let (startDay, endDay) = try relativeRange(name, n, offset: lit.offset)
            // Bind only the bounds the operator uses: every numbered parameter must appear in the SQL.
            let lo = (op == "<=" || op == ">") ? "" : bind(boundary(day: startDay, r.field))
            let hi = (op == "<" || op == ">=") ? "" : bind(boundary(day: endDay, r.field))
            switch op {
            case "=": return "(\(r.sql) >= \(lo) AND \(r.sql) < \(hi) AND \(r.sql) IS NOT NULL)"
            case "!=": return "(\(r.sql) < \(lo) OR \(r.sql) >= \(hi) OR \(r.sql) IS NULL)"
            case "<": return "(\(r.sql) < \(lo) AND \(r.sql) IS NOT NULL)"
            case "<=": return "(\(r.sql) < \(hi) AND \(r.sql) IS NOT NULL)"
            case ">": return "(\(r.sql) >= \(hi) AND \(r.sql) IS NOT NULL)"
            default: return "(\(r.sql) >= \(lo) AND \(r.sql) IS NOT NULL)"
            }
        }
        guard let v = try sqlValue(lit, for: r.field, ref: ref) else { return "0" }
        if r.field.type == .boolean, op != "=", op != "!=" {
            throw SoqlError(kind: .invalidField, offset: lit.offset, message: "invalid operator on boolean field: \(r.field.name)")
        }
        let placeholder = bind(v)
        // SOQL `!=` matches nulls too (unlike SQL), so add them explicitly.
        if op == "!=" { return "(\(r.sql) != \(placeholder) OR \(r.sql) IS NULL)" }
        return "(\(r.sql) \(op) \(placeholder) AND \(r.sql) IS NOT NULL)"
    }

    private func boundary(day: Int, _ field: FieldDef) -> SQLValue {
        field.type == .date ? .text(Timestamp.formatDate(days: day)) : .text(SFTime.format(millis: Int64(day) * 86_400_000))
    }

    private func relativeRange(_ name: String, _ n: Int?, offset: Int) throws -> (Int, Int) {
        let t = todayDays
        let (y, m, _) = CivilDate.civil(days: t)
        func monthStart(_ year: Int, _ month: Int) -> Int {
            var yy = year, mm = month
            while mm < 1 { mm += 12; yy -= 1 }
            while mm > 12 { mm -= 12; yy += 1 }
            return CivilDate.days(year: yy, month: mm, day: 1)
        }
        let k = n ?? 0
        // Weeks start on Sunday (the API's default locale); day 0 (1970-01-01) was a Thursday.
        let weekStart = t - ((t + 4) % 7 + 7) % 7
        switch name {
        case "TODAY": return (t, t + 1)
        case "YESTERDAY": return (t - 1, t)
        case "TOMORROW": return (t + 1, t + 2)
        case "LAST_N_DAYS": return (t - k, t + 1)
        case "NEXT_N_DAYS": return (t + 1, t + 1 + k)
        case "N_DAYS_AGO": return (t - k, t - k + 1)
        case "THIS_WEEK": return (weekStart, weekStart + 7)
        case "LAST_WEEK": return (weekStart - 7, weekStart)
        case "NEXT_WEEK": return (weekStart + 7, weekStart + 14)
        case "LAST_N_WEEKS": return (weekStart - 7 * k, weekStart)
        case "NEXT_N_WEEKS": return (weekStart + 7, weekStart + 7 + 7 * k)
        case "LAST_N_MONTHS": return (monthStart(y, m - k), monthStart(y, m))
        case "NEXT_N_MONTHS": return (monthStart(y, m + 1), monthStart(y, m + 1 + k))
        case "LAST_N_YEARS": return (CivilDate.days(year: y - k, month: 1, day: 1), CivilDate.days(year: y, month: 1, day: 1))
        case "NEXT_N_YEARS": return (CivilDate.days(year: y + 1, month: 1, day: 1), CivilDate.days(year: y + 1 + k, month: 1, day: 1))
        case "THIS_MONTH": return (monthStart(y, m), monthStart(y, m + 1))
        case "LAST_MONTH": return (monthStart(y, m - 1), monthStart(y, m))
        case "NEXT_MONTH": return (monthStart(y, m + 1), monthStart(y, m + 2))
        case "THIS_YEAR": return (CivilDate.days(year: y, month: 1, day: 1), CivilDate.days(year: y + 1, month: 1, day: 1))
        case "LAST_YEAR": return (CivilDate.days(year: y - 1, month: 1, day: 1), CivilDate.days(year: y, month: 1, day: 1))
        case "NEXT_YEAR": return (CivilDate.days(year: y + 1, month: 1, day: 1), CivilDate.days(year: y + 2, month: 1, day: 1))
        default: throw SoqlError(kind: .malformed, offset: offset, message: "unexpected token: '\(name)'")
        }
    }

    private func typeName(_ t: FieldType) -> String {
        switch t {
        case .datetime: return "dateTime"
        case .int: return "int"
        case .double, .currency, .percent: return "double"
        case .boolean: return "boolean"
        case .date: return "date"
        default: return "string"
        }
    }

    /// Converts a literal to the stored representation of `field`, checking SOQL's typing rules.
    private func sqlValue(_ lit: Literal, for field: FieldDef, ref: FieldRef) throws -> SQLValue? {
        func mismatch() -> SoqlError {
            let quoted: Bool
            if case .string = lit.value { quoted = true } else { quoted = false }
            let msg = quoted
                ? "value of filter criterion for field '\(field.name)' must be of type \(typeName(field.type)) and should not be enclosed in quotes"
                : "value of filter criterion for field '\(field.name)' must be of type \(typeName(field.type)) and should be enclosed in quotes"
            return SoqlError(kind: .invalidField, offset: lit.offset, message: msg)
        }
        switch (field.type, lit.value) {
        case (_, .null): return nil
        case (.id, .string(let s, _)), (.reference, .string(let s, _)):
            guard let id = SFId.to18(s) else {
                throw SoqlError(kind: .invalidFilter, offset: lit.offset, message: "invalid ID field: \(s)")
            }
            return .text(id)
        case (.boolean, .bool(let b)): return .int(b ? 1 : 0)
        case (let t, .number(let s)) where t.isNumeric:
            if let i = Int64(s) { return .int(i) }
            if let d = Double(s) { return .real(d) }
            throw mismatch()
        case (.date, .date(let d)): return .text(d)
        case (.datetime, .datetime(let ms)): return .text(SFTime.format(millis: ms))
        case (.datetime, .date(let d)):
            guard let days = Timestamp.parseDate(d) else { throw mismatch() }
            return .text(SFTime.format(millis: Int64(days) * 86_400_000))
        case (let t, .string(let s, _)) where t.isText: return .text(s)
        default: throw mismatch()
        }
    }
}
