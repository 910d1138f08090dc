import Glibc

/// Read-only connections handed to one caller at a time. WAL lets them read while the writer
/// holds a long transaction; each read sees the last committed state.
package final class ReaderPool: @unchecked Sendable {
    /// Which idle connections a read takes. A connection's page cache is dropped whole when it
    /// starts reading after another connection's commit, and dropping one that a large query
    /// filled took 1 ms: the notifier, which reads after every commit, keeps its own.
    package enum Lane {
        case shared
        case notifier
    }

    private let lock = Lock()
    private var file: DatabaseFile
    private var idle: [Connection] = []
    private var notifierIdle: [Connection] = []
    private let maxIdle: Int
    /// Held shared by every read, exclusively while the store's file is replaced (a change of
    /// key): no read runs on the old file once the new one is in place.
    private let gate = ReadWriteLock()

    package init(file: DatabaseFile, maxIdle: Int = 4) {
        self.file = file
        self.maxIdle = maxIdle
    }

    package func withReader<T>(lane: Lane = .shared, _ body: (Connection) throws -> T) throws -> T {
        try gate.reading {
            let (pooled, file) = lock.withLock { (lane == .shared ? idle.popLast() : notifierIdle.popLast(), self.file) }
            let connection = try pooled ?? Connection(file: file, readOnly: true)
            defer {
                lock.withLock {
                    guard connection.file === self.file else { return }
                    switch lane {
                    case .shared: if idle.count < maxIdle { idle.append(connection) }
                    case .notifier: if notifierIdle.isEmpty { notifierIdle.append(connection) }
                    }
                }
            }
            return try body(connection)
        }
    }

    /// Drops idle connections (their cached statements may name dropped tables).
    package func drain() {
        lock.withLock {
            idle.removeAll()
            notifierIdle.removeAll()
        }
    }

    /// Runs `body` with the store's current file, as a read does: a change of key waits for it.
    package func withFile(_ body: (DatabaseFile) -> Void) {
        gate.reading { body(lock.withLock { file }) }
    }

    /// Runs `body` with no read in flight and none starting; idle connections are closed first
    /// and, when `body` returns a new file, later reads open that one.
    package func replacingFile(_ body: () throws -> DatabaseFile?) rethrows {
        try gate.writing {
            drain()
            if let next = try body() { lock.withLock { file = next } }
        }
    }
}

/// pthread's reader-writer lock.
package final class ReadWriteLock: @unchecked Sendable {
    private let rw = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    package init() { pthread_rwlock_init(rw, nil) }

    deinit {
        pthread_rwlock_destroy(rw)
        rw.deallocate()
    }

    package func reading<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(rw)
        defer { pthread_rwlock_unlock(rw) }
        return try body()
    }

    package func writing<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(rw)
        defer { pthread_rwlock_unlock(rw) }
        return try body()
    }
}
