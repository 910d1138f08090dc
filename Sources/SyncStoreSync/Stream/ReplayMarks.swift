import SyncStoreSupport
import SyncStoreCore

/// The replay id up to which each change-event channel has been applied to the store, kept in
/// `sync_stream_replay` so a restarted live sync resumes where it stopped
/// (docs/sync.md#change-events). A mark names the server it came from: another instance's replay
/// ids mean nothing here. Saved only after the events up to it were applied, so a crash between
/// the two replays them (applying is idempotent).
package struct ReplayMarks {
    package static let table = "sync_stream_replay"
    package let store: SmartStore
    package let instance: String

    /// Made with the sync engine's other tables when a store opens for writing (SyncCompanion):
    /// a schema change while syncs run would make their statements prepare again mid-run.
    package static func createTable(_ db: Connection) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS \(table) (channel TEXT PRIMARY KEY, instance TEXT NOT NULL, replayId INTEGER NOT NULL)")
    }

    /// Each channel's mark; a channel without one is absent.
    package func load(_ channels: [String]) throws -> [String: Int64] {
        try store.readers.withReader { db in
            var marks: [String: Int64] = [:]
            for channel in channels {
                if let id = try db.scalarInt("SELECT replayId FROM \(Self.table) WHERE channel = ? AND instance = ?",
                                             [.text(channel), .text(instance)]) {
                    marks[channel] = id
                }
            }
            return marks
        }
    }

    package func save(_ marks: [String: Int64]) throws {
        guard !marks.isEmpty else { return }
        try store.write { db in
            let statement = try db.prepare("INSERT OR REPLACE INTO \(Self.table) (channel, instance, replayId) VALUES (?, ?, ?)")
            for (channel, id) in marks.sorted(by: { $0.key < $1.key }) {
                statement.reset()
                try statement.bind([.text(channel), .text(instance), .int(id)])
                _ = try statement.step()
            }
        }
    }
}
