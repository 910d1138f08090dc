import Glibc

/// Which syncs have a run queued or running, and waiting for them to end.
final class RunTracker: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var active: [Int64: (flag: CancelFlag, owner: Int)] = [:]

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Registers a run; BUSY when the sync already has one.
    func begin(_ id: Int64, owner: Int) throws -> CancelFlag {
        try locked {
            guard active[id] == nil else {
                throw StoreError(.busy, "Sync \(id) is already running; wait for it to finish or stop it", retryable: true)
            }
            let flag = CancelFlag()
            active[id] = (flag, owner)
            return flag
        }
    }

    func finish(_ id: Int64) {
        locked {
            active[id] = nil
            pthread_cond_broadcast(condition)
        }
    }

    func isActive(_ id: Int64) -> Bool { locked { active[id] != nil } }

    func cancelAll() { locked { for run in active.values { run.flag.cancel() } } }

    /// Cancels the runs started through one handle.
    func cancel(owner: Int) { locked { for run in active.values where run.owner == owner { run.flag.cancel() } } }

    func waitOwner(_ owner: Int, timeoutMs: Int64) -> Bool {
        wait(timeoutMs: timeoutMs) { !self.active.values.contains { $0.owner == owner } }
    }

    /// Waits until `id` has no run; false on timeout (timeoutMs < 0 waits forever).
    func wait(_ id: Int64, timeoutMs: Int64) -> Bool { wait(timeoutMs: timeoutMs) { self.active[id] == nil } }

    func waitAll(timeoutMs: Int64) -> Bool { wait(timeoutMs: timeoutMs) { self.active.isEmpty } }

    private func wait(timeoutMs: Int64, until done: () -> Bool) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let total = Int64(deadline.tv_nsec) + max(0, timeoutMs) % 1000 * 1_000_000
        deadline.tv_sec += Int(max(0, timeoutMs) / 1000) + Int(total / 1_000_000_000)
        deadline.tv_nsec = Int(total % 1_000_000_000)
        return locked {
            while !done() {
                if timeoutMs < 0 {
                    pthread_cond_wait(condition, mutex)
                } else if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT {
                    return done()
                }
            }
            return true
        }
    }
}
