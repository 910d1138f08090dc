import Glibc
import SyncStoreCore

/// Which syncs have a run queued or running, and waiting for them to end. A run is over for
/// starting it again as soon as its terminal callback begins (a host may start it again from
/// that callback, or right after it), and over for waiting once that callback has returned.
package final class RunTracker: @unchecked Sendable {
    private let lock = ConditionLock()
    private var active: [Int64: (flag: CancelFlag, owner: Int)] = [:]
    /// Runs whose terminal callback is being delivered: sync id -> owner.
    private var delivering: [Int64: Int] = [:]

    private func locked<T>(_ body: () throws -> T) rethrows -> T { try lock.withLock(body) }

    /// Registers a run; BUSY when the sync already has one.
    package func begin(_ id: Int64, owner: Int) throws -> CancelFlag {
        try locked {
            guard active[id] == nil else {
                throw StoreError(.busy, "Sync \(id) is already running; wait for it to finish or stop it", retryable: true)
            }
            let flag = CancelFlag()
            active[id] = (flag, owner)
            return flag
        }
    }

    /// The run that `flag` belongs to is over (a later run of the same sync is left alone).
    package func finish(_ id: Int64, _ flag: CancelFlag) {
        locked {
            if active[id]?.flag === flag { active[id] = nil }
            lock.broadcast()
        }
    }

    /// The run's work is over: the sync may be started again, and waiters wait for its terminal
    /// callback. Called inside the transaction that saves the terminal state, so a host that
    /// reads that state can start the sync again at once; a run started before that commit
    /// saves its own state after it (writes are serialized). Idempotent.
    package func release(_ id: Int64, _ flag: CancelFlag) {
        locked {
            if let run = active[id], run.flag === flag {
                active[id] = nil
                delivering[id] = run.owner
            }
            lock.broadcast()
        }
    }

    /// Runs `body` unless another run of `id` has begun since the run of `flag` was released.
    package func unlessRestarted(_ id: Int64, _ flag: CancelFlag, _ body: () -> Void) {
        locked { if active[id] == nil || active[id]?.flag === flag { body() } }
    }

    /// Brackets the terminal callback: the sync may be started again inside it, and waiters
    /// return once it has been delivered.
    package func deliverTerminal(_ id: Int64, _ flag: CancelFlag, _ callback: () -> Void) {
        release(id, flag)
        callback()
        locked {
            delivering[id] = nil
            lock.broadcast()
        }
    }

    package func isActive(_ id: Int64) -> Bool { locked { active[id] != nil } }

    /// Whether any run is queued or running. A run delivering its terminal callback is over: its
    /// work and its connections are done (a host may act on the callback at once).
    package var hasActive: Bool { locked { !active.isEmpty } }

    package func cancelAll() { locked { for run in active.values { run.flag.cancel() } } }

    /// Cancels the runs started through one handle.
    package func cancel(owner: Int) { locked { for run in active.values where run.owner == owner { run.flag.cancel() } } }

    package func waitOwner(_ owner: Int, timeoutMs: Int64) -> Bool {
        wait(timeoutMs: timeoutMs) { !self.active.values.contains { $0.owner == owner } && !self.delivering.values.contains(owner) }
    }

    /// Waits until `id` has no run; false on timeout (timeoutMs < 0 waits forever).
    package func wait(_ id: Int64, timeoutMs: Int64) -> Bool {
        wait(timeoutMs: timeoutMs) { self.active[id] == nil && self.delivering[id] == nil }
    }

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
