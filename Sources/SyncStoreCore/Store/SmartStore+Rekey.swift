import CJansson
import CSQLite
import Glibc
import SyncStoreSupport

// A store's change of key (docs/encryption.md#changing-the-key), on StoreRekey.
extension SmartStore {
    /// Encrypts the store under `newKey`, re-encrypts it, or (nil) decrypts it; atomic (see
    /// StoreRekey). Every handle of this process keeps working and uses the new file. BUSY
    /// while a sync of the store runs or is queued, or another process has the store open.
    package func changeKey(to newKey: StoreKey?) throws {
        if onCallbackThread { throw StoreError(.state, "A sync callback cannot change its store's key (its own run would never end first)") }
        if readOnly { throw readOnlyError("re-keyed") }
        // Not under companionsLock: a callback of a run the pause waits for may write.
        let pause = attached.reduce({ try self.rekey(to: newKey) }) { body, companion in { try companion.paused(body) } }
        try pause()
    }

    func rekey(to newKey: StoreKey?) throws {
        try writeLock.withLock {
            if let writerFailure { throw writerFailure }
            if newKey == nil && !writer.file.isEncrypted { return }
            // No connection of another process opens while the file is replaced.
            let gate = try RekeyGate(databasePath: path, exclusive: true, waitMs: StoreRekey.exclusiveWaitMs)
            defer { gate.release() }
            try readers.replacingFile { () -> DatabaseFile? in
                let old = writer.file
                let next: DatabaseFile
                do {
                    next = try StoreRekey.rewrite(writer, to: newKey)
                } catch {
                    // Nothing changed, but the refused attempt may have left SQLite's locks on
                    // the writer: a new connection drops them.
                    try reopenWriter(old, after: "The key was not changed")
                    throw error
                }
                // The old connection goes first: it must not touch the new file's -wal or -shm.
                fileLock.withLock { currentFile = next }
                try reopenWriter(next, after: "The key was changed")
                return next
            }
        }
    }

    /// Closes the writer and opens `file` in its place (under writeLock). When that fails, writes
    /// fail from then on with a message saying what happened.
    func reopenWriter(_ file: DatabaseFile, after what: String) throws {
        writer.close()
        do {
            writer = try Connection(file: file, readOnly: false)
            checkpointer?.install(on: writer)
            dataVersion = try writer.scalarInt("PRAGMA data_version") ?? 0
            nextIds.removeAll()
        } catch let error as StoreError {
            let failure = StoreError(error.code, "\(what), but the store could not be opened again for writing (\(error.message)); close every handle and open the store again")
            writerFailure = failure
            throw failure
        }
    }
}
