import SyncStoreCore
/// A cancellation flag shared between the sync that owns a transfer and whoever stops it.
public final class CancelFlag: @unchecked Sendable {
    private let lock = Lock()
    private var cancelled = false
    public init() {}
    public var isCancelled: Bool { lock.withLock { cancelled } }
    public func cancel() { lock.withLock { cancelled = true } }
}
