import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

// Soups: register, remove, clear, alter, re-index, and the store config that registers them.
extension SmartStore {
    // MARK: soups

    package func registerSoup(_ name: String, specsJSON: String) throws {
        let doc = try JSONDocument.parse(specsJSON, what: "index specs")
        try registerSoup(name, specs: try IndexSpec.parseList(doc.root))
    }

    package func registerSoup(_ name: String, specs: [IndexSpec]) throws {
        guard !name.isEmpty else { throw StoreError.argument("A soup name must not be empty") }
        guard !specs.isEmpty else { throw StoreError.argument("Index specs must not be empty") }
        _ = try write({ db -> SoupInfo? in
            if self.soup(name) != nil { return nil }
            return try SoupCatalog.create(db, name: name, specs: specs)
        }, committed: { created in
            if let created { self.setSoup(name, created) }
        })
    }

    /// Answers from the file's catalog, so soups other processes registered or removed count.
    package func soupExists(_ name: String) -> Bool {
        adoptCatalogFromFile()
        return soup(name) != nil
    }

    /// The soups in the file (the catalog is re-read, so other processes' changes show).
    package var soupNames: [String] {
        adoptCatalogFromFile()
        return catalogLock.withLock { soups.keys.sorted() }
    }

    package func removeSoup(_ name: String, owner: Int = 0) throws {
        try write(origin: .host(owner: owner), { db in
            guard let info = self.soup(name) else { return }
            try SoupCatalog.drop(db, info)
            self.recorder?.dropped(name)
            self.nextIds[info.table] = nil
            // Published before the commit: a reader that fails on the dropped table must then
            // find the soup gone (see `reading`). A failed commit reloads the catalog.
            self.setSoup(name, nil)
        }, committed: { _ in
            // Moved again after the commit: a catalog a reader read from the file before the
            // commit (the soup still there) must not be adopted once the write has ended
            // (see `adoptCatalogFromFile`).
            self.catalogLock.withLock { self.catalogVersion += 1 }
            self.schemaChanged()
        })
    }

    package func clearSoup(_ name: String, owner: Int = 0) throws {
        try write(origin: .host(owner: owner)) { db in
            let info = try self.requireSoup(name)
            try db.execute("DELETE FROM \(info.table)")
            self.recorder?.cleared(name)
            if !info.fullTextIndexes.isEmpty { try db.execute("DELETE FROM \(info.ftsTable)") }
        }
    }

    package func indexSpecs(_ name: String) throws -> [IndexSpec] { try requireSoup(name).specs }

    package func alterSoup(_ name: String, specsJSON: String, reIndexData: Bool) throws {
        let doc = try JSONDocument.parse(specsJSON, what: "index specs")
        try alterSoup(name, specs: try IndexSpec.parseList(doc.root), reIndexData: reIndexData)
    }

    package func alterSoup(_ name: String, specs: [IndexSpec], reIndexData: Bool) throws {
        _ = try write({ db -> SoupInfo in
            let old = try self.requireSoup(name)
            // Readers that fail on a dropped column from now on retry with the new indexes.
            self.catalogLock.withLock {
                self.alterInFlight = true
                self.catalogVersion += 1
            }
            let (info, _) = try SoupCatalog.alter(db, old, specs: specs)
            // New statements must see the altered table before re-indexing uses them.
            db.clearCache()
            if reIndexData {
                try self.reindex(db, info, indexes: info.columnIndexes)
            }
            try self.refillFullText(db, info)
            return info
        }, committed: { info in
            self.setSoup(name, info)
            self.catalogLock.withLock { self.alterInFlight = false }
            self.schemaChanged()
        })
    }

    package func reIndexSoup(_ name: String, pathsJSON: String) throws {
        let doc = try JSONDocument.parse(pathsJSON, what: "path list")
        guard doc.root.isArray else { throw StoreError.argument("reIndexSoup takes a JSON array of indexed paths") }
        var paths: [String] = []
        for p in doc.root.elements {
            guard let s = p.string else { throw StoreError.argument("reIndexSoup paths must be strings") }
            paths.append(s)
        }
        try reIndexSoup(name, paths: paths)
    }

    package func reIndexSoup(_ name: String, paths: [String]) throws {
        try write { db in
            let info = try self.requireSoup(name)
            var indexes: [IndexColumn] = []
            for path in paths {
                guard let index = info.index(for: path) else {
                    throw StoreError.argument("Path '\(path)' is not indexed on soup '\(name)'; only indexed paths can be re-indexed")
                }
                if index.hasColumn { indexes.append(index) }
            }
            try self.reindex(db, info, indexes: indexes)
            if indexes.contains(where: { $0.type == .fullText }) { try self.refillFullText(db, info) }
        }
    }

    /// A stored entry parsed. One an earlier version stored against today's JSON rule (a key
    /// with U+0000, nesting jansson refuses) is named by its id, so the host can delete or
    /// rewrite it; an entry only deeper than the rule's limit still reads.
    package static func storedEntry(_ bytes: UnsafeRawPointer, length: Int, id: Int64, soup: String) throws -> JSONDocument {
        do {
            return try JSONDocument.parse(bytes: bytes, length: length, what: "stored entry", limitDepth: false)
        } catch let error as StoreError {
            throw StoreError(.argument, "Entry \(id) (_soupEntryId) of soup '\(soup)' cannot be read: \(error.message). It was stored by an earlier version; delete it or upsert it anew")
        }
    }

    /// Recomputes index columns from each entry's JSON.
    func reindex(_ db: Connection, _ info: SoupInfo, indexes: [IndexColumn]) throws {
        guard !indexes.isEmpty else { return }
        let assignments = indexes.map { "\($0.columnName) = ?" }.joined(separator: ", ")
        let update = try db.prepare("UPDATE \(info.table) SET \(assignments) WHERE id = ?")
        let scan = try db.prepare("SELECT id, soup FROM \(info.table)")
        // Collect first: updating rows while scanning the same table is undefined in SQLite.
        var rows: [(Int64, [SQLValue])] = []
        while try scan.step() {
            let bytes = scan.textBytes(1)
            guard let base = bytes.baseAddress else { continue }
            let doc = try SmartStore.storedEntry(base, length: bytes.count, id: scan.int64(0), soup: info.name)
            rows.append((scan.int64(0), indexes.map { SoupPath.indexValue(doc.root, $0.path, for: $0.type) }))
        }
        for (id, values) in rows {
            update.reset()
            try update.bind(values)
            try update.bind(.int(id), at: Int32(values.count + 1))
            try update.run()
        }
    }

    func refillFullText(_ db: Connection, _ info: SoupInfo) throws {
        let columns = info.fullTextIndexes.map(\.columnName)
        guard !columns.isEmpty else { return }
        let list = columns.joined(separator: ", ")
        try db.execute("DELETE FROM \(info.ftsTable)")
        try db.execute("INSERT INTO \(info.ftsTable) (rowid, \(list)) SELECT id, \(list) FROM \(info.table)")
    }

    /// Registers the soups of a userstore.json / globalstore.json document; existing soups are skipped.
    package func loadStoreConfig(json: String) throws {
        let doc = try JSONDocument.parse(json, what: "store config")
        guard let list = doc.root["soups"], list.isArray else {
            throw StoreError.argument("A store config must be {\"soups\": [{\"soupName\", \"indexes\"}]}")
        }
        var definitions: [(String, [IndexSpec])] = []
        for (i, item) in list.elements.enumerated() {
            guard let name = item["soupName"]?.string, !name.isEmpty else {
                throw StoreError.argument("Soup \(i) of the store config needs a non-empty \"soupName\"")
            }
            guard let indexes = item["indexes"] else {
                throw StoreError.argument("Soup '\(name)' of the store config needs \"indexes\"")
            }
            definitions.append((name, try IndexSpec.parseList(indexes)))
        }
        _ = try write({ db -> [SoupInfo] in
            var created: [SoupInfo] = []
            for (name, specs) in definitions where self.soup(name) == nil && !created.contains(where: { $0.name == name }) {
                created.append(try SoupCatalog.create(db, name: name, specs: specs))
            }
            return created
        }, committed: { created in
            for info in created { self.setSoup(info.name, info) }
        })
    }
}
