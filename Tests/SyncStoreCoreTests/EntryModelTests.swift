// docs/smartstore.md — Upsert, external-id upsert, remove, clear, failed batches and reopening,
// checked step by step against a plain Swift model (ids from 1, never reused; a failed call
// changes nothing). Seeded, so a failure reproduces.
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/smartstore.md
final class EntryModelTests: StoreTestCase {
    func testRandomOperationsMatchTheModel() throws {
        var random = SeededRandom(state: 7)
        try register("e", #"[{"path":"k","type":"string"},{"path":"t","type":"full_text"}]"#)
        var model: [Int64: (k: String, v: Int)] = [:]
        var highest: Int64 = 0
        var s = try store
        var counter = 0
        func nextValue() -> Int { counter += 1; return counter }
        func key() -> String { "k\(Int.random(in: 0..<25, using: &random))" }

        for step in 0..<300 {
            let op = Int.random(in: 0..<100, using: &random)
            let context = "step \(step) op \(op)"
            switch op {
            case 0..<25: // create a batch
                let n = Int.random(in: 1...4, using: &random)
                let batch = (0..<n).map { _ in (key(), nextValue()) }
                let out = try entries(s.upsert(soup: "e", entriesJSON: try jsonText(batch.map { ["k": $0.0, "v": $0.1, "t": "w\($0.1)"] as [String: Any] })))
                let expectedIds = (1...Int64(n)).map { highest + $0 }
                XCTAssertEqual(ids(out), expectedIds, context)
                for (id, item) in zip(expectedIds, batch) { model[id] = (item.0, item.1) }
                highest += Int64(n)
            case 25..<40: // update by _soupEntryId
                guard let id = model.keys.randomElement(using: &random) else { continue }
                let v = nextValue()
                let k = model[id]?.k ?? ""
                let out = try entries(s.upsert(soup: "e", entriesJSON: try jsonText(["_soupEntryId": id, "k": k, "v": v, "t": "w\(v)"])))
                XCTAssertEqual(ids(out), [id], context)
                model[id] = (k, v)
            case 40..<55: // upsert by external id k
                let k = key()
                let v = nextValue()
                let matches = model.filter { $0.value.k == k }.keys.sorted()
                let call = { try entries(s.upsert(soup: "e", entriesJSON: try jsonText(["k": k, "v": v, "t": "w\(v)"]), externalIdPath: "k")) }
                if matches.count > 1 {
                    assertStoreError(.conflict, context) { try call() }
                } else {
                    let out = try call()
                    if let id = matches.first {
                        XCTAssertEqual(ids(out), [id], context)
                        model[id] = (k, v)
                    } else {
                        highest += 1
                        XCTAssertEqual(ids(out), [highest], context)
                        model[highest] = (k, v)
                    }
                }
            case 55..<65: // remove some ids (and a missing one)
                let victims = Array(model.keys.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)))
                try s.removeEntries(soup: "e", ids: victims + [highest + 1000])
                for id in victims { model[id] = nil }
            case 65..<72: // remove by query
                let k = key()
                let removed = try s.removeByQuery(soup: "e", specJSON: try jsonText(["queryType": "exact", "indexPath": "k", "matchKey": k, "pageSize": 1]))
                let victims = model.filter { $0.value.k == k }.keys
                XCTAssertEqual(removed, victims.count, context)
                for id in victims { model[id] = nil }
            case 72..<80: // a batch that fails on its last entry changes nothing
                let batch: [[String: Any]] = [["k": key(), "v": nextValue()], ["_soupEntryId": highest + 500, "k": "x"]]
                assertStoreError(.notFound, context) { try s.upsert(soup: "e", entriesJSON: try jsonText(batch)) }
            case 80..<84: // a failing update of an existing entry changes nothing
                guard let id = model.keys.randomElement(using: &random) else { continue }
                assertStoreError(.argument, context) {
                    try s.upsert(soup: "e", entriesJSON: try jsonText([["_soupEntryId": id, "k": "changed"], ["_soupEntryId": "bad"]]))
                }
            case 84..<90: // reopen: a new SmartStore object must continue the ids
                s = try reopenStore()
            case 90..<92:
                try s.clearSoup("e")
                model.removeAll()
            default: // remove the newest entry: its id must not come back
                if let newest = model.keys.max() { try s.removeEntries(soup: "e", ids: [newest]); model[newest] = nil }
            }
            // The store equals the model.
            let all = try query("e", #"{"queryType":"range","pageSize":100000}"#, on: s)
            XCTAssertEqual(all.ids, model.keys.sorted(), context)
            XCTAssertEqual(all.entries.compactMap { int($0["v"]) }, model.keys.sorted().compactMap { model[$0].map { Int64($0.v) } }, context)
            if all.ids != model.keys.sorted() { break }
            if step % 25 == 0 {
                // The full-text index agrees with the table.
                let text = try query("e", #"{"queryType":"match","matchKey":"w*","pageSize":100000}"#, on: s)
                XCTAssertEqual(text.ids, model.keys.sorted(), "full text, \(context)")
            }
        }
        XCTAssertGreaterThan(highest, 50, "the run should have created many entries")
    }
}
