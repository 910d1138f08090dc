import Glibc

/// What one committed write transaction changed, per soup, and who made it: what the store
/// tells its companions after each commit (`StoreCompanion.didCommit`), never for a rolled-back
/// one. Entry ids are kept up to `idLimit` per soup and kind; the counts are always whole.
package struct StoreChange: Sendable {
    /// Who wrote.
    package enum Origin: Sendable, Equatable {
        /// A host call through a store handle (0: the Swift API without one).
        case host(owner: Int)
        /// The engine (a sync run, a ghost clean): the sync's id and name when known.
        case engine(run: Int64?, name: String? = nil)
        /// Another process writing the same file (seen through `SoupVersions`).
        case otherProcess
    }

    package struct SoupChange: Sendable, Equatable {
        package var inserted = Ids()
        package var updated = Ids()
        package var deleted = Ids()
        /// Every entry was removed (clearSoup): no ids are listed.
        package var cleared = false
        /// The soup itself was removed.
        package var dropped = false
        /// Another process changed the soup: which entries is not known.
        package var unknown = false

        package init(unknown: Bool = false) { self.unknown = unknown }

        /// Adds what a later commit changed in the same soup.
        package mutating func merge(_ later: SoupChange) {
            inserted.add(later.inserted)
            updated.add(later.updated)
            deleted.add(later.deleted)
            cleared = cleared || later.cleared
            dropped = dropped || later.dropped
            unknown = unknown || later.unknown
        }
    }

    /// A count and the first `StoreChange.keptLimit` ids (a notice shows the first `idLimit`).
    package struct Ids: Sendable, Equatable {
        package private(set) var count = 0
        package private(set) var ids: [Int64] = []
        /// Ids were left out (more than the limit).
        package var cut: Bool { count > ids.count }

        mutating func add(_ id: Int64) {
            count += 1
            if ids.count < StoreChange.keptLimit { ids.append(id) }
        }

        mutating func add(_ other: Ids) {
            count += other.count
            ids.append(contentsOf: other.ids.prefix(StoreChange.keptLimit - ids.count))
        }
    }

    /// The most ids a notice lists.
    package static let idLimit = 1000
    /// The most ids a change keeps: a query listener judges a commit of up to this many entries
    /// from those entries alone (a sync down commits up to 10,000 records a transaction).
    package static let keptLimit = 20_000

    /// Commits of this store in this process, in order (a companion told of two commits on two
    /// threads can order them).
    package let sequence: Int64
    package let origin: Origin
    package let soups: [String: SoupChange]
    /// How many commits this change tells of (more than 1 once merged).
    package let commits: Int

    package init(sequence: Int64, origin: Origin, soups: [String: SoupChange], commits: Int = 1) {
        self.sequence = sequence
        self.origin = origin
        self.soups = soups
        self.commits = commits
    }

    /// This change followed by `later`, as one: the later sequence and origin, every soup's
    /// changes added up.
    package func merged(with later: StoreChange) -> StoreChange {
        var soups = self.soups
        for (name, part) in later.soups { soups[name, default: SoupChange()].merge(part) }
        return StoreChange(sequence: max(sequence, later.sequence), origin: later.origin, soups: soups,
                           commits: commits + later.commits)
    }
}

/// Collects one write transaction's changes (under the store's write lock).
final class ChangeRecorder {
    var soups: [String: StoreChange.SoupChange] = [:]

    /// An entry writer's inserts and updates (it keeps them itself: no lookup per entry).
    func merge(_ soup: String, _ change: StoreChange.SoupChange) {
        guard change.inserted.count + change.updated.count > 0 else { return }
        soups[soup, default: .init()].inserted.add(change.inserted)
        soups[soup, default: .init()].updated.add(change.updated)
    }
    func deleted(_ soup: String, _ ids: StoreChange.Ids) {
        guard ids.count > 0 else { return }
        soups[soup, default: .init()].deleted.add(ids)
    }
    func cleared(_ soup: String) { soups[soup, default: .init()].cleared = true }
    func dropped(_ soup: String) { soups[soup, default: .init()].dropped = true }
}

/// Who the writes made on a thread are by, when the code that writes does not say: a sync run
/// sets it around its work (`SmartStore.write` without an origin reads it).
package enum WriteOrigin {
    private final class Box {
        let origin: StoreChange.Origin
        init(_ origin: StoreChange.Origin) { self.origin = origin }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var current: StoreChange.Origin? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Box>.fromOpaque(raw).takeUnretainedValue().origin
    }

    /// Runs `body` with the thread's writes made by `origin`.
    package static func with<T>(_ origin: StoreChange.Origin, _ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(key)
        let box = Unmanaged.passRetained(Box(origin))
        pthread_setspecific(key, box.toOpaque())
        defer {
            pthread_setspecific(key, previous)
            box.release()
        }
        return try body()
    }
}
