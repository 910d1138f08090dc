// QueryPageScanner, differentially: a sync down reads a `query` page with the scanner when it
// can and with jansson otherwise, so both must read the same page. For every input:
// - a page the scanner accepts must be valid JSON for jansson (or hold a record the scanner left
//   to the tree path that jansson refuses alone: the engine then fails that record as SERVER);
// - for an accepted page: the same totalSize, done and nextRecordsUrl, the same record count,
//   each record's range exactly the record's text, and for records read from their text the
//   value at every plan path equal to what SoupPath projects from the tree (kind and value, reals
//   bit for bit), the modification date parsed the same way.
// The scanner declining a page is always allowed: the tree path then reads it.
import Glibc
@testable import SyncStoreCore

/// Index paths as a soup would have them (nested, a prefix of another, one on an object), the
/// external id path and the modification date field, as `EntryWriter.scanPlan` builds them.
private let paths: [[String]] = [["Name"], ["Account", "Name"], ["Account", "Id"], ["Account"], ["Amount"],
                                 ["a", "b", "c"], ["IsDeleted"], ["Id"], ["LastModifiedDate"]]
private let modifiedSlot = paths.count - 1
private let plan: ScanPlan = {
    guard let plan = ScanPlan(paths: paths, reservedKeys: LocalFlags.storeKeys) else { fuzzFail("plan too wide") }
    return plan
}()

private func parse(_ bytes: ArraySlice<UInt8>) -> JSONDocument? {
    bytes.withUnsafeBytes { raw in
        guard let base = raw.baseAddress, raw.count > 0 else { return nil }
        return try? JSONDocument.parse(bytes: base, length: raw.count)
    }
}

/// A scanned value and the projected JSON value, in one comparable form.
private func describe(_ page: ScannedPage, _ value: ScannedValue) -> String {
    switch value {
    case .null: return "null"
    case .int(let v): return "i:\(v)"
    case .real(let v): return "r:\(v.bitPattern)"
    case .bool(let b): return "b:\(b)"
    case .text, .decoded: return "s:" + (page.withText(value) { String(decoding: $0, as: UTF8.self) } ?? "?")
    }
}

private func describe(_ projected: SoupPath.Projected) -> String {
    withExtendedLifetime(projected) {
        guard let v = projected.json else { return "null" }
        switch v.kind {
        case .null: return "null"
        case .string: return "s:" + (v.string ?? "")
        case .integer: return "i:\(v.int64 ?? 0)"
        case .real: return "r:\((v.double ?? 0).bitPattern)"
        case .bool: return "b:\(v.bool ?? false)"
        case .object, .array: return "tree"
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQueryPage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let page = ScannedPage.scan(bytes, plan: plan)
    guard let page else { return 0 }  // declined: the tree path reads the page
    guard let doc = parse(bytes[...]) else {
        let refusedAlone = page.records.contains { $0.needsTree && parse(bytes[Int($0.start)..<Int($0.end)]) == nil }
        if !refusedAlone { fuzzFail("the scanner accepted a page jansson refuses") }
        return 0
    }
    guard let records = doc.root["records"], records.isArray else { fuzzFail("the scanner accepted a page without a records array") }
    if page.records.count != records.count { fuzzFail("record count: scanner \(page.records.count), jansson \(records.count)") }
    if page.totalSize != doc.root["totalSize"]?.int64 { fuzzFail("totalSize: scanner \(String(describing: page.totalSize))") }
    if page.done != (doc.root["done"]?.bool ?? true) { fuzzFail("done: scanner \(page.done)") }
    if page.nextRecordsUrl != doc.root["nextRecordsUrl"]?.string { fuzzFail("nextRecordsUrl: scanner \(String(describing: page.nextRecordsUrl))") }
    for (k, record) in records.elements.enumerated() {
        let r = page.records[k]
        guard r.start >= 0, r.start < r.end, Int(r.end) <= bytes.count,
              let slice = parse(bytes[Int(r.start)..<Int(r.end)]) else {
            fuzzFail("record \(k): its range \(r.start)..<\(r.end) is not the record's text")
        }
        if slice.root.dump() != record.dump() { fuzzFail("record \(k): its range holds another value") }
        if r.needsTree { continue }
        if !record.isObject { fuzzFail("record \(k) is not an object but is read from its text") }
        for (slot, path) in paths.enumerated() {
            let scanned = describe(page, page.value(record: k, slot: slot))
            let projected = describe(SoupPath.project(record, path[...]))
            // An index on an object stores its dump: such records must go to the tree path.
            if projected == "tree" { fuzzFail("record \(k) path \(path): an object or array read from the text") }
            if scanned != projected { fuzzFail("record \(k) path \(path): scanner \(scanned), tree \(projected)") }
        }
        let modifiedScanned = page.withText(page.value(record: k, slot: modifiedSlot)) { Timestamp.parse(bytes: $0) } ?? nil
        let modifiedTree = record[paths[modifiedSlot][0]]?.string.flatMap(Timestamp.parse)
        if modifiedScanned != modifiedTree {
            fuzzFail("record \(k): modification date scanner \(String(describing: modifiedScanned)), tree \(String(describing: modifiedTree))")
        }
    }
    return 0
}
