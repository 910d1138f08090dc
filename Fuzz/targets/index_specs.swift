// Index specs: the first line registers a soup, the rest alters it (re-indexing its entries).
// A refused spec leaves the store as it was; an accepted one reads back as the same list, and
// the soup answers a range query on each of its paths.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, path) = fuzzFixtureStore("index_specs")

private func readBack() -> [IndexSpec]? {
    fuzzTry("indexSpecs") { try store.indexSpecs("s") }
}

private func queryEachPath() {
    for spec in readBack() ?? [] {
        let q = "{\"queryType\":\"range\",\"indexPath\":\(fuzzJSONString(spec.path)),\"orderPath\":\(fuzzJSONString(spec.path)),\"pageSize\":3}"
        if let out = fuzzTry("range query on \(spec.path)", { try store.queryPage(soup: "s", specJSON: q, page: 0) }) {
            fuzzExpectJSON(out, "range query")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIndexSpecs(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    let (first, second) = fuzzSplit(text)
    let empty = fuzzFingerprint(path)
    guard fuzzTry("registerSoup", { try store.registerSoup("s", specsJSON: first) }) != nil else {
        if fuzzFingerprint(path) != empty { fuzzFail("a refused registerSoup changed the store") }
        return 0
    }
    // Accepted: the specs read back as parsed.
    let parsed = fuzzSetup("reparse") { try IndexSpec.parseList(JSONDocument.parse(first).root) }
    if readBack() != parsed { fuzzFail("index specs read back differently after registerSoup") }
    fuzzTry("upsert") { _ = try store.upsert(soup: "s", entriesJSON: fuzzSoupEntries) }
    queryEachPath()
    if !second.isEmpty {
        let registered = fuzzFingerprint(path)
        if fuzzTry("alterSoup", { try store.alterSoup("s", specsJSON: second, reIndexData: true) }) == nil {
            if fuzzFingerprint(path) != registered { fuzzFail("a refused alterSoup changed the store") }
        } else {
            let altered = fuzzSetup("reparse") { try IndexSpec.parseList(JSONDocument.parse(second).root) }
            if readBack() != altered { fuzzFail("index specs read back differently after alterSoup") }
            queryEachPath()
        }
    }
    fuzzSetup("removeSoup") { try store.removeSoup("s") }
    return 0
}
