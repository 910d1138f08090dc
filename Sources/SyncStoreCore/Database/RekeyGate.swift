import Glibc

/// A change of key renames a new file over the store's (StoreRekey). A connection of another
/// process that opened the old file just then would go on with it, and would create its -wal
/// and -shm by name, beside the new file, where the new file's connections take them for their
/// own (the old file's log replayed into the new one). So opening a connection and changing the
/// key exclude each other across processes: a flock on `<db>-rekey.lock`, shared while a
/// connection opens (until it holds SQLite's own shared lock, which every connection of a WAL
/// store keeps while open, and which the change of key waits out), exclusive while a key changes.
/// The kernel drops it when a process ends, so a crash never leaves a store locked.
package struct RekeyGate {
    package static let suffix = "-rekey.lock"

    private let fd: Int32
    private let path: String

    /// Takes the gate of the store at `databasePath`, waiting up to `waitMs`. Where the lock file
    /// cannot be created (read-only media, where no key can change either) there is no gate.
    package init(databasePath: String, exclusive: Bool, waitMs: Int32) throws {
        let path = databasePath + RekeyGate.suffix
        self.path = path
        var waited: Int32 = 0
        while true {
            let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                if exclusive {
                    throw StoreError(.storage, "Cannot open the lock file '\(path)' a change of key needs: \(String(cString: strerror(errno)))")
                }
                self.fd = -1
                return
            }
            while flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
                let error = errno
                guard error == EWOULDBLOCK || error == EINTR, waited < waitMs else {
                    close(fd)
                    if error == EWOULDBLOCK {
                        throw exclusive
                            ? StoreError(.busy, "Another process is opening this store: change the key again when it has opened it or given up", retryable: true)
                            : StoreError(.busy, "Another process is changing this store's key: open the store again when that is done", retryable: true)
                    }
                    throw StoreError(.storage, "Cannot lock '\(path)': \(String(cString: strerror(error)))")
                }
                usleep(2000)
                waited += 2
            }
            // The last one to let go removes the file (release): a lock taken on a removed file
            // excludes nobody, so take it again on the file now there.
            if RekeyGate.isFile(fd, at: path) {
                self.fd = fd
                return
            }
            close(fd)
        }
    }

    /// Lets go of the gate, and removes the lock file when nobody else holds it: a store leaves
    /// no file behind but its database (and a refused open none at all).
    package func release() {
        guard fd >= 0 else { return }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 && RekeyGate.isFile(fd, at: path) { unlink(path) }
        close(fd)
    }

    private static func isFile(_ fd: Int32, at path: String) -> Bool {
        var opened = stat(), named = stat()
        return fstat(fd, &opened) == 0 && stat(path, &named) == 0
            && opened.st_ino == named.st_ino && opened.st_dev == named.st_dev
    }
}
