import CSQLite
import Glibc

/// What a layer above the store attaches to each open store (the sync engine does): the one seam
/// through which the store hears of that layer. The store calls it; it never names its type.
///
/// A companion is made by the factory registered with `StoreCompanions.register` when the store
/// opens, or on first use (`SmartStore.companion(_:make:)`). Hooks run on the caller's thread;
/// the `inside` ones in the write transaction of the call (what they write commits or rolls back
/// with it).
package protocol StoreCompanion: AnyObject, Sendable {
    /// Once per host upsert call, inside its transaction, before any entry is stored, with at
    /// least every entry that holds one of `hostKeys` at its top level (the others may be
    /// stored from their text without ever being parsed).
    func hostWillUpsert(_ entries: [JSON], soup: SoupInfo, inside db: Connection) throws

    /// The top-level keys that make a host entry one `hostWillUpsert` must see.
    var hostKeys: [String] { get }

    /// For each entry of a host upsert that replaces stored entry `existing`, inside the
    /// transaction, before it is stored: the companion may change `entry` (what a read-modify-
    /// write made from an older copy must keep). `stored` reads the stored entry's members.
    func hostWillReplace(_ entry: JSON, existing: Int64, soup: SoupInfo, stored: StoredEntry) throws

    /// A handle of the store is closing (`last`: the store's last one): work it started ends.
    func handleClosing(_ owner: Int, last: Bool) throws

    /// Whether the calling thread is one the companion calls host code on (a callback of it
    /// must not close its store or change its key: it would wait for itself).
    var isCallbackThread: Bool { get }

    /// Runs `body` (a change of key) with the companion's work paused; BUSY while it cannot be.
    func paused<T>(_ body: () throws -> T) throws -> T

    /// After each commit that changed entries or soups, on the writing thread, outside the
    /// store's locks (it may read or write the store); in commit order per thread, and
    /// `change.sequence` orders commits across threads.
    func didCommit(_ change: StoreChange)
}

extension StoreCompanion {
    package func didCommit(_ change: StoreChange) {}
    package var hostKeys: [String] { [] }
}

/// The stored copy of the entry a host write replaces, read on demand (most writes never look).
package struct StoredEntry {
    package let db: Connection
    package let table: String
    package let id: Int64

    /// The stored entry's top-level member `key`, nil when it has none.
    package func member(_ key: String) throws -> JSONDocument? {
        let statement = try db.cached("SELECT \(SoupPath.jsonExtract(key)) FROM \(table) WHERE id = ?")
        defer { statement.reset() }
        try statement.bind([.int(id)])
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return try? JSONDocument.parse(statement.text(0))
    }

    /// The stored entry's text value at `path` (nil when absent or not text).
    package func text(at path: String) throws -> String? {
        let statement = try db.cached("SELECT \(SoupPath.jsonExtract(path)) FROM \(table) WHERE id = ?")
        defer { statement.reset() }
        try statement.bind([.int(id)])
        guard try statement.step(), statement.type(0) == SQLITE_TEXT else { return nil }
        return statement.text(0)
    }
}

/// The companions every store gets when it opens, and the files beside a store's database that
/// they keep (removed with the store).
package enum StoreCompanions {
    package typealias Factory = @Sendable (SmartStore) throws -> any StoreCompanion

    private static let lock = Lock()
    nonisolated(unsafe) private static var factories: [ObjectIdentifier: Factory] = [:]
    nonisolated(unsafe) private static var suffixes: [String] = []

    /// Registers (once per type) the companion every store opened from now on gets, and the
    /// suffixes of the files it keeps beside the database.
    package static func register<T: StoreCompanion>(_ type: T.Type, sideFiles: [String], make: @escaping Factory) {
        lock.withLock {
            guard factories[ObjectIdentifier(type)] == nil else { return }
            factories[ObjectIdentifier(type)] = make
            suffixes.append(contentsOf: sideFiles)
        }
    }

    package static var registered: [(ObjectIdentifier, Factory)] { lock.withLock { factories.map { ($0.key, $0.value) } } }
    package static var sideFileSuffixes: [String] { lock.withLock { suffixes } }
}
