import Glibc

/// Which syncs have a run queued or running, and waiting for them to end.
final class RunTracker: @unchecked Sendable {
    private let lock = ConditionLock()
    private var active: [Int64: (flag: CancelFlag, owner: Int)] = [:]

    private func locked<T>(_ body: () throws -> T) rethrows -> T { try lock.withLock(body) }

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
            lock.broadcast()
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

    private func wait(timeoutMs: Int64, until done: () -> Bool) -> Bool {
        let deadline = timeoutMs < 0 ? nil : ConditionLock.deadline(afterMs: timeoutMs)
        return locked {
            while !done() {
                if !lock.wait(deadline: deadline) { return done() }
            }
            return true
        }
    }
}
