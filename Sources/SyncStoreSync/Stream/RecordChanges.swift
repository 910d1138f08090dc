/// What the change events received ask of one sync down and has not been done yet: records
/// to fetch, records to remove, a reSync when the ids cannot be fetched alone, and a ghost
/// cleaning after it when deletions may have been missed (docs/sync.md#change-events).
/// Bounded: past `maxIds` ids the sync catches up instead, so a flood of events keeps memory flat.
package struct RecordChanges {
    package static let maxIds = 10_000

    package private(set) var fetch: Set<String> = []
    package private(set) var remove: Set<String> = []
    /// The sync's incremental reSync runs (it finds every create and update since its last run).
    package private(set) var reSync = false
    /// A ghost cleaning follows the reSync (it finds every deletion).
    package private(set) var cleanGhosts = false
    /// The commit time of the newest event of the sync's object taken (nil: no event said):
    /// every change committed before it has had its event. A record fetched by id may carry a
    /// later change whose event has not come yet, so the sync's maxTimeStamp never passes this.
    package private(set) var seenThrough: Int64?

    package init() {}

    package var isEmpty: Bool { fetch.isEmpty && remove.isEmpty && !reSync }

    /// Created, updated or undeleted: fetched (a later delete wins, a later create undoes a delete).
    package mutating func changed(_ ids: [String]) {
        for id in ids {
            remove.remove(id)
            if !reSync { fetch.insert(id) }
        }
        bound()
    }

    package mutating func deleted(_ ids: [String]) {
        for id in ids {
            fetch.remove(id)
            if !cleanGhosts { remove.insert(id) }
        }
        bound()
    }

    /// An event of the sync's object committed at `commitTimestamp` was received.
    package mutating func seen(_ commitTimestamp: Int64?) {
        if let commitTimestamp { seenThrough = max(seenThrough ?? commitTimestamp, commitTimestamp) }
    }

    /// The changed records are not known one by one: the sync reSyncs; `ghosts`: deletions may
    /// be among them, a ghost cleaning follows.
    package mutating func needCatchUp(ghosts: Bool) {
        reSync = true
        fetch = []
        if ghosts {
            cleanGhosts = true
            remove = []
        }
    }

    /// `older` (put back after a failed apply) under these (newer) changes.
    package mutating func putBack(_ older: RecordChanges) {
        if older.reSync { needCatchUp(ghosts: older.cleanGhosts) }
        if !reSync { fetch.formUnion(older.fetch.subtracting(remove)) }
        if !cleanGhosts { remove.formUnion(older.remove.subtracting(fetch)) }
        seen(older.seenThrough)
        bound()
    }

    private mutating func bound() {
        if fetch.count + remove.count > Self.maxIds { needCatchUp(ghosts: true) }
    }
}
