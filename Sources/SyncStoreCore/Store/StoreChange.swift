/// What one committed write transaction changed, per soup, and who made it: what the store
/// tells its companions after each commit (`StoreCompanion.didCommit`), never for a rolled-back
/// one. Entry ids are kept up to `idLimit` per soup and kind; the counts are always whole.
package struct StoreChange: Sendable {
    /// Who wrote.
    package enum Origin: Sendable, Equatable {
        /// A host call through a store handle (0: the Swift API without one).
        case host(owner: Int)
        /// The engine (a sync run, a ghost clean): `run` is the sync's id when known.
        case engine(run: Int64?)
    }

    package struct SoupChange: Sendable, Equatable {
        package var inserted = Ids()
        package var updated = Ids()
        package var deleted = Ids()
        /// Every entry was removed (clearSoup): no ids are listed.
        package var cleared = false
        /// The soup itself was removed.
        package var dropped = false
    }

    /// A count and the first `StoreChange.idLimit` ids.
    package struct Ids: Sendable, Equatable {
        package private(set) var count = 0
        package private(set) var ids: [Int64] = []
        /// Ids were left out (more than the limit).
        package var cut: Bool { count > ids.count }

        mutating func add(_ id: Int64) {
            count += 1
            if ids.count < StoreChange.idLimit { ids.append(id) }
        }

        mutating func add(_ other: Ids) {
            count += other.count
            ids.append(contentsOf: other.ids.prefix(StoreChange.idLimit - ids.count))
        }
    }

    package static let idLimit = 1000

    /// Commits of this store in this process, in order (a companion told of two commits on two
    /// threads can order them).
    package let sequence: Int64
    package let origin: Origin
    package let soups: [String: SoupChange]
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
