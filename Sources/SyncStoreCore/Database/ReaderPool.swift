/// Read-only connections handed to one caller at a time. WAL lets them read while the writer
/// holds a long transaction; each read sees the last committed state.
final class ReaderPool: @unchecked Sendable {
    private let path: String
    private let lock = Lock()
    private var idle: [Connection] = []
    private let maxIdle: Int

    init(path: String, maxIdle: Int = 4) {
        self.path = path
        self.maxIdle = maxIdle
    }

    func withReader<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try lock.withLock { idle.popLast() } ?? Connection(path: path, readOnly: true)
        defer {
            lock.withLock { if idle.count < maxIdle { idle.append(connection) } }
        }
        return try body(connection)
    }

    /// Drops idle connections (their cached statements may name dropped tables).
    func drain() { lock.withLock { idle.removeAll() } }
}
