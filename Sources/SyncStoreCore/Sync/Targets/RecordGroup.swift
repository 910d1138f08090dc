/// Records fetched together, with where they go.
struct RecordGroup {
    let soupName: String
    let idFieldName: String
    let modificationDateFieldName: String
    let records: [JSON]
    /// The records as scanned text instead of trees (query pages; `records` is then empty).
    var scanned: ScannedPage? = nil
    /// Ids the server reports deleted (datasync): their local entries are removed.
    var removedIds: [String] = []

    var count: Int { scanned?.records.count ?? records.count }
}
