import Glibc

/// A thread that runs jobs one after another (the per-store sync worker).
final class SerialWorker: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [@Sendable () -> Void] = []
    private var finishing = false
    private var thread: pthread_t?
    private var started = false

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

    func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        if !started {
            started = true
            thread = spawnThread { [self] in self.loop() }
        }
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Whether the caller is this worker's thread (it must not wait for itself).
    var isCurrentThread: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Runs the queued jobs, then ends the thread and waits for it.
    func finish() {
        pthread_mutex_lock(mutex)
        finishing = true
        let wasStarted = started
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        if wasStarted, let thread, !pthread_equal(thread, pthread_self()).boolValue { pthread_join(thread, nil) }
    }

    private func loop() {
        while true {
            pthread_mutex_lock(mutex)
            while jobs.isEmpty && !finishing { pthread_cond_wait(condition, mutex) }
            if jobs.isEmpty {
                pthread_mutex_unlock(mutex)
                return
            }
            let job = jobs.removeFirst()
            pthread_mutex_unlock(mutex)
            job()
        }
    }
}

extension Int32 { var boolValue: Bool { self != 0 } }

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// Starts a joinable pthread running `body`; when no thread can be started the body runs
/// inline (so work is never lost) and nil is returned.
func spawnThread(_ body: @escaping () -> Void) -> pthread_t? {
    var thread = pthread_t()
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    let rc = pthread_create(&thread, nil, { arg in
        guard let arg else { return nil }
        let body = Unmanaged<ThreadBody>.fromOpaque(arg).takeRetainedValue()
        body.run()
        return nil
    }, box)
    if rc != 0 {
        Unmanaged<ThreadBody>.fromOpaque(box).takeRetainedValue().run()
        return nil
    }
    return thread
}

/// A value computed on another thread; `join()` waits for it. Used to fetch the next page
/// while the current one is written.
final class Prefetch<T>: @unchecked Sendable {
    private let box = ResultBox<T>()
    private let thread: pthread_t?

    init(_ body: @escaping () throws -> T) {
        let box = self.box
        thread = spawnThread { box.result = Result { try body() } }
    }

    func join() throws -> T {
        if let thread { pthread_join(thread, nil) }
        guard let result = box.result else { throw StoreError(.internal, "A background fetch produced no result") }
        return try result.get()
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}
