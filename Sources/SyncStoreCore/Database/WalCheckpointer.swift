import CSQLite
import Glibc

/// Copies the store's WAL into its database file on a thread of its own, so a host's write
/// never stops for a checkpoint: SQLite's own (`wal_autocheckpoint`) runs inside the commit
/// that crossed the limit, on the committing thread. The writer's commits report the WAL's
/// size (`sqlite3_wal_hook`); past `threshold` frames the thread runs a PASSIVE checkpoint on a
/// connection it opens for it (it never waits for the writer or a reader: it copies what it
/// can). Should the WAL still reach `limit` frames (the thread cannot keep up, or is finished),
/// the commit checkpoints itself, as SQLite would. Thread-safe.
package final class WalCheckpointer: @unchecked Sendable {
    /// Frames (pages) in the WAL from which a checkpoint is started: 32 MB with 4 KB pages, so an
    /// index page rewritten by many transactions is copied into the file once per checkpoint.
    package static let threshold: Int32 = 8192
    /// Frames from which the committing thread checkpoints itself.
    package static let limit: Int32 = 4 * threshold

    private let readers: ReaderPool
    private let lock = ConditionLock()
    private var wanted = false
    private var finished = false
    private var thread: pthread_t?

    package init(readers: ReaderPool) { self.readers = readers }

    /// Reports `writer`'s commits to this checkpointer (replacing SQLite's autocheckpoint on it).
    /// The checkpointer must outlive the connection's commits (the store holds both).
    package func install(on writer: Connection) {
        sqlite3_wal_hook(writer.db, walHook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// After a commit on the writer (SQLite's wal hook, on the committing thread).
    fileprivate func committed(_ db: OpaquePointer?, frames: Int32) {
        guard frames >= WalCheckpointer.threshold else { return }
        let started: Bool = lock.withLock {
            if finished { return false }
            if thread == nil {
                guard let running = startThread({ [self] in self.loop() }) else { return false }
                thread = running
            }
            wanted = true
            lock.signal()
            return true
        }
        if !started || frames >= WalCheckpointer.limit {
            _ = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        }
    }

    /// Ends the thread (after the checkpoint in progress) and waits for it; from then on
    /// commits checkpoint themselves at `threshold`. The store's last close calls it first.
    package func finish() {
        let running: pthread_t? = lock.withLock {
            finished = true
            lock.signal()
            defer { thread = nil }
            return thread
        }
        guard let running, pthread_equal(running, pthread_self()) == 0 else { return }
        pthread_join(running, nil)
    }

    private func loop() {
        while true {
            let go: Bool = lock.withLock {
                while !wanted && !finished { _ = lock.wait() }
                wanted = false
                return !finished
            }
            guard go else { return }
            // Under the readers' gate: a change of key waits for the checkpoint, and the
            // connection is closed before the file it opened can be replaced.
            readers.withFile { file in
                guard let connection = try? Connection(file: file, readOnly: false) else { return }
                defer { connection.close() }
                _ = sqlite3_wal_checkpoint_v2(connection.db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
        }
    }
}

private let walHook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = { context, db, _, frames in
    if let context { Unmanaged<WalCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(db, frames: frames) }
    return SQLITE_OK
}
