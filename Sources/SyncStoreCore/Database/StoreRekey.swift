import CSQLite
import CSyncStoreCipher
import Glibc

/// Re-encrypts a store's file under a new key (or none), atomically: the whole store is written
/// under the new key to `<file>.rekey`, synced, and renamed over the file. A crash before the
/// rename leaves the old file as it was (the leftover copy is deleted by the next change or
/// removal); after it, the new file is complete. So the store always opens with exactly one of
/// the two keys, every entry in it (docs/encryption.md).
package enum StoreRekey {
    package static let suffix = ".rekey"

    /// How long the change waits for other connections (other processes) to let go of the file.
    package static let exclusiveWaitMs: Int32 = 2000

    /// Writes the store that `writer` holds under `newKey` and puts it in place of the file.
    /// `writer` must be the only connection of this process to the file. Either way it must be
    /// closed afterwards: on success it holds the old, replaced file (in rollback-journal mode)
    /// and the returned file is the store's; on error the old file is in place, unchanged, but
    /// `writer` may still hold SQLite's locks from the refused attempt (a PENDING lock blocks
    /// every reader), so a new connection must take its place.
    package static func rewrite(_ writer: Connection, to newKey: StoreKey?) throws -> DatabaseFile {
        let path = writer.file.path
        let temp = path + suffix
        removeLeftovers(of: path)
        try takeExclusive(writer)
        do {
            // Rollback mode first: it checkpoints the WAL into the file and deletes it (and the
            // -shm), so the old connection, closed after the rename, removes nothing by name.
            try writer.execute("PRAGMA journal_mode=DELETE")
            // In exclusive locking mode SQLite keeps the journal of that switch (its header
            // zeroed, page 1's old image still in it): it must not outlive the old file. Nothing
            // else writes to the old file, so the journal is not needed again.
            unlink(path + "-journal")
            let next = try DatabaseFile(path: path, key: newKey, keyFrom: temp, kdfIter: writer.file.kdfIter)
            var reserve = Int32(next.isEncrypted ? SS_CIPHER_RESERVE : 0)
            _ = sqlite3_file_control(writer.db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve)
            let target = next.uri(at: temp).replacingAll("'", with: "''")
            try writer.execute("VACUUM INTO '\(target)'")
            try FileSystem.syncFile(temp)
            guard rename(temp, path) == 0 else {
                throw StoreError(.storage, "Cannot replace '\(path)' with its re-encrypted copy: \(String(cString: strerror(errno)))")
            }
            FileSystem.syncDirectory(of: path)
            return next
        } catch {
            removeLeftovers(of: path)
            throw error
        }
    }

    /// The leftovers of a change interrupted before its rename.
    package static func removeLeftovers(of path: String) {
        for name in [path + suffix, path + suffix + "-journal", path + suffix + "-wal", path + suffix + "-shm"] {
            unlink(name)
        }
    }

    /// An exclusive lock on the file: no other process has it open (each holds a shared lock
    /// while it does) and none can open it until this connection lets go.
    private static func takeExclusive(_ writer: Connection) throws {
        sqlite3_busy_timeout(writer.db, exclusiveWaitMs)
        defer { sqlite3_busy_timeout(writer.db, Connection.busyTimeoutMs) }
        do {
            try writer.execute("PRAGMA locking_mode=EXCLUSIVE")
            try writer.execute("BEGIN EXCLUSIVE")
            try writer.execute("COMMIT")
        } catch let error as StoreError {
            if error.code == .busy {
                throw StoreError(.busy, "Another process has this store open: close it there, then change the key", retryable: true)
            }
            throw error
        }
    }
}
