import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

// Entries: upsert, retrieve, remove (docs/smartstore.md#upsert-retrieve-remove).
extension SmartStore {
    // MARK: entries

    /// Upserts entries (a JSON array of objects, or one object) in one transaction and returns
    /// the stored entries as a JSON array.
    package func upsert(soup name: String, entriesJSON: String, externalIdPath: String? = nil, owner: Int = 0) throws -> TextBuffer {
        if scansHostUpserts, let stored = try upsertScanning(soup: name, entriesJSON: entriesJSON, externalIdPath: externalIdPath, owner: owner) {
            return stored
        }
        let doc = try JSONDocument.parse(entriesJSON, what: "entries", limitDepth: false)
        return try upsert(soup: name, entries: doc.root, externalIdPath: externalIdPath, owner: owner)
    }

    /// `upsert` without a JSON tree for the entries that need none: the text is scanned once
    /// (validated as strictly as jansson reads it, the index values read on the way), and an
    /// entry that is new and already in the form jansson writes is stored as its own text plus
    /// the store's keys; the others (replacements, reserved keys, other forms) are parsed and
    /// take the tree path, in order, in the same transaction. Same results, byte for byte. nil
    /// when the text is not scannable (invalid, not objects, too deep): the caller parses it and
    /// reports its errors as it always has.
    private func upsertScanning(soup name: String, entriesJSON: String, externalIdPath: String?, owner: Int) throws -> TextBuffer? {
        let externalPath = (externalIdPath == nil || externalIdPath == SoupPath.entryId) ? nil : externalIdPath
        guard let planned = soup(name) else { return nil }
        let companions = attached
        guard let plan = EntryWriter.hostScanPlan(soup: planned, externalIdPath: externalPath, reservedKeys: companions.flatMap(\.hostKeys)),
              let page = ScannedPage.scanEntries(Array(entriesJSON.utf8), plan: plan) else { return nil }
        // An entry jansson refuses (a number too big) fails as the whole text does on the tree path.
        func tree(_ k: Int) throws -> JSONDocument {
            do {
                return try page.parseRecord(k)
            } catch {
                _ = try JSONDocument.parse(entriesJSON, what: "entries", limitDepth: false)
                throw error
            }
        }
        return try write(origin: .host(owner: owner)) { db in
            let info = try self.requireSoup(name)
            let samePlan = info.table == planned.table
                && info.columnIndexes.map { "\($0.type):\($0.path)" } == planned.columnIndexes.map { "\($0.type):\($0.path)" }
            // Entries parsed: those the scan cannot store (or all, when the soup changed since).
            var trees: [Int: JSONDocument] = [:]
            for (k, record) in page.records.enumerated() where !samePlan || record.needsTree || !record.canonical {
                trees[k] = try tree(k)
            }
            let parsed = trees.keys.sorted().compactMap { trees[$0]?.root }
            for companion in companions { try companion.hostWillUpsert(parsed, soup: info, inside: db) }
            return try self.withEntryWriter(db, soup: info, externalIdPath: externalPath) { writer in
                writer.hostWrite = companions
                var out: TextBuffer? = TextBuffer(capacity: page.bytes.count + 64 + page.records.count * 64)
                out?.append(UInt8(ascii: "["))
                let now = Clock.nowMillis()
                for k in page.records.indices {
                    if k > 0 { out?.append(UInt8(ascii: ",")) }
                    if let tree = trees[k] {
                        _ = try writer.upsert(tree.root, index: k, now: now, into: &out)
                    } else if try !writer.insertScanned(page, record: k, now: now, into: &out) {
                        // It replaces a stored entry: the companions see it as a tree.
                        let parsed = try tree(k)
                        _ = try writer.upsert(parsed.root, index: k, now: now, into: &out)
                    }
                }
                out?.append(UInt8(ascii: "]"))
                return out ?? TextBuffer()
            }
        }
    }

    package func upsert(soup name: String, entries: JSON, externalIdPath: String? = nil, owner: Int = 0) throws -> TextBuffer {
        let list: [JSON] = entries.isArray ? entries.elements : [entries]
        for (i, entry) in list.enumerated() where !entry.isObject {
            throw StoreError.argument("Entry \(i) is not a JSON object; soup entries must be objects")
        }
        let externalPath = (externalIdPath == nil || externalIdPath == SoupPath.entryId) ? nil : externalIdPath
        let companions = attached
        return try write(origin: .host(owner: owner)) { db in
            let info = try self.requireSoup(name)
            for companion in companions { try companion.hostWillUpsert(list, soup: info, inside: db) }
            return try self.withEntryWriter(db, soup: info, externalIdPath: externalPath) { writer in
                writer.hostWrite = companions
                var out: TextBuffer? = TextBuffer(capacity: 64 + list.count * 256)
                out?.append(UInt8(ascii: "["))
                let now = Clock.nowMillis()
                for (i, entry) in list.enumerated() {
                    if i > 0 { out?.append(UInt8(ascii: ",")) }
                    _ = try writer.upsert(entry, index: i, now: now, into: &out)
                }
                out?.append(UInt8(ascii: "]"))
                return out ?? TextBuffer()
            }
        }
    }

    package func retrieve(soup name: String, idsJSON: String) throws -> TextBuffer {
        try retrieve(soup: name, ids: try parseIds(idsJSON))
    }

    package func retrieve(soup name: String, ids: [Int64]) throws -> TextBuffer {
        try reading(name) { info in try readers.withReader { db in
            let statement = try db.cached("SELECT soup FROM \(info.table) WHERE id = ?")
            defer { statement.reset() }
            var out = TextBuffer()
            out.append(UInt8(ascii: "["))
            var first = true
            for id in ids {
                statement.reset()
                try statement.bind([.int(id)])
                guard try statement.step() else { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(statement.textBytes(0))
            }
            out.append(UInt8(ascii: "]"))
            return out
        } }
    }

    /// Runs a read of soup `name`. A read that fails because the soup was removed (or removed
    /// and registered again) meanwhile says "not found" rather than "no such table".
    /// A read of soup `name` that fails because the soup was altered meanwhile (a column it
    /// planned with is gone) is planned again with the new indexes once the alter is published;
    /// one that fails because the soup was removed says "not found".
    func reading<T>(_ name: String, _ body: (SoupInfo) throws -> T) throws -> T {
        try retryingOnCatalogChange {
            let info = try requireSoup(name)
            do {
                return try body(info)
            } catch {
                // A soup removed or re-created meanwhile (here or by another process): gone is
                // NOT_FOUND; re-created is retried against its new table.
                adoptCatalogFromFile()
                if soup(name) == nil { throw StoreError.soupNotFound(name) }
                throw error
            }
        }
    }

    /// After a failed read: when the catalog in the file differs from the cached one (another
    /// process changed soups), the file's wins and the catalog version moves, so the read is
    /// planned again.
    func adoptCatalogFromFile() {
        let (before, checked) = catalogLock.withLock { (catalogVersion, checkedSchemaVersion) }
        // Every soup change, in any process, changes the schema: an unchanged schema version
        // means there is nothing to read.
        guard let (schema, fromFile) = try? readers.withReader({ db -> (Int64, [String: SoupInfo]?) in
            let schema = try db.scalarInt("PRAGMA schema_version") ?? -1
            return (schema, schema == checked ? nil : try SoupCatalog.loadAll(db))
        }), let fromFile else { return }
        catalogLock.withLock {
            // This process's own catalog changes are published by its writes; a file read that
            // may predate one of them, or overlap one, is not adopted.
            guard !alterInFlight, !writeInFlight, catalogVersion == before else { return }
            let same = fromFile.count == soups.count && fromFile.allSatisfy { name, info in
                soups[name].map { $0.table == info.table && $0.indexes.map(\.columnName) == info.indexes.map(\.columnName) } ?? false
            }
            if !same {
                soups = fromFile
                catalogVersion += 1
            }
            checkedSchemaVersion = schema
        }
    }

    /// Runs a read planned from the catalog again when it failed while the catalog changed.
    func retryingOnCatalogChange<T>(_ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            let version = catalogLock.withLock { catalogVersion }
            do {
                return try body()
            } catch let error as StoreError where error.code != .notFound {
                let (nowVersion, altering) = catalogLock.withLock { (catalogVersion, alterInFlight) }
                guard nowVersion != version || altering, attempt < 50 else { throw error }
                attempt += 1
                if altering { usleep(1000) }
            }
        }
    }

    package func removeEntries(soup name: String, idsJSON: String, owner: Int = 0) throws {
        try removeEntries(soup: name, ids: try parseIds(idsJSON), owner: owner)
    }

    package func removeEntries(soup name: String, ids: [Int64], owner: Int = 0) throws {
        try write(origin: .host(owner: owner)) { db in try self.deleteRows(db, try self.requireSoup(name), ids: ids) }
    }

    package func deleteRows(_ db: Connection, _ info: SoupInfo, ids: [Int64]) throws {
        let delete = try db.cached("DELETE FROM \(info.table) WHERE id = ?")
        let deleteText = info.fullTextIndexes.isEmpty ? nil : try db.cached("DELETE FROM \(info.ftsTable) WHERE rowid = ?")
        // Kept here and merged once: no lookup by soup name per deleted row.
        var deleted = StoreChange.Ids()
        defer { recorder?.deleted(info.name, deleted) }
        for id in ids {
            delete.reset()
            try delete.bind([.int(id)])
            try delete.run()
            if db.changes > 0 { deleted.add(id) }
            if let deleteText {
                deleteText.reset()
                try deleteText.bind([.int(id)])
                try deleteText.run()
            }
        }
    }

    /// Deletes every entry the spec selects (not just one page, unlike the SDK).
    @discardableResult
    package func removeByQuery(soup name: String, specJSON: String, owner: Int = 0) throws -> Int {
        let doc = try JSONDocument.parse(specJSON, what: "query spec")
        return try removeByQuery(soup: name, spec: try QuerySpec.parse(doc.root), owner: owner)
    }

    package func removeByQuery(soup name: String, spec: QuerySpec, owner: Int = 0) throws -> Int {
        try write(origin: .host(owner: owner)) { db in
            let info = try self.requireSoup(name)
            let (condition, bindings) = try SoupQueryBuilder.whereClause(spec, soup: info)
            let whereSQL = condition.isEmpty ? "" : " WHERE \(condition)"
            // Collect ids first: the condition may read the FTS table this removal also edits.
            let select = try db.prepare("SELECT id FROM \(info.table)\(whereSQL)")
            try select.bind(bindings)
            var ids: [Int64] = []
            while try select.step() { ids.append(select.int64(0)) }
            try self.deleteRows(db, info, ids: ids)
            return ids.count
        }
    }

    func parseIds(_ json: String) throws -> [Int64] {
        let doc = try JSONDocument.parse(json, what: "id list")
        let items: [JSON] = doc.root.isArray ? doc.root.elements : [doc.root]
        return try items.map {
            guard let id = $0.int64 else { throw StoreError.argument("Soup entry ids must be integers") }
            return id
        }
    }
}
