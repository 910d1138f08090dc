// Upsert entries: the first line is the external id path (empty: none), the rest the entries
// (an array of objects, or one object). An upsert that fails leaves the store as it was; one
// that succeeds returns a JSON array with one stored entry per input entry. Differentially:
// entries stored from their scanned text answer byte for byte as the tree path does (the ids and
// times masked: the two runs get different ones), and fail with the same message.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, path) = fuzzFixtureStore("upsert")
/// The same fixture, written through the tree path only: both stores see every input, so their
/// ids stay equal.
private let (treeStore, _) = fuzzFixtureStore("upsert-tree")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUpsert(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    let (externalIdPath, entries) = fuzzSplit(text)
    let before = fuzzFingerprint(path)
    treeStore.scansHostUpserts = false
    func run(_ store: SmartStore) -> (TextBuffer?, String) {
        do {
            return (try store.upsert(soup: fuzzSoup, entriesJSON: entries, externalIdPath: externalIdPath.isEmpty ? nil : externalIdPath), "")
        } catch {
            return (nil, "\(error)")
        }
    }
    func reset() {
        fuzzSetup("reset") {
            for s in [store, treeStore] {
                try s.clearSoup(fuzzSoup)
                _ = try s.upsert(soup: fuzzSoup, entriesJSON: fuzzSoupEntries)
            }
        }
    }
    let (tree, treeError) = run(treeStore)
    let (scanned, scannedError) = run(store)
    if treeError != scannedError { fuzzFail("the scanned upsert failed with \(scannedError), the tree path with \(treeError)") }
    if let tree, let scanned, fuzzMaskTimes(tree.string) != fuzzMaskTimes(scanned.string) {
        fuzzFail("the scanned upsert answered \(scanned.string.prefix(300)), the tree path \(tree.string.prefix(300))")
    }
    guard let out = scanned else {
        if fuzzFingerprint(path) != before { fuzzFail("a failed upsert changed the store") }
        if tree != nil { reset() }
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
    reset()
    return 0
}

/// `text` with the modification times masked (the two stores write at different times).
private func fuzzMaskTimes(_ text: String) -> String {
    let key = Array("\"_soupLastModifiedDate\":".utf8)
    let bytes = Array(text.utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var i = 0
    while i < bytes.count {
        if bytes[i] == key[0], i + key.count <= bytes.count, Array(bytes[i..<i + key.count]) == key {
            out.append(contentsOf: key)
            i += key.count
            while i < bytes.count, bytes[i] == UInt8(ascii: "-") || (bytes[i] >= 0x30 && bytes[i] <= 0x39) { i += 1 }
            out.append(UInt8(ascii: "#"))
        } else {
            out.append(bytes[i])
            i += 1
        }
    }
    return String(decoding: out, as: UTF8.self)
}
