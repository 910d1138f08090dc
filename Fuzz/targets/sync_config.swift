// usersyncs.json / globalsyncs.json: `{"syncs": [{"syncName", "syncType", "soupName", "target",
// "options"}]}`. Every sync of an accepted document exists afterwards and reads back; a refused
// document is a handled error and creates none (all or nothing). The syncs made are deleted
// after each input.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, _) = fuzzFixtureStore("sync_config")
private let manager = fuzzSetup("sync manager") { try store.syncManager() }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSyncConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    let accepted = fuzzTry("loadSyncConfig", { try manager.loadSyncConfig(json: text) }) != nil
    // The store starts each input without syncs: a refused document must leave it so.
    if !accepted, let doc = try? JSONDocument.parse(text) {
        for item in doc.root["syncs"]?.elements ?? [] {
            if let name = item["syncName"]?.string, (try? manager.status(name: name)) ?? nil != nil {
                fuzzFail("a refused config created sync '\(name)'")
            }
        }
    }
    if accepted {
        let doc = fuzzSetup("reparse") { try JSONDocument.parse(text) }
        for item in doc.root["syncs"]?.elements ?? [] {
            guard let name = item["syncName"]?.string else { fuzzFail("accepted a sync without a name") }
            if fuzzTry("status", { try manager.status(name: name) }) == nil { fuzzFail("sync '\(name)' of an accepted config is missing") }
        }
    }
    // What an accepted document created is removed.
    fuzzSetup("cleanup") { try store.clearSoup(SyncStateStore.soupName) }
    return 0
}
