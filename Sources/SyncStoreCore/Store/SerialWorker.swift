import Glibc

/// A thread that runs jobs one after another (the per-store sync worker).
package final class SerialWorker: @unchecked Sendable {
    package init() {}
    private let lock = ConditionLock()
    private var jobs: [@Sendable () -> Void] = []
    private var finishing = false
    private var thread: pthread_t?

    /// Queues a job. False when the worker has finished (its store is closing: the job would
    /// never run) or its thread cannot be started; the job is then dropped and the caller
    /// must report the failure itself.
    package func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        lock.withLock {
            if finishing { return false }
            if thread == nil {
                // Not spawnThread: its fallback runs the body inline, here under our own lock.
                guard let started = startThread({ [self] in self.loop() }) else { return false }
                thread = started
            }
            jobs.append(job)
            lock.signal()
            return true
        }
    }

    /// Whether the caller is the sync worker thread of some store, i.e. inside a callback.
    package static var onAnyWorker: Bool { pthread_getspecific(workerKey) != nil }

    private static func markCurrentThread() { pthread_setspecific(workerKey, UnsafeRawPointer(bitPattern: 1)) }

    private static let workerKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether the caller is this worker's thread (it must not wait for itself).
    package var isCurrentThread: Bool {
        lock.withLock {
            guard let thread else { return false }
            return pthread_equal(thread, pthread_self()) != 0
        }
    }

    /// Runs the queued jobs, then ends the thread and waits for it. Later submits are refused.
    package func finish() {
        let running: pthread_t? = lock.withLock {
            if finishing { return nil }
            finishing = true
            lock.signal()
            return thread
        }
        guard let running, pthread_equal(running, pthread_self()) == 0 else { return }
        pthread_join(running, nil)
        // A joined thread's id may be reused by any later thread: it is no longer ours.
        lock.withLock { thread = nil }
    }

    private func loop() {
        SerialWorker.markCurrentThread()
        while true {
            let job: (@Sendable () -> Void)? = lock.withLock {
                while jobs.isEmpty && !finishing { _ = lock.wait() }
                return jobs.isEmpty ? nil : jobs.removeFirst()
            }
            guard let job else { return }
            job()
        }
    }
}

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// Starts a joinable pthread running `body`; nil (and `body` not run) when no thread can be
/// started.
package func startThread(_ body: @escaping () -> Void) -> pthread_t? {
    var thread = pthread_t()
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    let rc = pthread_create(&thread, nil, { arg in
        guard let arg else { return nil }
        let body = Unmanaged<ThreadBody>.fromOpaque(arg).takeRetainedValue()
        body.run()
        return nil
    }, box)
    if rc != 0 {
        Unmanaged<ThreadBody>.fromOpaque(box).release()
        return nil
    }
    return thread
}

/// Starts a joinable pthread running `body`; when no thread can be started the body runs
/// inline (so work is never lost) and nil is returned. Callers must not hold a lock `body` takes.
package func spawnThread(_ body: @escaping () -> Void) -> pthread_t? {
    if let thread = startThread(body) { return thread }
    body()
    return nil
}

/// A value computed on another thread; `join()` waits for it. Used to fetch the next page
/// while the current one is written. `join()` may be called again (a cleanup path after a
/// failure): the thread is joined once, since joining a joined pthread is undefined (it can
/// wait forever on a thread that reused the id); later calls give the same result. Joined
/// from one thread (the run's).
package final class Prefetch<T>: @unchecked Sendable {
    private let box = ResultBox<T>()
    private var thread: pthread_t?

    package init(_ body: @escaping () throws -> T) {
        let box = self.box
        thread = spawnThread { box.result = Result { try body() } }
    }

    package func join() throws -> T {
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
        guard let result = box.result else { throw StoreError(.internal, "A background fetch produced no result") }
        return try result.get()
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}
