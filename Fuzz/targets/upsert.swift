// Upsert entries: the first line is the external id path (empty: none), the rest the entries
// (an array of objects, or one object). An upsert that fails leaves the store as it was; one
// that succeeds returns a JSON array with one stored entry per input entry.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, path) = fuzzFixtureStore("upsert")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUpsert(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    let (externalIdPath, entries) = fuzzSplit(text)
    let before = fuzzFingerprint(path)
    guard let out = fuzzTry("upsert", {
        try store.upsert(soup: fuzzSoup, entriesJSON: entries, externalIdPath: externalIdPath.isEmpty ? nil : externalIdPath)
    }) else {
        if fuzzFingerprint(path) != before { fuzzFail("a failed upsert changed the store") }
        return 0
    }
    fuzzExpectJSON(out, "upsert")
    let stored = fuzzSetup("parse result") { try JSONDocument.parse(out.string) }
    let given = fuzzSetup("parse input") { try JSONDocument.parse(entries) }
    let expected = given.root.isArray ? given.root.count : 1
    if !stored.root.isArray || stored.root.count != expected {
        fuzzFail("upsert of \(expected) entries returned \(stored.root.count)")
    }
    // Back to the fixture's rows so inputs do not depend on each other.
    fuzzSetup("reset") {
        try store.clearSoup(fuzzSoup)
        _ = try store.upsert(soup: fuzzSoup, entriesJSON: fuzzSoupEntries)
    }
    return 0
}
