// QueryPageScanner, differentially: a sync down reads a `query` page with the scanner when it
// can and with jansson otherwise, so both must read the same page. For every input:
// - a page the scanner accepts must be valid JSON for jansson (or hold a record the scanner left
//   to the tree path that jansson refuses alone: the engine then fails that record as SERVER);
// - for an accepted page: the same totalSize, done and nextRecordsUrl, the same record count,
//   each record's range exactly the record's text, and for records read from their text the
//   value at every plan path equal to what SoupPath projects from the tree (kind and value, reals
//   bit for bit: ScannedPage.disagreement), the modification date parsed the same way.
// The scanner declining a page is always allowed: the tree path then reads it.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync
import SyncStoreSupport

/// Index paths as a soup would have them (nested, a prefix of another, one on an object), the
/// external id path and the modification date field, as `EntryWriter.scanPlan` builds them.
private let paths: [[String]] = [["Name"], ["Account", "Name"], ["Account", "Id"], ["Account"], ["Amount"],
                                 ["a", "b", "c"], ["IsDeleted"], ["Id"], ["LastModifiedDate"]]
private let modifiedSlot = paths.count - 1
private let plan: ScanPlan = {
    guard let plan = ScanPlan(paths: paths, reservedKeys: LocalFlags.storeKeys) else { fuzzFail("plan too wide") }
    return plan
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQueryPage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The engine's own differential check (also used by its tests): accept/reject, page fields,
    // each record's text, and the value at every plan path.
    if let difference = ScannedPage.disagreement(bytes, plan: plan) { fuzzFail(difference) }
    // The modification date, as the sync down reads it from each path.
    guard let page = ScannedPage.scan(bytes, plan: plan),
          let doc = try? RestClient.parse(bytes, method: "GET", path: "query"),
          let records = doc.root["records"] else { return 0 }
    for (k, record) in records.elements.enumerated() where !page.records[k].needsTree {
        let modifiedScanned = page.withText(page.value(record: k, slot: modifiedSlot)) { Timestamp.parse(bytes: $0) } ?? nil
        let modifiedTree = record[paths[modifiedSlot][0]]?.string.flatMap(Timestamp.parse)
        if modifiedScanned != modifiedTree {
            fuzzFail("record \(k): modification date scanner \(String(describing: modifiedScanned)), tree \(String(describing: modifiedTree))")
        }
    }
    return 0
}
