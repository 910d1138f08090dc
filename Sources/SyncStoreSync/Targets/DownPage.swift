import SyncStoreCore
/// One page of a sync down. `owner` keeps the parsed response (and so the records) alive.
package struct DownPage {
    package let owner: [JSONDocument]
    package let groups: [RecordGroup]
    /// Total records the server announced (first page), nil when unknown.
    package let totalSize: Int64?
    /// Continuation for the next page, nil on the last one.
    package let next: String?

    /// Records and deletions (a page of deleted rows is not an empty page).
    package var recordCount: Int { groups.reduce(0) { $0 + $1.count + $1.removedIds.count } }
}
