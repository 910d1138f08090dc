/// An indexed path of a soup and where its values live.
package struct IndexColumn {
    package let spec: IndexSpec
    /// Unique per table; names the column (TABLE_N_<slot>) and its SQLite index.
    package let slot: Int
    package let table: String

    package var path: String { spec.path }
    package var type: IndexType { spec.type }
    package var columnName: String { "\(table)_\(slot)" }
    package var indexName: String { "\(table)_\(slot)_idx" }
    /// Whether the value is copied into a column (json1 indexes read the JSON instead).
    package var hasColumn: Bool { type != .json1 }

    /// The SQL expression reading this path, optionally through a table alias.
    package func expression(qualifier: String? = nil) -> String {
        if hasColumn { return qualifier.map { "\($0).\(columnName)" } ?? columnName }
        return SoupPath.jsonExtract(path, soupColumn: qualifier.map { "\($0).soup" } ?? "soup", guarded: false)
    }
}

/// Everything the store knows about one soup.
package struct SoupInfo {
    package let name: String
    package let table: String
    package let indexes: [IndexColumn]
    /// SQL of recent queries on this soup. A catalog change makes a new SoupInfo, and with it
    /// an empty cache, so a plan never outlives the indexes it was made for.
    package let plans = RecentCache<PlanCache.Shape, PlanCache.Text>()
    /// Recent lookups' parsed specs and plans by template; dropped with the SoupInfo as `plans`.
    package let lookups = RecentCache<[UInt8], CachedLookup>()

    package var specs: [IndexSpec] { indexes.map(\.spec) }
    package var columnIndexes: [IndexColumn] { indexes.filter(\.hasColumn) }
    package var fullTextIndexes: [IndexColumn] { indexes.filter { $0.type == .fullText } }
    package var ftsTable: String { "\(table)_fts" }

    package func index(for path: String) -> IndexColumn? { indexes.first { $0.path == path } }

    /// SQL reading `path` from this soup's table: system columns, index columns, or the JSON.
    package func expression(for path: String, qualifier: String? = nil) -> String {
        let q = qualifier.map { "\($0)." } ?? ""
        switch path {
        case SoupPath.entryId: return "\(q)id"
        case SoupPath.lastModified: return "\(q)lastModified"
        case SoupPath.created: return "\(q)created"
        case SoupPath.soupItself: return "\(q)soup"
        default:
            if let index = index(for: path) { return index.expression(qualifier: qualifier) }
            return SoupPath.jsonExtract(path, soupColumn: "\(q)soup")
        }
    }
}

/// Persists soup definitions (tables soup_attrs and soup_index_map) and creates soup tables.
/// Every method runs on the writer connection inside the caller's transaction.
package enum SoupCatalog {
    package static let soupColumnType = "JSON_TEXT"

    package static func createMetadataTables(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS soup_attrs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                soupName TEXT NOT NULL UNIQUE);
            CREATE TABLE IF NOT EXISTS soup_index_map (
                soupName TEXT NOT NULL,
                position INTEGER NOT NULL,
                path TEXT NOT NULL,
                type TEXT NOT NULL,
                slot INTEGER NOT NULL,
                PRIMARY KEY (soupName, path));
            """)
    }

    package static func loadAll(_ db: Connection) throws -> [String: SoupInfo] {
        var soups: [String: SoupInfo] = [:]
        let attrs = try db.prepare("SELECT id, soupName FROM soup_attrs")
        var tables: [(String, String)] = []
        while try attrs.step() { tables.append((attrs.text(1), "TABLE_\(attrs.int64(0))")) }
        let map = try db.prepare("SELECT path, type, slot FROM soup_index_map WHERE soupName = ? ORDER BY position")
        for (name, table) in tables {
            map.reset()
            try map.bind([.text(name)])
            var indexes: [IndexColumn] = []
            while try map.step() {
                guard let type = IndexType(rawValue: map.text(1)) else {
                    throw StoreError(.storage, "Soup '\(name)' has an unknown index type '\(map.text(1))' in its metadata")
                }
                indexes.append(IndexColumn(spec: IndexSpec(path: map.text(0), type: type), slot: Int(map.int64(2)), table: table))
            }
            soups[name] = SoupInfo(name: name, table: table, indexes: indexes)
        }
        return soups
    }

    package static func create(_ db: Connection, name: String, specs: [IndexSpec]) throws -> SoupInfo {
        let insert = try db.prepare("INSERT INTO soup_attrs (soupName) VALUES (?)")
        try insert.bind([.text(name)])
        try insert.run()
        let table = "TABLE_\(db.lastInsertRowId)"
        let indexes = specs.enumerated().map { IndexColumn(spec: $1, slot: $0, table: table) }
        let info = SoupInfo(name: name, table: table, indexes: indexes)
        // No AUTOINCREMENT: the entry writer keeps the table's sqlite_sequence row once per
        // call instead of SQLite once per row (EntryWriter.recordSequence).
        var columns = "id INTEGER PRIMARY KEY, soup \(soupColumnType) NOT NULL, created INTEGER NOT NULL, lastModified INTEGER NOT NULL"
        for index in info.columnIndexes { columns += ", \(index.columnName) \(index.type.columnType)" }
        try db.execute("CREATE TABLE \(table) (\(columns))")
        for index in indexes where index.type != .fullText { try createIndex(db, index) }
        try createFullText(db, info)
        try saveIndexMap(db, info)
        return info
    }

    /// The column of an entry date (`_soupCreatedDate`, `_soupLastModifiedDate`), else nil.
    package static func dateColumn(_ path: String) -> String? {
        switch path {
        case SoupPath.created: return "created"
        case SoupPath.lastModified: return "lastModified"
        default: return nil
        }
    }

    /// The index of date column `column` of `table`, as SmartStore names it. Made when a query
    /// first needs it (SmartStore.indexDates), not with the table.
    package static func dateIndexName(_ table: String, _ column: String) -> String { "\(table)_\(column)_idx" }

    package static func createDateIndex(_ db: Connection, table: String, column: String) throws {
        try db.execute("CREATE INDEX IF NOT EXISTS \(dateIndexName(table, column)) ON \(table)(\(column))")
    }

    package static func createIndex(_ db: Connection, _ index: IndexColumn) throws {
        try db.execute("CREATE INDEX \(index.indexName) ON \(index.table)(\(index.expression()))")
    }

    package static func createFullText(_ db: Connection, _ info: SoupInfo) throws {
        let columns = info.fullTextIndexes.map(\.columnName)
        guard !columns.isEmpty else { return }
        try db.execute("CREATE VIRTUAL TABLE \(info.ftsTable) USING fts5(\(columns.joined(separator: ", ")))")
    }

    package static func saveIndexMap(_ db: Connection, _ info: SoupInfo) throws {
        let delete = try db.prepare("DELETE FROM soup_index_map WHERE soupName = ?")
        try delete.bind([.text(info.name)])
        try delete.run()
        let insert = try db.prepare("INSERT INTO soup_index_map (soupName, position, path, type, slot) VALUES (?, ?, ?, ?, ?)")
        for (position, index) in info.indexes.enumerated() {
            insert.reset()
            try insert.bind([.text(info.name), .int(Int64(position)), .text(index.path), .text(index.type.rawValue), .int(Int64(index.slot))])
            try insert.run()
        }
    }

    package static func drop(_ db: Connection, _ info: SoupInfo) throws {
        try db.execute("DROP TABLE IF EXISTS \(info.ftsTable)")
        try db.execute("DROP TABLE IF EXISTS \(info.table)")
        for sql in ["DELETE FROM soup_index_map WHERE soupName = ?", "DELETE FROM soup_attrs WHERE soupName = ?"] {
            let statement = try db.prepare(sql)
            try statement.bind([.text(info.name)])
            try statement.run()
        }
        let sequence = try db.prepare("DELETE FROM sqlite_sequence WHERE name = ?")
        try sequence.bind([.text(info.table)])
        try sequence.run()
    }

    /// Changes a soup's indexes in place: kept paths keep their column and values, dropped
    /// ones lose column and index, new ones get an empty column. The caller re-indexes.
    /// Returns the new info and the indexes whose values must be computed.
    package static func alter(_ db: Connection, _ old: SoupInfo, specs: [IndexSpec]) throws -> (SoupInfo, [IndexColumn]) {
        var nextSlot = (old.indexes.map(\.slot).max() ?? -1) + 1
        var indexes: [IndexColumn] = []
        var added: [IndexColumn] = []
        for spec in specs {
            if let kept = old.indexes.first(where: { $0.spec == spec }) {
                indexes.append(kept)
            } else {
                let index = IndexColumn(spec: spec, slot: nextSlot, table: old.table)
                nextSlot += 1
                indexes.append(index)
                added.append(index)
            }
        }
        let keptSlots = Set(indexes.map(\.slot))
        try db.execute("DROP TABLE IF EXISTS \(old.ftsTable)")
        for index in old.indexes where !keptSlots.contains(index.slot) {
            try db.execute("DROP INDEX IF EXISTS \(index.indexName)")
            if index.hasColumn { try db.execute("ALTER TABLE \(old.table) DROP COLUMN \(index.columnName)") }
        }
        for index in added {
            if index.hasColumn { try db.execute("ALTER TABLE \(old.table) ADD COLUMN \(index.columnName) \(index.type.columnType)") }
            if index.type != .fullText { try createIndex(db, index) }
        }
        let info = SoupInfo(name: old.name, table: old.table, indexes: indexes)
        try createFullText(db, info)
        try saveIndexMap(db, info)
        return (info, added)
    }
}
