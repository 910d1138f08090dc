// usersyncs.json / globalsyncs.json: `{"syncs": [{"syncName", "syncType", "soupName", "target",
// "options"}]}`. Every sync of an accepted document exists afterwards and reads back; a refused
// document is a handled error. The syncs made are deleted after each input.
import Glibc
@testable import SyncStoreCore

private let (store, _) = fuzzFixtureStore("sync_config")
private let manager = fuzzSetup("sync manager") { try store.syncManager() }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSyncConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    let accepted = fuzzTry("loadSyncConfig", { try manager.loadSyncConfig(json: text) }) != nil
    if accepted {
        let doc = fuzzSetup("reparse") { try JSONDocument.parse(text) }
        for item in doc.root["syncs"]?.elements ?? [] {
            guard let name = item["syncName"]?.string else { fuzzFail("accepted a sync without a name") }
            if fuzzTry("status", { try manager.status(name: name) }) == nil { fuzzFail("sync '\(name)' of an accepted config is missing") }
        }
    }
    // Whatever was created (a refused document may have created its first syncs: see the note
    // in docs/fuzzing.md) is removed.
    fuzzSetup("cleanup") { try store.clearSoup(SyncStateStore.soupName) }
    return 0
}
