import CJansson
import Glibc

/// Writes the entries of one upsert call with statements prepared once for the batch
/// (semantics §3). Runs inside the caller's transaction on the writer connection.
final class EntryWriter {
    private let soup: SoupInfo
    private let columns: [IndexColumn]
    /// Index paths split once per batch, not once per entry.
    private let columnPaths: [[String]]
    private let externalPathComponents: [String]
    private let externalIdPath: String?
    private let insert: Statement
    private let update: Statement
    private let exists: Statement
    private let lookup: Statement?
    private let textDelete: Statement?
    private let textInsert: Statement?
    private let db: Connection
    /// Sync down with LEAVE_IF_CHANGED: entries whose stored copy is locally dirty are skipped.
    private let leaveIfChanged: Bool
    private(set) var nextId: Int64

    init(db: Connection, soup: SoupInfo, externalIdPath: String?, nextId cached: Int64?, leaveIfChanged: Bool = false) throws {
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
        } else {
            lookup = nil
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
    }

    /// Stores one entry (mutating it: _soupEntryId, _soupLastModifiedDate) and appends its text
    /// to `out` when given. Returns false when the entry was skipped (leaveIfChanged and the
    /// stored copy is dirty).
    @discardableResult
    func upsert(_ entry: JSON, index: Int, now: Int64, into out: inout TextBuffer?,
                source: StoredText? = nil) throws -> Bool {
        let (existing, dirty) = try existingId(entry, index: index)
        if dirty && leaveIfChanged { return false }
        let id = existing ?? nextId
        entry.set(SoupPath.entryId, owned: JSONMake.int(id))
        entry.set(SoupPath.lastModified, owned: JSONMake.int(now))
        let owned: UnsafeMutablePointer<CChar>
        if let source, let built = source.text(entryId: id, lastModified: now) {
            owned = built
        } else {
            guard let dumped = entry.dumpCString() else {
                throw StoreError.argument("Entry \(index) cannot be serialized (NaN or invalid value)")
            }
            owned = dumped
        }
        let text = UnsafePointer(owned)
        defer { free(owned) }
        let length = strlen(text)
        let values = zip(columns, columnPaths).map { SoupPath.indexValue(entry, $1, for: $0.type) }
        if existing != nil {
            update.reset()
            try update.bindText(text, length: length, at: 1)
            try update.bind(.int(now), at: 2)
            try update.bind(values, from: 3)
            try update.bind(.int(id), at: Int32(3 + values.count))
            try update.run()
            if let textDelete {
                textDelete.reset()
                try textDelete.bind([.int(id)])
                try textDelete.run()
            }
        } else {
            insert.reset()
            try insert.bind(.int(id), at: 1)
            try insert.bindText(text, length: length, at: 2)
            try insert.bind(.int(now), at: 3)
            try insert.bind(.int(now), at: 4)
            try insert.bind(values, from: 5)
            try insert.run()
            nextId = id + 1
        }
        if let textInsert {
            textInsert.reset()
            try textInsert.bind(.int(id), at: 1)
            var position: Int32 = 2
            for (column, value) in zip(columns, values) where column.type == .fullText {
                try textInsert.bind(value, at: position)
                position += 1
            }
            try textInsert.run()
        }
        out?.append(cString: text)
        return true
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
        let index0 = soup.index(for: path)
        let key = SoupPath.indexValue(entry, externalPathComponents, for: index0?.type ?? .string)
        if case .null = key {
            throw StoreError.argument("Entry \(index) has no value at external id path '\(path)'; it cannot be matched")
        }
        lookup.reset()
        try lookup.bind([key])
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

/// An entry's text taken from the text it arrived in (a record of a server page) plus members
/// the store adds, so the entry is not serialized again. The added members must not already be
/// in the record (the caller checks), or the text would hold duplicate keys.
struct StoredText {
    let bytes: [UInt8]
    let range: Range<Int>
    /// Members to add, as JSON text without braces: `"__local__":false,...`.
    let members: String

    /// A malloc'd NUL-terminated copy with `members`, `_soupEntryId` and `_soupLastModifiedDate`
    /// added before the closing brace; nil when the range is not an object.
    func text(entryId: Int64, lastModified: Int64) -> UnsafeMutablePointer<CChar>? {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count, range.count >= 2,
              bytes[range.lowerBound] == UInt8(ascii: "{"), bytes[range.upperBound - 1] == UInt8(ascii: "}") else { return nil }
        let body = bytes[(range.lowerBound + 1)..<(range.upperBound - 1)]
        let empty = body.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let tail = Array(((empty ? "" : ",") + members + ",\"\(SoupPath.entryId)\":\(entryId),\"\(SoupPath.lastModified)\":\(lastModified)}").utf8)
        let total = range.count - 1 + tail.count
        guard let p = malloc(total + 1)?.assumingMemoryBound(to: UInt8.self) else { return nil }
        bytes.withUnsafeBufferPointer { all in
            if let base = all.baseAddress { memcpy(p, base + range.lowerBound, range.count - 1) }
        }
        tail.withUnsafeBufferPointer { t in
            if let base = t.baseAddress { memcpy(p + range.count - 1, base, tail.count) }
        }
        p[total] = 0
        return UnsafeMutableRawPointer(p).assumingMemoryBound(to: CChar.self)
    }
}
