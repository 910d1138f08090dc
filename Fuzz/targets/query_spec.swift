// Query specs (exact, range, like, match, smart; paths, keys, order, page sizes, select paths):
// parsed and run on a soup with an index of every type, as querySoup (a cursor), queryPage
// and, for smart specs, runSmartQuery. Every answer is a handled error or JSON text, and a query
// never changes the store.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, path) = fuzzFixtureStore("query_spec")
private let before = fuzzFingerprint(path)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQuerySpec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let spec = fuzzString(data, size) else { return 0 }
    // The scanner's reading of a spec is jansson's, member for member, or the same error.
    let scanned = Result { try QuerySpec.parse(text: spec) }
    let tree = Result { () throws -> QuerySpec in
        let doc = try JSONDocument.parse(spec, what: "query spec")
        return try QuerySpec.parse(doc.root)
    }
    switch (scanned, tree) {
    case (.success(let a), .success(let b)):
        if String(reflecting: a) != String(reflecting: b) { fuzzFail("spec read as \(a) by the scanner, \(b) by jansson") }
    case (.failure(let a), .failure(let b)):
        if "\(a)" != "\(b)" { fuzzFail("spec refused with \(a) by the scanner, \(b) by jansson") }
    default:
        fuzzFail("spec: scanner \(scanned), jansson \(tree)")
    }
    if let out = fuzzTry("querySoup", { try store.querySoup(fuzzSoup, specJSON: spec) }) { fuzzExpectJSON(out, "querySoup") }
    if let out = fuzzTry("queryPage", { try store.queryPage(soup: fuzzSoup, specJSON: spec, page: Int64(size % 3)) }) {
        fuzzExpectJSON(out, "queryPage")
    }
    if let out = fuzzTry("runSmartQuery", { try store.runSmartQuery(specJSON: spec) }) { fuzzExpectJSON(out, "runSmartQuery") }
    store.closeCursors(owner: 0)
    if size % 64 == 0, fuzzFingerprint(path) != before { fuzzFail("a query changed the store") }
    return 0
}
