import Glibc

/// A plain mutex. Used instead of Foundation's NSLock (the library does not link Foundation).
package final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` holding the lock if it is free now; nil (body not run) if it is held.
    package func withLockIfFree<T>(_ body: () throws -> T) rethrows -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A mutex with a condition variable, for threads that wait for a state change.
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (the lock held) until signalled; with a deadline, false when it passed.
    package func wait(deadline: timespec? = nil) -> Bool {
        guard var deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }

    package func signal() { pthread_cond_signal(condition) }
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// The wall-clock time `ms` milliseconds from now, for `wait(deadline:)`.
    package static func deadline(afterMs ms: Int64) -> timespec {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        let nanos = Int64(t.tv_nsec) + (ms % 1000) * 1_000_000
        t.tv_sec += Int(ms / 1000) + Int(nanos / 1_000_000_000)
        t.tv_nsec = Int(nanos % 1_000_000_000)
        return t
    }
}
