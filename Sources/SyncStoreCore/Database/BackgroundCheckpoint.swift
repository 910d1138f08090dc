import CSQLite

/// Copies committed pages from the WAL into the database from a thread other than the writer's.
/// A sync down's fetch thread mostly waits for the server while the writer is the bottleneck,
/// so checkpointing there keeps the WAL small without the writer ever stopping for it.
/// PASSIVE: never waits for readers or the writer; it copies what it can. Not thread-safe: one
/// thread at a time (the sync's fetches run one after another).
package final class BackgroundCheckpoint {
    private let connection: Connection?
    private var pending = 0
    /// Pages (transactions) written between two checkpoints.
    private let every: Int

    package init(file: DatabaseFile, every: Int = 4) {
        connection = try? Connection(file: file, readOnly: false)
        self.every = every
    }

    /// Called once per transaction the writer made; checkpoints every `every` of them.
    package func transactionWritten() {
        pending += 1
        guard pending >= every, let connection else { return }
        pending = 0
        _ = sqlite3_wal_checkpoint_v2(connection.db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }
}
