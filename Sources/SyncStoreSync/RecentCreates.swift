import SyncStoreCore
/// Entries whose creates a sync up just completed, with the server id they got. A host's
/// read-modify-write that read the entry before that (no id, still flagged created) and writes
/// it back after would erase the id and make the next sync up create the record again; the
/// host write path gives such an entry its id back and turns the create into an update.
/// In memory (the race is within one process) and bounded.
package final class RecentCreates: @unchecked Sendable {
    private let lock = Lock()
    private var ids: [Key: (field: String, serverId: String)] = [:]
    private var order: [Key] = []
    private var start = 0
    package static let capacity = 10_000

    private struct Key: Hashable {
        let table: String
        let entryId: Int64
    }

    package func record(table: String, entryId: Int64, idField: String, serverId: String) {
        lock.withLock {
            let key = Key(table: table, entryId: entryId)
            if ids.updateValue((idField, serverId), forKey: key) == nil { order.append(key) }
            if order.count - start > RecentCreates.capacity {
                ids[order[start]] = nil
                start += 1
                if start > RecentCreates.capacity {
                    order.removeFirst(start)
                    start = 0
                }
            }
        }
    }

    package func lookup(table: String, entryId: Int64) -> (field: String, serverId: String)? {
        lock.withLock { ids[Key(table: table, entryId: entryId)] }
    }

    /// Entries a `twophase` push stamped in this process: only for them does a host write that
    /// lacks the stamp read the stored one (`TwoPhaseTask.keepStamp`); other writes skip that read.
    package func recordStamp(table: String, entryId: Int64) {
        record(table: table, entryId: entryId, idField: TwoPhaseTask.stampMark, serverId: "")
    }

    package func wasStamped(table: String, entryId: Int64) -> Bool {
        lookup(table: table, entryId: entryId)?.field == TwoPhaseTask.stampMark
    }
}
