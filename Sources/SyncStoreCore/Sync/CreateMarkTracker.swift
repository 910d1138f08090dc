/// Which soups are known to hold no entry with a create in flight (`__sync_create_sent__` on a
/// dirty entry), so a sync down can skip the lost-creates scan over the whole soup
/// (docs/sync.md#exactly-once-creates), which otherwise makes every reSync cost a full scan.
/// Marks come from this store's sync ups (one process at a time runs a store's syncs: the sync
/// lock) and, rarely, from a host writing an entry that holds one; both forget what is known.
/// A soup is known clean only when no forgetting happened while it was scanned (the generation).
final class CreateMarkTracker: @unchecked Sendable {
    private let lock = Lock()
    private var clean = Set<String>()
    private var generation = 0

    /// The generation to pass to `scanned` after a scan that starts now.
    func beginScan() -> Int { lock.withLock { generation } }

    func isKnownClean(_ soup: String) -> Bool { lock.withLock { clean.contains(soup) } }

    /// A scan begun at `generation` found no create in flight in `soup`.
    func scannedClean(_ soup: String, generation: Int) {
        lock.withLock { if self.generation == generation { clean.insert(soup) } }
    }

    /// Marks may exist anywhere again (a sync up starts, a host wrote a mark).
    func forget() {
        lock.withLock {
            generation += 1
            clean.removeAll()
        }
    }
}
