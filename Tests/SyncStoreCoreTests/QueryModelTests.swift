// docs/queries.md#query-specs — Query specs checked against a plain Swift model: random entries, random
// exact / range / like specs on string, integer, floating and unindexed paths, both orders,
// every page of every cursor. Seeded, so a failure reproduces.
import XCTest
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

/// A small deterministic generator (SplitMix64).
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// docs/queries.md#query-specs
final class QueryModelTests: StoreTestCase {
    /// A model value: nil (missing), a string or a number.
    enum Value: Comparable {
        case text(String), number(Double)
        static func < (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case (.number(let x), .number(let y)): return x < y
            case (.text(let x), .text(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            case (.number, .text): return true   // SQLite: numbers sort before text
            case (.text, .number): return false
            }
        }
        var json: Any {
            switch self {
            case .text(let s): return s
            case .number(let d): return d == d.rounded() && abs(d) < 1e15 ? Int(d) as Any : d as Any
            }
        }
    }

    struct Row { let id: Int64; var fields: [String: Value] }

    func testRandomQueriesMatchTheModel() throws {
        var random = SeededRandom(state: 20261122)
        try register("m", #"[{"path":"s","type":"string"},{"path":"i","type":"integer"},{"path":"f","type":"floating"}]"#)
        let letters = ["a", "b", "c", "ab", "ba", "abc", "cab", "B", "%", "_"]
        let floats: [Double] = [-1.5, 0, 0.25, 2.5, 10, 100.125]
        var rows: [Row] = []
        var batch: [[String: Any]] = []
        for _ in 0..<180 {
            var fields: [String: Value] = [:]
            if Int.random(in: 0..<10, using: &random) > 0 { fields["s"] = .text(letters.randomElement(using: &random) ?? "a") }
            if Int.random(in: 0..<10, using: &random) > 0 { fields["i"] = .number(Double(Int.random(in: -5...12, using: &random))) }
            if Int.random(in: 0..<10, using: &random) > 0 { fields["f"] = .number(floats.randomElement(using: &random) ?? 0) }
            if Int.random(in: 0..<10, using: &random) > 0 { fields["u"] = .number(Double(Int.random(in: -3...3, using: &random))) }
            var entry: [String: Any] = [:]
            for (k, v) in fields { entry[k] = v.json }
            batch.append(entry)
            rows.append(Row(id: Int64(rows.count + 1), fields: fields))
        }
        XCTAssertEqual(ids(try upsert("m", try jsonText(batch))), rows.map(\.id))

        let paths = ["s", "i", "f", "u"]
        func randomKey(_ path: String) -> Value {
            switch path {
            case "s": return .text(letters.randomElement(using: &random) ?? "a")
            case "f": return .number(floats.randomElement(using: &random) ?? 0)
            default: return .number(Double(Int.random(in: -6...13, using: &random)))
            }
        }
        for round in 0..<150 {
            let path = paths.randomElement(using: &random) ?? "s"
            let orderPath = Bool.random(using: &random) ? path : (paths.randomElement(using: &random) ?? "i")
            let descending = Bool.random(using: &random)
            let pageSize = [1, 3, 7, 50, 500].randomElement(using: &random) ?? 7
            var spec: [String: Any] = ["indexPath": path, "orderPath": orderPath, "order": descending ? "descending" : "ascending", "pageSize": pageSize]
            var keep: (Row) -> Bool
            let kind = Int.random(in: 0..<4, using: &random)
            switch kind {
            case 0:
                let key = randomKey(path)
                spec["queryType"] = "exact"
                spec["matchKey"] = key.json
                keep = { $0.fields[path] == key }
            case 1:
                let a = Bool.random(using: &random) ? randomKey(path) : nil
                let b = Bool.random(using: &random) ? randomKey(path) : nil
                spec["queryType"] = "range"
                if let a { spec["beginKey"] = a.json }
                if let b { spec["endKey"] = b.json }
                keep = { row in
                    guard a != nil || b != nil else { return true } // "all" includes missing values
                    guard let v = row.fields[path] else { return false }
                    return (a.map { v >= $0 } ?? true) && (b.map { v <= $0 } ?? true)
                }
            default:
                guard path == "s" else { continue }
                let fragment = ["a", "b", "c", "ab", "B"].randomElement(using: &random) ?? "a"
                let pattern = [fragment + "%", "%" + fragment, "%" + fragment + "%", fragment].randomElement(using: &random) ?? "a%"
                spec["queryType"] = "like"
                spec["likeKey"] = pattern
                keep = { row in
                    guard case .text(let s)? = row.fields["s"] else { return false }
                    let l = s.lowercased(), f = fragment.lowercased()
                    if pattern == fragment { return l == f }
                    if pattern.hasPrefix("%") && pattern.hasSuffix("%") { return l.contains(f) }
                    if pattern.hasPrefix("%") { return l.hasSuffix(f) }
                    return l.hasPrefix(f)
                }
            }
            // Model order: by orderPath (missing first ascending, last descending), ties by id.
            let expected = rows.filter(keep).sorted { x, y in
                let a = x.fields[orderPath], b = y.fields[orderPath]
                if a != b {
                    switch (a, b) {
                    case (nil, _): return !descending
                    case (_, nil): return descending
                    case (let a?, let b?): return descending ? b < a : a < b
                    }
                }
                return x.id < y.id
            }.map(\.id)
            let specText = try jsonText(spec)
            let first = try query("m", specText)
            XCTAssertEqual(first.totalEntries, Int64(expected.count), "round \(round): \(specText)")
            var got = first.ids
            var page: Int64 = 1
            while page < first.totalPages {
                got += try CursorPage(store.moveCursor(first.cursorId, toPage: page)).ids
                page += 1
            }
            try store.closeCursor(first.cursorId)
            XCTAssertEqual(got, expected, "round \(round): \(specText)")
            if got != expected { break }
        }
    }
}
