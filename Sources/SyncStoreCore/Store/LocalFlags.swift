/// The local-change flags hosts set on entries they edit offline (docs/smartstore.md#local-change-flags). `true`,
/// the number 1 (1.0 too) and the strings "true"/"1" count alike (the JS StoreCache helper writes strings).
package enum LocalFlags {
    package static let local = "__local__"
    package static let created = "__locally_created__"
    package static let updated = "__locally_updated__"
    package static let deleted = "__locally_deleted__"
    package static let lastError = "__last_error__"
    package static let syncId = "__sync_id__"
    /// Set while a create is in flight, so a retry after a lost response can find the record
    /// the first attempt created instead of creating a second one.
    package static let pendingCreate = "__sync_create_sent__"

    package static func isSet(_ value: JSON?) -> Bool {
        guard let value else { return false }
        switch value.kind {
        case .bool: return value.bool ?? false
        // As the dirty SQL reads them (dirtyCondition): the number 1 only, 1.0 included.
        case .integer, .real: return value.double == 1
        case .string: return value.string == "true" || value.string == "1"
        default: return false
        }
    }

    /// SQL (1 or 0) telling whether the entry in `soup` is dirty.
    package static var dirtyCondition: String { dirtyCondition(soupColumn: "soup") }
    package static func dirtyCondition(soupColumn: String) -> String {
        "(\(SoupPath.jsonExtract(local, soupColumn: soupColumn)) IN (1, 'true', '1'))"
    }

    /// Keys the store and the sync engine write into entries.
    package static let storeKeys = [local, created, updated, deleted, lastError, syncId, pendingCreate, SoupPath.entryId, SoupPath.lastModified]

    /// What `clear` sets, as members added to entries stored from their server text.
    package static func cleanMembers(syncId: Int64) -> AddedMembers {
        AddedMembers([(local, .bool(false)), (created, .bool(false)), (updated, .bool(false)),
                      (deleted, .bool(false)), (self.syncId, .int(syncId))])
    }

    /// Marks an entry clean, as written by a sync.
    package static func clear(_ entry: JSON, syncId: Int64?) {
        entry.set(local, owned: JSONMake.bool(false))
        entry.set(created, owned: JSONMake.bool(false))
        entry.set(updated, owned: JSONMake.bool(false))
        entry.set(deleted, owned: JSONMake.bool(false))
        entry.remove(lastError)
        entry.remove(pendingCreate)
        if let syncId { entry.set(self.syncId, owned: JSONMake.int(syncId)) }
    }
}

extension SmartStore {
    /// Entries of a soup, and how many of them carry local changes a sync up would send.
    package func entryCounts(soup name: String) throws -> (entries: Int64, dirty: Int64) {
        let info = try requireSoup(name)
        return try readers.withReader { db in
            let statement = try db.prepare("SELECT count(*), coalesce(sum(\(LocalFlags.dirtyCondition)), 0) FROM \(info.table)")
            guard try statement.step() else { return (0, 0) }
            return (statement.int64(0), statement.int64(1))
        }
    }
}
