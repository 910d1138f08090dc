import Glibc
import SyncStoreCore

/// Only one process at a time runs a store's syncs. Two would push the same creates twice, and
/// a second process starting up would take the first one's running syncs for ones a crash left
/// RUNNING. An exclusive flock on a file beside the database, held while the sync manager
/// lives; the kernel drops it when the process ends, so a crash never leaves the store locked.
package final class SyncEngineLock {
    package static let suffix = "-sync.lock"
    private var fd: Int32

    /// Throws BUSY (retryable) when another process holds the lock.
    package init(databasePath: String) throws {
        let path = databasePath + SyncEngineLock.suffix
        fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(.storage, "Cannot open the sync lock file '\(path)': \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            close(fd)
            fd = -1
            if error == EWOULDBLOCK {
                throw StoreError(.busy, "Another process is running the syncs of this store; run a store's syncs from one process at a time (retry when it has closed the store)", retryable: true)
            }
            throw StoreError(.storage, "Cannot lock '\(path)': \(String(cString: strerror(error)))")
        }
    }

    package func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { release() }
}
