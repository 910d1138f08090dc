import SyncStoreCore
/// Records fetched together, with where they go.
package struct RecordGroup {
    package let soupName: String
    package let idFieldName: String
    package let modificationDateFieldName: String
    package let records: [JSON]
    /// The records as scanned text instead of trees (query pages; `records` is then empty).
    package var scanned: ScannedPage? = nil
    /// Ids the server reports deleted (datasync): their local entries are removed.
    package var removedIds: [String] = []

    package var count: Int { scanned?.records.count ?? records.count }
}
