// Store configs: the `{"isGlobalStore", "storeName", "key", "kdfIter"}` a host opens a store
// with (StoreConfig.parse, which also vets the key text), and the userstore.json /
// globalstore.json documents of soups (loadStoreConfig). A refused document leaves the store as
// it was; an accepted one registers every soup it names.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, path) = fuzzFixtureStore("store_config")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStoreConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    if let config = fuzzTry("StoreConfig.parse", { try StoreConfig.parse(text) }) {
        // The name becomes a file name: it must stay one component.
        if config.name.contains("/") || config.name.hasPrefix(".") || config.name.isEmpty {
            fuzzFail("store name '\(config.name)' accepted")
        }
        _ = StoreRegistry.path(root: fuzzRoot, config: config)
    }
    let before = fuzzFingerprint(path)
    guard fuzzTry("loadStoreConfig", { try store.loadStoreConfig(json: text) }) != nil else {
        if fuzzFingerprint(path) != before { fuzzFail("a refused store config changed the store") }
        return 0
    }
    let doc = fuzzSetup("reparse") { try JSONDocument.parse(text) }
    // Every soup is checked before any is removed: a name may come twice (the second is skipped).
    var names: [String] = []
    for item in doc.root["soups"]?.elements ?? [] {
        guard let name = item["soupName"]?.string else { fuzzFail("accepted a soup without a name") }
        if !store.soupExists(name) { fuzzFail("soup '\(name)' of an accepted config is missing") }
        if name != fuzzSoup && !names.contains(name) { names.append(name) }
    }
    for name in names { fuzzSetup("removeSoup") { try store.removeSoup(name) } }
    return 0
}
