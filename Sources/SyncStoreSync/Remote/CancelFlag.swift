import SyncStoreCore
/// A cancellation flag shared between the sync that owns a transfer and whoever stops it.
package final class CancelFlag: @unchecked Sendable {
    private let lock = Lock()
    private var cancelled = false
    package init() {}
    package var isCancelled: Bool { lock.withLock { cancelled } }
    package func cancel() { lock.withLock { cancelled = true } }
}
