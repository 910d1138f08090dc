import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

/// Writes the entries of one upsert call with statements prepared once for the batch
/// (docs/smartstore.md#upsert-retrieve-remove). Runs inside the caller's transaction on the writer connection.
package final class EntryWriter {
    private let soup: SoupInfo
    private let columns: [IndexColumn]
    /// Index paths split once per batch, not once per entry.
    private let columnPaths: [[String]]
    private let externalPathComponents: [String]
    private let externalIdPath: String?
    /// The index type external id values are bound with.
    private let externalIdType: IndexType
    private let insert: Statement
    private let update: Statement
    private let exists: Statement
    private let lookup: Statement?
    private let textDelete: Statement?
    private let textInsert: Statement?
    private let db: Connection
    /// Sync down with LEAVE_IF_CHANGED: entries whose stored copy is locally dirty are skipped.
    private let leaveIfChanged: Bool
    package private(set) var nextId: Int64
    /// Host writes (the public upsert): the store's companions see each entry that replaces a
    /// stored one before it is stored (a read-modify-write may have overlapped their work).
    package var hostWrite: [any StoreCompanion] = []
    /// What this writer inserted and updated (merged into the transaction's ChangeRecorder).
    var change = StoreChange.SoupChange()
    /// The code of an entry that breaks the JSON rule: ARGUMENT for the host's own, SERVER for
    /// a server's records.
    package var ruleErrorCode = ErrorCode.argument

    package init(db: Connection, soup: SoupInfo, externalIdPath: String?, nextId cached: Int64?, leaveIfChanged: Bool = false) throws {
        self.db = db
        self.leaveIfChanged = leaveIfChanged
        self.soup = soup
        self.externalIdPath = externalIdPath
        columns = soup.columnIndexes
        columnPaths = columns.map { SoupPath.components($0.path) }
        externalPathComponents = externalIdPath.map(SoupPath.components) ?? []
        let table = soup.table
        let names = columns.map(\.columnName)
        let insertColumns = (["id", "soup", "created", "lastModified"] + names).joined(separator: ", ")
        let marks = Array(repeating: "?", count: 4 + names.count).joined(separator: ", ")
        insert = try db.cached("INSERT INTO \(table) (\(insertColumns)) VALUES (\(marks))")
        let sets = (["soup = ?", "lastModified = ?"] + names.map { "\($0) = ?" }).joined(separator: ", ")
        update = try db.cached("UPDATE \(table) SET \(sets) WHERE id = ?")
        exists = try db.cached("SELECT 1 FROM \(table) WHERE id = ?")
        if let path = externalIdPath {
            guard let index = soup.index(for: path) else {
                throw StoreError.argument("External id path '\(path)' is not indexed on soup '\(soup.name)'; index it or use _soupEntryId")
            }
            lookup = try db.cached("SELECT id, \(LocalFlags.dirtyCondition) FROM \(table) WHERE \(index.expression()) = ? LIMIT 2")
            externalIdType = index.type
        } else {
            lookup = nil
            externalIdType = .string
        }
        let text = soup.fullTextIndexes.map(\.columnName)
        if text.isEmpty {
            textDelete = nil
            textInsert = nil
        } else {
            textDelete = try db.cached("DELETE FROM \(soup.ftsTable) WHERE rowid = ?")
            let marks = Array(repeating: "?", count: text.count + 1).joined(separator: ", ")
            textInsert = try db.cached("INSERT INTO \(soup.ftsTable) (rowid, \(text.joined(separator: ", "))) VALUES (\(marks))")
        }
        if let cached {
            nextId = cached
        } else {
            // AUTOINCREMENT semantics: never reuse an id, even of a deleted last entry.
            let sequence = try db.scalarInt("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table)]) ?? 0
            let maxId = try db.scalarInt("SELECT max(id) FROM \(table)") ?? 0
            nextId = max(sequence, maxId) + 1
        }
        firstId = nextId
    }

    /// `nextId` when this writer started: ids from there on were given out by it.
    private let firstId: Int64

    /// Records the highest id given out in `sqlite_sequence`, where SQLite keeps an AUTOINCREMENT
    /// table's: soup tables are made without AUTOINCREMENT, which updates that row once per
    /// inserted row (8% of an upsert), so the engine keeps it itself, once per call. Stores whose
    /// tables have AUTOINCREMENT already hold the same value there. Called by the owner of the
    /// write transaction after the last entry.
    package func recordSequence() throws {
        guard nextId > firstId else { return }
        let update = try db.cached("UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = ?2")
        try update.bind([.int(nextId - 1), .text(soup.table)])
        try update.run()
        guard db.changes == 0 else { return }
        let insert = try db.cached("INSERT INTO sqlite_sequence (name, seq) VALUES (?2, ?1)")
        try insert.bind([.int(nextId - 1), .text(soup.table)])
        try insert.run()
    }

    /// Stores one entry (mutating it: _soupEntryId, _soupLastModifiedDate) and appends its text
    /// to `out` when given. Returns false when the entry was skipped (leaveIfChanged and the
    /// stored copy is dirty).
    @discardableResult
    package func upsert(_ entry: JSON, index: Int, now: Int64, into out: inout TextBuffer?) throws -> Bool {
        let (existing, dirty) = try existingId(entry, index: index)
        if dirty && leaveIfChanged { return false }
        let id = existing ?? nextId
        if let existing, !hostWrite.isEmpty {
            let stored = StoredEntry(db: db, table: soup.table, id: existing)
            for companion in hostWrite { try companion.hostWillReplace(entry, existing: existing, soup: soup, stored: stored) }
        }
        entry.set(SoupPath.entryId, owned: JSONMake.int(id))
        entry.set(SoupPath.lastModified, owned: JSONMake.int(now))
        guard let owned = entry.dumpCString() else {
            throw StoreError.argument("Entry \(index) cannot be serialized (NaN or invalid value)")
        }
        defer { free(owned) }
        let length = strlen(owned)
        // Every tree entry passes here (host upserts, sync down records, sync states; records
        // stored from scanned text are bounded by the scanner's depth): none deeper than
        // SQLite's JSON functions read is ever stored.
        if JSONRules.firstTooDeep(UnsafeRawPointer(owned).assumingMemoryBound(to: UInt8.self), count: length,
                                  limit: JSONRules.maxDepth) != nil {
            throw StoreError(ruleErrorCode, "\(describe(entry, index: index, existing: existing)) is nested deeper than \(JSONRules.maxDepth) levels; \(JSONRules.depthRule). Nothing was stored")
        }
        let values = zip(columns, columnPaths).map { SoupPath.indexValue(entry, $1, for: $0.type) }
        try owned.withMemoryRebound(to: UInt8.self, capacity: length) { text in
            try store(id: id, replacing: existing != nil, now: now, text: text, length: length) { statement, position, column in
                try statement.bind(values[column], at: position)
            }
        }
        out?.append(cString: owned)
        return true
    }

    /// How messages name entry `index` of a call: by its external id (a sync's record Id), else
    /// by the _soupEntryId of the entry it replaces.
    private func describe(_ entry: JSON, index: Int, existing: Int64?) -> String {
        guard let path = externalIdPath else {
            return existing.map { "Entry \(index) (\(SoupPath.entryId) \($0))" } ?? "Entry \(index)"
        }
        switch SoupPath.indexValue(entry, externalPathComponents, for: .string) {
        case .text(let s): return "Entry \(index) (\(path) '\(s.prefix(100))')"
        case .int(let v): return "Entry \(index) (\(path) \(v))"
        default: return "Entry \(index)"
        }
    }

    /// The scan plan `upsert(scanned:)` reads records of `soup` with: the index columns' paths,
    /// then the external id path, then `extraKeys` (top-level keys the caller reads itself, from
    /// slot `firstExtraSlot` on). nil when the plan is too wide for the scanner.
    package static func scanPlan(soup: SoupInfo, externalIdPath: String, extraKeys: [String], reservedKeys: [String]) -> ScanPlan? {
        ScanPlan(paths: soup.columnIndexes.map { SoupPath.components($0.path) } + [SoupPath.components(externalIdPath)]
                    + extraKeys.map { [$0] },
                 reservedKeys: reservedKeys, idSlot: soup.columnIndexes.count)
    }

    package var firstExtraSlot: Int { columns.count + 1 }

    /// Whether `page` was scanned with this writer's plan (the soup's indexes may have changed
    /// since the page was fetched).
    package func canStore(_ page: ScannedPage) -> Bool {
        externalIdPath != nil && page.plan.paths.count >= firstExtraSlot
            && Array(page.plan.paths[..<columns.count]) == columnPaths && page.plan.paths[columns.count] == externalPathComponents
    }

    /// Stores record `k` of a page scanned with `scanPlan` as the text the server sent plus
    /// `added` (none of its keys are in the record: the scanner sends records holding reserved
    /// keys to the tree path) and the store's own keys. No tree is built. Index columns on an
    /// added key or a store key get that value, as if the members were in the record.
    /// Returns false when the record was skipped (leaveIfChanged and the stored copy is dirty).
    @discardableResult
    package func upsert(scanned page: ScannedPage, record k: Int, added: AddedMembers, now: Int64) throws -> Bool {
        let record = page.records[k]
        let base = k * page.plan.paths.count
        if addedColumns == nil || addedColumnsFor !== added {
            addedColumns = columnPaths.map { path in
                guard path.count == 1 else { return .none }
                if path[0] == SoupPath.entryId { return .entryId }
                if path[0] == SoupPath.lastModified { return .lastModified }
                return added.values.first { $0.key == path[0] }.map { .value($0.value) } ?? .none
            }
            addedColumnsFor = added
        }
        let overrides = addedColumns ?? []
        return try page.bytes.withUnsafeBufferPointer { all -> Bool in
            guard let bytes = all.baseAddress, record.end - record.start >= 2 else {
                throw StoreError(.internal, "Record \(k) of a scanned page has no object text")
            }
            let (existing, dirty) = try existingId(scanned: page.values[base + columns.count], page, bytes, index: k)
            if dirty && leaveIfChanged { return false }
            let id = existing ?? nextId
            let text = withStoreKeys(bytes, record, added: added.text, id: id, now: now)
            try text.withUnsafeBufferPointer { t in
                guard let p = t.baseAddress else { return }
                try store(id: id, replacing: existing != nil, now: now, text: p, length: t.count) { statement, position, column in
                    let value: ScannedValue
                    switch overrides[column] {
                    case .none: value = page.values[base + column]
                    case .value(let v): value = v
                    case .entryId: value = .int(id)
                    case .lastModified: value = .int(now)
                    }
                    try bind(value, page, bytes, type: columns[column].type, to: statement, at: position)
                }
            }
            return true
        }
    }

    /// The scan plan a host upsert's entries are read with: the index columns' paths, then the
    /// external id path when there is one. An entry holding a key of `reservedKeys` (the store's
    /// own, and those a companion must see in a tree) is parsed instead.
    package static func hostScanPlan(soup: SoupInfo, externalIdPath: String?, reservedKeys: [String]) -> ScanPlan? {
        ScanPlan(paths: soup.columnIndexes.map { SoupPath.components($0.path) } + (externalIdPath.map { [SoupPath.components($0)] } ?? []),
                 reservedKeys: [SoupPath.entryId, SoupPath.lastModified] + reservedKeys,
                 idSlot: externalIdPath == nil ? nil : soup.columnIndexes.count)
    }

    /// Stores record `k` of a host upsert scanned with `hostScanPlan` (canonical, no reserved
    /// key) as a new entry: its text plus the store's keys, byte for byte what the tree path
    /// writes, appended to `out`. Returns false, storing nothing, when the entry replaces a
    /// stored one (matched by its external id): the caller takes the tree path, where the
    /// store's companions see the replacement.
    package func insertScanned(_ page: ScannedPage, record k: Int, now: Int64, into out: inout TextBuffer?) throws -> Bool {
        let record = page.records[k]
        let base = k * page.plan.paths.count
        return try page.bytes.withUnsafeBufferPointer { all -> Bool in
            guard let bytes = all.baseAddress, record.end - record.start >= 2 else {
                throw StoreError(.internal, "Entry \(k) of a scanned upsert has no object text")
            }
            if externalIdPath != nil {
                let (existing, _) = try existingId(scanned: page.values[base + columns.count], page, bytes, index: k)
                if existing != nil { return false }
            }
            let id = nextId
            let text = withStoreKeys(bytes, record, added: [], id: id, now: now)
            try text.withUnsafeBufferPointer { t in
                guard let p = t.baseAddress else { return }
                try store(id: id, replacing: false, now: now, text: p, length: t.count) { statement, position, column in
                    switch columnPaths[column] {
                    case [SoupPath.entryId]: try statement.bind(.int(id), at: position)
                    case [SoupPath.lastModified]: try statement.bind(.int(now), at: position)
                    default: try bind(page.values[base + column], page, bytes, type: columns[column].type, to: statement, at: position)
                    }
                }
                out?.append(UnsafeBufferPointer(start: p, count: t.count))
            }
            return true
        }
    }

    /// A scanned record's object text without its closing brace, a comma unless it is empty,
    /// `added` members, then the store's keys: what both scanned paths store.
    private func withStoreKeys(_ bytes: UnsafePointer<UInt8>, _ record: ScannedRecord, added: [UInt8], id: Int64, now: Int64) -> [UInt8] {
        let start = Int(record.start), end = Int(record.end) - 1
        var last = end - 1
        while last > start, bytes[last] == 0x20 || bytes[last] == 0x0A || bytes[last] == 0x0D || bytes[last] == 0x09 { last -= 1 }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: bytes + start, count: end - start))
        if last > start { scratch.append(UInt8(ascii: ",")) }
        scratch.append(contentsOf: added)
        scratch.append(contentsOf: EntryWriter.entryIdMember)
        scratch.append(contentsOf: String(id).utf8)
        scratch.append(contentsOf: EntryWriter.lastModifiedMember)
        scratch.append(contentsOf: String(now).utf8)
        scratch.append(UInt8(ascii: "}"))
        return scratch
    }

    /// Where an index column's value comes from when it is not in the scanned record.
    private enum AddedColumn { case none, value(ScannedValue), entryId, lastModified }
    private var addedColumns: [AddedColumn]?
    private var addedColumnsFor: AddedMembers?

    private static let entryIdMember = Array("\"\(SoupPath.entryId)\":".utf8)
    private static let lastModifiedMember = Array(",\"\(SoupPath.lastModified)\":".utf8)
    /// Reused for each scanned record's text.
    private var scratch: [UInt8] = []

    /// Binds a scanned value as `SoupPath.sqlValue` would bind the same JSON value.
    private func bind(_ value: ScannedValue, _ page: ScannedPage, _ bytes: UnsafePointer<UInt8>, type: IndexType,
                      to statement: Statement, at position: Int32) throws {
        switch value {
        case .null: try statement.bind(.null, at: position)
        case .int(let v): try statement.bind(.int(v), at: position)
        case .real(let v): try statement.bind(.real(v), at: position)
        case .bool(let b):
            try statement.bind(type == .string || type == .fullText ? .text(b ? "true" : "false") : .int(b ? 1 : 0), at: position)
        case .text(let start, let count):
            try statement.bindTextNoCopy(bytes + Int(start), length: Int(count), at: position)
        case .decoded(let k):
            try statement.bind(.text(page.strings[Int(k)]), at: position)
        }
    }

    /// Inserts or updates the row of entry `id` (and its full-text row); `bindColumn` binds
    /// index column `column` at parameter `position`.
    private func store(id: Int64, replacing: Bool, now: Int64, text: UnsafePointer<UInt8>, length: Int,
                       bindColumn: (Statement, Int32, Int) throws -> Void) throws {
        if replacing { change.updated.add(id) } else { change.inserted.add(id) }
        if replacing {
            update.reset()
            try update.bindTextNoCopy(text, length: length, at: 1)
            try update.bind(.int(now), at: 2)
            for column in columns.indices { try bindColumn(update, Int32(3 + column), column) }
            try update.bind(.int(id), at: Int32(3 + columns.count))
            try update.run()
            if let textDelete {
                textDelete.reset()
                try textDelete.bind([.int(id)])
                try textDelete.run()
            }
        } else {
            insert.reset()
            try insert.bind(.int(id), at: 1)
            try insert.bindTextNoCopy(text, length: length, at: 2)
            try insert.bind(.int(now), at: 3)
            try insert.bind(.int(now), at: 4)
            for column in columns.indices { try bindColumn(insert, Int32(5 + column), column) }
            try insert.run()
            nextId = id + 1
        }
        if let textInsert {
            textInsert.reset()
            try textInsert.bind(.int(id), at: 1)
            var position: Int32 = 2
            for column in columns.indices where columns[column].type == .fullText {
                try bindColumn(textInsert, position, column)
                position += 1
            }
            try textInsert.run()
        }
    }

    /// The id of the stored entry this one replaces (nil to create), and whether it is dirty.
    private func existingId(_ entry: JSON, index: Int) throws -> (Int64?, Bool) {
        guard let lookup, let path = externalIdPath else {
            guard let value = entry[SoupPath.entryId], !value.isNull else { return (nil, false) }
            guard let id = value.int64 else {
                throw StoreError.argument("Entry \(index) has a _soupEntryId that is not an integer")
            }
            exists.reset()
            try exists.bind([.int(id)])
            let found = try exists.step()
            exists.reset()
            guard found else {
                throw StoreError.notFound("Entry \(index) has _soupEntryId \(id), which does not exist in soup '\(soup.name)'; remove _soupEntryId to create it")
            }
            return (id, false)
        }
        let key = SoupPath.indexValue(entry, externalPathComponents, for: externalIdType)
        if case .null = key {
            throw StoreError.argument("Entry \(index) has no value at external id path '\(path)'; it cannot be matched")
        }
        lookup.reset()
        try lookup.bind([key])
        return try matches(lookup, path: path, index: index)
    }

    /// `existingId` for a scanned record whose external id value is `key`.
    private func existingId(scanned key: ScannedValue, _ page: ScannedPage, _ bytes: UnsafePointer<UInt8>,
                            index: Int) throws -> (Int64?, Bool) {
        guard let lookup, let path = externalIdPath else {
            throw StoreError(.internal, "A scanned record was stored without an external id path")
        }
        if case .null = key {
            throw StoreError.argument("Entry \(index) has no value at external id path '\(path)'; it cannot be matched")
        }
        lookup.reset()
        try bind(key, page, bytes, type: externalIdType, to: lookup, at: 1)
        return try matches(lookup, path: path, index: index)
    }

    private func matches(_ lookup: Statement, path: String, index: Int) throws -> (Int64?, Bool) {
        var ids: [(Int64, Bool)] = []
        while try lookup.step() { ids.append((lookup.int64(0), lookup.int64(1) != 0)) }
        lookup.reset()
        switch ids.count {
        case 0: return (nil, false)
        case 1: return ids[0]
        default:
            throw StoreError(.conflict, "Entry \(index): several entries of soup '\(soup.name)' have the same value at '\(path)'; the external id must be unique")
        }
    }
}

/// Members added to each record stored from its text (`EntryWriter.upsert(scanned:)`), as JSON
/// text and as values, for index columns on them. Values are booleans and integers (anything
/// else is written as null).
package final class AddedMembers {
    package let values: [(key: String, value: ScannedValue)]
    /// `"k1":v1,"k2":v2,` (no braces; empty when there are none): the store's keys follow.
    package let text: [UInt8]

    package init(_ values: [(key: String, value: ScannedValue)]) {
        self.values = values
        var json = ""
        for (key, value) in values {
            switch value {
            case .bool(let b): json += "\"\(key)\":\(b),"
            case .int(let v): json += "\"\(key)\":\(v),"
            default: json += "\"\(key)\":null,"
            }
        }
        text = Array(json.utf8)
    }
}
