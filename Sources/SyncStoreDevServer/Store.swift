import Foundation
import SyncStoreSupport

/// The record store: one SQLite table per sObject type plus the write rules of the API
/// (field validation, system fields, soft delete). Callers hold `Store.lock` (see `Store.locked`):
/// a single connection serves every request, which keeps transactions simple and is fast enough.
final class Store: @unchecked Sendable {
    let schema: Schema
    let db: SQLiteDB
    let clock = WriteClock()
    /// Change events of every committed write (ChangeEvents.swift).
    let events: ChangeEvents
    private let lock = NSLock()
    private var nextSeq: [String: Int64] = [:]
    private var insertSQL: [String: String] = [:]
    /// Most recently created, updated or read ids per type, newest first (for `recentItems`).
    private var recent: [String: [String]] = [:]

    init(schema: Schema, path: String) throws {
        self.schema = schema
        db = try SQLiteDB(path: path)
        try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY")
        events = try ChangeEvents(db: db, schema: schema)
        for obj in schema.objects { try createTable(obj) }
        for obj in schema.objects {
            let s = try db.prepare("SELECT coalesce(max(seq), 0), max(SystemModstamp) FROM \(obj.tableName)")
            if try s.step() {
                nextSeq[obj.name] = s.int64(0) + 1
                if let stamp = s.optionalText(1), let ms = SFTime.parseDateTime(stamp) { clock.advance(past: ms) }
            }
        }
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private func createTable(_ obj: SObjectDef) throws {
        var cols = ["seq INTEGER PRIMARY KEY", "\"Id\" TEXT NOT NULL UNIQUE", "\"IsDeleted\" INTEGER NOT NULL DEFAULT 0",
                    "\"CreatedDate\" TEXT NOT NULL", "\"LastModifiedDate\" TEXT NOT NULL", "\"SystemModstamp\" TEXT NOT NULL"]
        let custom = obj.fields.filter { !$0.system }
        for f in custom { cols.append(columnDDL(f, obj)) }
        try db.exec("CREATE TABLE IF NOT EXISTS \(obj.tableName) (\(cols.joined(separator: ", ")))")
        // A schema that gained fields since the database file was made: add the columns.
        var existing = Set<String>()
        let info = try db.prepare("PRAGMA table_xinfo(\(obj.tableName))", cached: false)
        while try info.step() { if let n = info.optionalText(1) { existing.insert(n.lowercased()) } }
        for f in custom where !existing.contains(f.name.lowercased()) {
            try db.exec("ALTER TABLE \(obj.tableName) ADD COLUMN \(columnDDL(f, obj))")
        }
        let t = obj.tableName
        let base = "ix_\(obj.name)"
        try db.exec("CREATE INDEX IF NOT EXISTS \"\(base)_lmd\" ON \(t)(\"LastModifiedDate\")")
        try db.exec("CREATE INDEX IF NOT EXISTS \"\(base)_sms\" ON \(t)(\"SystemModstamp\")")
        for f in custom where f.compoundOf.isEmpty {
            if f.unique || f.externalId {
                let unique = f.unique ? "UNIQUE " : ""
                try db.exec("CREATE \(unique)INDEX IF NOT EXISTS \"\(base)_\(f.name)\" ON \(t)(\"\(f.name)\") WHERE \"IsDeleted\" = 0")
            } else if f.type == .reference {
                try db.exec("CREATE INDEX IF NOT EXISTS \"\(base)_\(f.name)\" ON \(t)(\"\(f.name)\")")
            }
        }
    }

    private func columnDDL(_ f: FieldDef, _ obj: SObjectDef) -> String {
        if !f.compoundOf.isEmpty {
            let parts = f.compoundOf.compactMap { obj.field($0) }.map { "coalesce(\"\($0.name)\",'')" }
            return "\"\(f.name)\" \(f.type.sqlType) GENERATED ALWAYS AS (nullif(trim(\(parts.joined(separator: " || ' ' || "))), '')) VIRTUAL"
        }
        let notNull = f.type == .boolean ? " NOT NULL DEFAULT 0" : ""
        return "\"\(f.name)\" \(f.type.sqlType)\(notNull)"
    }

    // MARK: recent items

    func touch(_ type: String, _ id: String) {
        var list = recent[type] ?? []
        list.removeAll { $0 == id }
        list.insert(id, at: 0)
        if list.count > 200 { list.removeLast(list.count - 200) }
        recent[type] = list
    }

    func recentIds(_ type: String) -> [String] { recent[type] ?? [] }

    // MARK: record metadata

    struct RecordMeta {
        let id: String
        let isDeleted: Bool
        let lastModified: String
        let systemModstamp: String
        var lastModifiedMillis: Int64 { SFTime.parseDateTime(lastModified) ?? 0 }
        /// Changes on every write, like the API's record ETags.
        var etag: String { "\"\(id)-\(systemModstamp.filter { $0.isNumber })\"" }
    }

    func meta(_ obj: SObjectDef, id: String) throws -> RecordMeta? {
        let s = try db.prepare("SELECT \"Id\", \"IsDeleted\", \"LastModifiedDate\", \"SystemModstamp\" FROM \(obj.tableName) WHERE \"Id\" = ?1")
        try s.bind([.text(id)])
        guard try s.step() else { return nil }
        return RecordMeta(id: s.optionalText(0) ?? id, isDeleted: s.int64(1) != 0, lastModified: s.text(2), systemModstamp: s.text(3))
    }

    /// Looks up live records by an external id (or any unique-ish) field.
    func ids(_ obj: SObjectDef, field: FieldDef, value: SQLValue) throws -> [String] {
        let s = try db.prepare("SELECT \"Id\" FROM \(obj.tableName) WHERE \"\(field.name)\" = ?1 AND \"IsDeleted\" = 0 LIMIT 5")
        try s.bind([value])
        var out: [String] = []
        while try s.step() { if let id = s.optionalText(0) { out.append(id) } }
        return out
    }

    /// The type owning an id, from its key prefix.
    func object(forId id: String) -> SObjectDef? { schema.object(prefix: String(id.prefix(3))) }

    // MARK: writes

    /// Validates a request body into column values. `creating` selects insert vs update rules.
    func columnValues(_ obj: SObjectDef, body: JSON, creating: Bool, ignoring: Set<String> = []) throws -> [(FieldDef, SQLValue)] {
        guard let pairs = body.objectValue else {
            throw APIError.jsonParser("Cannot deserialize instance of \(obj.name) from \(body.tokenName) value or request may be missing a required field at [line:1, column:1]")
        }
        var out: [(FieldDef, SQLValue)] = []
        var readOnly: [String] = []
        for (key, value) in pairs {
            if key == "attributes" || ignoring.contains(key.lowercased()) { continue }
            guard let f = obj.field(key) else {
                throw APIError(400, "INVALID_FIELD", "No such column '\(key)' on sobject of type \(obj.name)", fields: [])
            }
            if f.name == "Id" {
                if creating, !value.isNull { throw APIError(400, "INVALID_FIELD", "cannot specify Id in an insert call", fields: ["Id"]) }
                continue
            }
            if (creating && !f.createable) || (!creating && !f.updateable) { readOnly.append(f.name); continue }
            out.append((f, try convert(value, field: f, obj: obj)))
        }
        if !readOnly.isEmpty {
            throw APIError(400, "INVALID_FIELD_FOR_INSERT_UPDATE", "Unable to create/update fields: \(readOnly.joined(separator: ", ")). Please check the security settings of this field and verify that it is read/write for your profile or permission set.", fields: readOnly)
        }
        var missing: [String] = []
        if creating {
            for f in obj.fields where f.requiredOnCreate {
                if let given = out.first(where: { $0.0.name == f.name }) {
                    if case .null = given.1 { missing.append(f.name) }
                } else {
                    missing.append(f.name)
                }
            }
            for f in obj.fields where f.defaultValue != nil && !out.contains(where: { $0.0.name == f.name }) {
                if let d = f.defaultValue { out.append((f, try convert(d, field: f, obj: obj))) }
            }
        } else {
            for (f, v) in out where !f.nillable && f.type != .boolean { if case .null = v { missing.append(f.name) } }
        }
        if !missing.isEmpty {
            throw APIError(400, "REQUIRED_FIELD_MISSING", "Required fields are missing: [\(missing.joined(separator: ", "))]", fields: missing)
        }
        return out
    }

    private func convert(_ v: JSON, field f: FieldDef, obj: SObjectDef) throws -> SQLValue {
        func parseError() -> APIError {
            APIError.jsonParser("Cannot deserialize instance of \(f.type.rawValue) from \(v.tokenName) value \(v.text) or request may be missing a required field")
        }
        if case .null = v { return f.type == .boolean ? .int(0) : .null }
        switch f.type {
        case .string, .textarea, .email, .phone, .url, .picklist:
            let s: String
            switch v {
            case .string(let str): s = str
            case .int(let i): s = String(i)
            case .double(let d): s = formatDouble(d)
            case .bool(let b): s = b ? "true" : "false"
            default: throw parseError()
            }
            if s.count > f.length {
                throw APIError(400, "STRING_TOO_LONG", "\(f.label): data value too large: \(s.prefix(100)) (max length=\(f.length))", fields: [f.name])
            }
            if f.type == .email, !s.isEmpty, !isPlausibleEmail(s) {
                throw APIError(400, "INVALID_EMAIL_ADDRESS", "\(f.label): invalid email address: \(s)", fields: [f.name])
            }
            return s.isEmpty ? .null : .text(s)
        case .boolean:
            switch v {
            case .bool(let b): return .int(b ? 1 : 0)
            case .string(let s) where s.lowercased() == "true" || s.lowercased() == "false": return .int(s.lowercased() == "true" ? 1 : 0)
            default: throw parseError()
            }
        case .int:
            switch v {
            case .int(let i): return .int(i)
            case .double(let d) where d == d.rounded() && abs(d) < 9e15: return .int(Int64(d))
            case .string(let s): if let i = Int64(s) { return .int(i) }; throw parseError()
            default: throw parseError()
            }
        case .double, .currency, .percent:
            switch v {
            case .int(let i): return .real(Double(i))
            case .double(let d): return .real(d)
            case .string(let s): if let d = Double(s), d.isFinite { return .real(d) }; throw parseError()
            default: throw parseError()
            }
        case .date:
            guard case .string(let s) = v else { throw parseError() }
            if let d = Timestamp.parseDate(String(s.prefix(10))), s.count == 10 || SFTime.parseDateTime(s) != nil {
                return .text(Timestamp.formatDate(days: d))
            }
            throw APIError.jsonParser("Cannot deserialize value of type `java.util.Date` from String \"\(s)\": expected format \"yyyy-MM-dd\"")
        case .datetime:
            guard case .string(let s) = v, let ms = SFTime.parseDateTime(s) else {
                throw APIError.jsonParser("Cannot deserialize value of type `java.util.Date` from \(v.tokenName) \(v.text): expected format \"yyyy-MM-dd'T'HH:mm:ss.SSSZ\"")
            }
            return .text(SFTime.format(millis: ms))
        case .reference:
            guard case .string(let s) = v else { throw parseError() }
            guard let id = SFId.to18(s), let target = f.referenceTo.flatMap({ schema.object($0) }), id.hasPrefix(target.keyPrefix) else {
                throw APIError(400, "FIELD_INTEGRITY_EXCEPTION", "\(f.label): id value of incorrect type: \(s)", fields: [f.name])
            }
            guard let m = try meta(target, id: id) else {
                throw APIError(400, "INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", fields: [f.name])
            }
            if m.isDeleted { throw APIError(400, "ENTITY_IS_DELETED", "entity is deleted", fields: [f.name]) }
            return .text(id)
        case .id:
            throw parseError()
        }
    }

    private func isPlausibleEmail(_ s: String) -> Bool {
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !s.contains(" ")
    }

    private func checkUnique(_ obj: SObjectDef, _ values: [(FieldDef, SQLValue)], excluding id: String?) throws {
        for (f, v) in values where f.unique {
            if case .null = v { continue }
            if let other = try ids(obj, field: f, value: v).first(where: { $0 != id }) {
                throw APIError(400, "DUPLICATE_VALUE", "duplicate value found: \(f.name) duplicates value on record with id: \(other)", fields: [f.name])
            }
        }
    }

    /// Inserts a record; `explicitId`/`timestamps` are for `--import` only.
    @discardableResult
    func create(_ obj: SObjectDef, values: [(FieldDef, SQLValue)], explicitId: String? = nil,
                created: String? = nil, modified: String? = nil, track: Bool = true, sameColumnsAs cacheKey: String? = nil) throws -> String {
        try checkUnique(obj, values, excluding: nil)
        var seq = nextSeq[obj.name] ?? 1
        // Only API writes take a clock tick: seeded/imported rows bring their own stamps, and ticking
        // for each of them would push the clock ahead of real time.
        let tick: Int64? = modified == nil ? clock.next() : nil
        let mod = modified ?? SFTime.format(millis: tick ?? 0)
        let sql: String
        if let cacheKey, let cached = insertSQL[cacheKey] {
            sql = cached // bulk loads insert the same columns row after row
        } else {
            let cols = ["seq", "\"Id\"", "\"IsDeleted\"", "\"CreatedDate\"", "\"LastModifiedDate\"", "\"SystemModstamp\""] + values.map { "\"\($0.0.name)\"" }
            let placeholders = (1...cols.count).map { "?\($0)" }.joined(separator: ",")
            sql = "INSERT INTO \(obj.tableName) (\(cols.joined(separator: ","))) VALUES (\(placeholders))"
            if let cacheKey { insertSQL[cacheKey] = sql }
        }
        let s = try db.prepare(sql)
        var attempts = 0
        while true {
            let id = explicitId ?? SFId.make(prefix: obj.keyPrefix, sequence: seq)
            do {
                try s.bind([.int(seq), .text(id), .int(0), .text(created ?? mod), .text(mod), .text(mod)] + values.map { $0.1 })
                try s.run()
                nextSeq[obj.name] = seq + 1
                if track { touch(obj.name, id) }
                try events.recordCreate(obj, id: id, values: values, created: created ?? mod, modified: mod, stampMillis: tick)
                return id
            } catch let e as SQLiteError where e.isConstraint && explicitId == nil && attempts < 10_000 {
                // An imported record already holds this generated id (or seq): take the next one.
                attempts += 1
                seq += 1
            }
        }
    }

    func update(_ obj: SObjectDef, id: String, values: [(FieldDef, SQLValue)]) throws {
        try checkUnique(obj, values, excluding: id)
        // The change event carries the fields whose value changes.
        var changed = values
        if events.wantsDetail, !values.isEmpty {
            let old = try db.prepare("SELECT \(values.map { "\"\($0.0.name)\"" }.joined(separator: ", ")) FROM \(obj.tableName) WHERE \"Id\" = ?1")
            try old.bind([.text(id)])
            if try old.step() {
                changed = values.enumerated().filter { !old.value(Int32($0.offset)).same(as: $0.element.1) }.map(\.element)
            }
            old.reset()
        }
        let millis = clock.next()
        let stamp = SFTime.format(millis: millis)
        var sets = ["\"LastModifiedDate\" = ?1", "\"SystemModstamp\" = ?1"]
        for (i, (f, _)) in values.enumerated() { sets.append("\"\(f.name)\" = ?\(i + 3)") }
        let s = try db.prepare("UPDATE \(obj.tableName) SET \(sets.joined(separator: ", ")) WHERE \"Id\" = ?2 AND \"IsDeleted\" = 0")
        try s.bind([.text(stamp), .text(id)] + values.map { $0.1 })
        try s.run()
        touch(obj.name, id)
        try events.recordUpdate(obj, id: id, changed: changed, modified: stamp, stampMillis: millis)
    }

    /// Soft delete: the row stays for queryAll and `deleted`, with IsDeleted = true. Children on
    /// cascading lookups are deleted too; other lookups to the record are cleared.
    func delete(_ obj: SObjectDef, id: String, depth: Int = 0) throws {
        let millis = clock.next()
        let stamp = SFTime.format(millis: millis)
        let s = try db.prepare("UPDATE \(obj.tableName) SET \"IsDeleted\" = 1, \"LastModifiedDate\" = ?1, \"SystemModstamp\" = ?1 WHERE \"Id\" = ?2")
        try s.bind([.text(stamp), .text(id)])
        try s.run()
        recent[obj.name]?.removeAll { $0 == id }
        try events.recordDelete(obj, id: id, stampMillis: millis)
        guard depth < 8 else { return }
        for child in schema.objects {
            for f in child.fields where f.type == .reference && f.referenceTo?.lowercased() == obj.name.lowercased() {
                let find = try db.prepare("SELECT \"Id\" FROM \(child.tableName) WHERE \"\(f.name)\" = ?1 AND \"IsDeleted\" = 0", cached: false)
                try find.bind([.text(id)])
                var ids: [String] = []
                while try find.step() { if let c = find.optionalText(0) { ids.append(c) } }
                for c in ids {
                    if f.cascadeDelete {
                        try delete(child, id: c, depth: depth + 1)
                    } else {
                        let clear = try db.prepare("UPDATE \(child.tableName) SET \"\(f.name)\" = NULL, \"LastModifiedDate\" = ?1, \"SystemModstamp\" = ?1 WHERE \"Id\" = ?2")
                        let clearMillis = clock.next()
                        let clearStamp = SFTime.format(millis: clearMillis)
                        try clear.bind([.text(clearStamp), .text(c)])
                        try clear.run()
                        try events.recordUpdate(child, id: c, changed: [(f, .null)], modified: clearStamp, stampMillis: clearMillis)
                    }
                }
            }
        }
    }

    /// Checks that a live record exists; the API's 404 shapes otherwise.
    func requireLive(_ obj: SObjectDef, id: String) throws -> RecordMeta {
        guard let m = try meta(obj, id: id) else { throw APIError.notFound }
        if m.isDeleted { throw APIError.entityIsDeleted }
        return m
    }

    // MARK: queries

    /// Runs a compiled query and collects every record's JSON text (query results are snapshots).
    func run(_ q: CompiledQuery) throws -> QueryResult {
        let s = try db.prepare(q.sql)
        try s.bind(q.binds)
        if q.countOnly {
            let n = try s.step() ? Int(s.int64(0)) : 0
            s.reset()
            return QueryResult(countOnly: n)
        }
        var result = QueryResult()
        while try s.step() {
            result.starts.append(result.data.count)
            result.data.append(contentsOf: s.textBytes(0))
            result.data.append(UInt8(ascii: ","))
        }
        s.reset()
        return result
    }

    func count(_ obj: SObjectDef) throws -> Int {
        let s = try db.prepare("SELECT count(*) FROM \(obj.tableName)")
        return try s.step() ? Int(s.int64(0)) : 0
    }

    /// Ids of records changed / deleted in [start, end), for `updated` and `deleted`.
    func changes(_ obj: SObjectDef, deleted: Bool, start: String, end: String) throws -> [(String, String)] {
        let s = try db.prepare("SELECT \"Id\", \"SystemModstamp\" FROM \(obj.tableName) WHERE \"IsDeleted\" = ?1 AND \"SystemModstamp\" >= ?2 AND \"SystemModstamp\" < ?3 ORDER BY \"SystemModstamp\" LIMIT 600000")
        try s.bind([.int(deleted ? 1 : 0), .text(start), .text(end)])
        var out: [(String, String)] = []
        while try s.step() { out.append((s.text(0), s.text(1))) }
        return out
    }
}

/// Records of one query, serialized: `data` holds each record's JSON followed by a comma.
struct QueryResult {
    var data: [UInt8] = []
    var starts: [Int] = []
    var countOnly: Int? = nil

    init() {}
    init(countOnly: Int) { self.countOnly = countOnly }

    var count: Int { countOnly ?? starts.count }

    /// The records [from, from+n) as the inside of a JSON array.
    func slice(from: Int, count n: Int) -> ArraySlice<UInt8> {
        guard countOnly == nil, from < starts.count, n > 0 else { return [] }
        let end = min(from + n, starts.count)
        let hi = end < starts.count ? starts[end] - 1 : data.count - 1
        return data[starts[from]..<hi]
    }
}
