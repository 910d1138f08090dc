/// What the change events received ask of one sync down and has not been done yet: records
/// to fetch, records to remove, or a catch-up (its reSync, then a ghost cleaning) when the
/// events cannot say which records changed (docs/sync.md#change-events). Bounded: past
/// `maxIds` ids the sync catches up instead, so a flood of events keeps memory flat.
package struct RecordChanges {
    package static let maxIds = 10_000

    package private(set) var fetch: Set<String> = []
    package private(set) var remove: Set<String> = []
    package private(set) var catchUp = false

    package init() {}

    package var isEmpty: Bool { fetch.isEmpty && remove.isEmpty && !catchUp }

    /// Created, updated or undeleted: fetched (a later delete wins, a later create undoes a delete).
    package mutating func changed(_ ids: [String]) {
        guard !catchUp else { return }
        for id in ids {
            remove.remove(id)
            fetch.insert(id)
        }
        bound()
    }

    package mutating func deleted(_ ids: [String]) {
        guard !catchUp else { return }
        for id in ids {
            fetch.remove(id)
            remove.insert(id)
        }
        bound()
    }

    /// The ids are not known: the sync catches up, which finds every change.
    package mutating func needCatchUp() {
        catchUp = true
        fetch = []
        remove = []
    }

    /// `other` (older, put back after a failed apply) under these (newer) changes.
    package mutating func putBack(_ older: RecordChanges) {
        if older.catchUp { needCatchUp() }
        guard !catchUp else { return }
        fetch.formUnion(older.fetch.subtracting(remove))
        remove.formUnion(older.remove.subtracting(fetch))
        bound()
    }

    private mutating func bound() {
        if fetch.count + remove.count > Self.maxIds { needCatchUp() }
    }
}
