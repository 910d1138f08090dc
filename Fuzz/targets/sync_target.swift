// Sync targets and options as createSyncDown / createSyncUp take them: the first byte picks
// down or up, the first line after it is the options JSON (empty: none), the rest the target
// JSON (every down type: soql, sosl, mru, refresh, parent_children, briefcase, layout,
// metadata; up: collection, single, parent_children). A created sync reads back with the same
// soup and options; nothing is ever run (no server).
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, _) = fuzzFixtureStore("sync_target")
private let manager = fuzzSetup("sync manager") { try store.syncManager() }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSyncTarget(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0, let text = fuzzString(data + 1, size - 1) else { return 0 }
    let (options, target) = fuzzSplit(text)
    let up = data[0] & 1 == 1
    let name: String? = data[0] & 2 == 2 ? "s" : nil
    let created = fuzzTry(up ? "createSyncUp" : "createSyncDown") { () -> SyncState in
        if up {
            return try manager.createSyncUp(targetJSON: target.isEmpty ? nil : target, soupName: fuzzSoup,
                                            optionsJSON: options.isEmpty ? nil : options, name: name)
        }
        return try manager.createSyncDown(targetJSON: target, soupName: fuzzSoup, optionsJSON: options.isEmpty ? nil : options, name: name)
    }
    if let created {
        guard let read = fuzzTry("status", { try manager.status(id: created.id) }) ?? nil else { fuzzFail("a created sync is missing") }
        // Compared as JSON values: a parent_children up target is kept as the host wrote it.
        func same(_ a: String, _ b: String) -> Bool { (try? JSONDocument.parse(a).root.dump()) == (try? JSONDocument.parse(b).root.dump()) }
        if read.soupName != fuzzSoup || !same(read.optionsJSON, created.optionsJSON) || !same(read.targetJSON, created.targetJSON) {
            fuzzFail("a created sync reads back differently: \(read.soupName) \(read.optionsJSON) \(read.targetJSON) vs \(created.optionsJSON) \(created.targetJSON)")
        }
        fuzzSetup("delete") { try manager.delete(id: created.id) }
    }
    return 0
}
