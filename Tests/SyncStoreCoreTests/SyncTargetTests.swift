// A sync's target is parsed once, into a typed value (SyncTarget), when the sync is created or
// its state read; runs decide on that value alone, and the state JSON carries the target as the
// host wrote it (key order and every field of a custom target kept).
import XCTest
import Foundation
@testable import SyncStoreCore
@testable import SyncStoreSync

extension SyncUpTarget {
    /// The collection, single, datasync or custom target createSyncUp reads from `text`, bound
    /// as a run binds it (no custom target registered).
    static func parsed(_ text: String?) throws -> SyncUpTarget {
        guard case .up(let kind) = try SyncTarget.up(text: text, soupName: "s").parsed.get() else { throw TestFailure("not a sync up target") }
        switch kind {
        case .salesforce(let target), .datasync(let target, _): return target
        case .custom(let custom): return try SyncUpTargets.bind(custom, customTargets: CustomTargetRegistry())
        case .twoPhase, .parentChildren: throw TestFailure("not a single-soup target")
        }
    }
}

final class SyncTargetTests: StoreTestCase {
    /// Values a test's callbacks record on the sync worker.
    private final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []
        private var counts: [Int] = []
        func record(_ value: String) { lock.lock(); values.append(value); counts.append(SyncTarget.parses); lock.unlock() }
        /// What was recorded, and the target parse count at each record; cleared.
        func take() -> ([String], [Int]) { lock.lock(); defer { values = []; counts = []; lock.unlock() }; return (values, counts) }
    }

    // The counter counts every target parsed (SyncTarget's only way in): a run of many pages,
    // each saved and reported, and a sync up of many records, parse none between their first and
    // last callback, and a run of five pages parses as many targets as a run of one.
    func testATargetIsParsedOncePerRunNotPerPageOrRecord() throws {
        let store = try self.store
        try store.registerSoup("c", specsJSON: #"[{"path":"Id","type":"string"}]"#)
        let manager = try store.syncManager()
        let pages = Recorder(), pushes = Recorder()
        let pageCount = Locked(1)
        try manager.registerCustomTarget("paged", CustomTargetCallbacks(fetchPage: { target, _, continuation in
            pages.record(target)
            let page = Int(continuation ?? "0") ?? 0
            let next = page + 1 < pageCount.value ? #","next":"\#(page + 1)""# : ""
            return #"{"records":[{"Id":"r\#(page)","LastModifiedDate":"2024-01-01T00:00:00.000Z"}],"totalSize":\#(pageCount.value)\#(next)}"#
        }, pushRecord: { target, action, _ in
            pushes.record(target + " " + action)
            return action == "create" ? #"{"id":"s\#(UUID().uuidString)"}"# : "{}"
        }))

        let before = SyncTarget.parses
        let downTarget = #"{"type":"paged","zeta":{"b":1,"a":[2,3]},"alpha":null,"idFieldName":"Id"}"#
        let down = try manager.createSyncDown(targetJSON: downTarget, soupName: "c", optionsJSON: nil, name: "down")
        XCTAssertEqual(SyncTarget.parses, before + 1, "creating a sync parses its target once")
        XCTAssertTrue(down.jsonText.contains(#""target":\#(downTarget),"#), down.jsonText)

        func runDown(pages count: Int) throws -> Int {
            pageCount.value = count
            let start = SyncTarget.parses
            let events = Locked(0)
            try manager.reSync(id: down.id) { _ in events.value += 1 }
            let state = try manager.wait(id: down.id, timeoutMs: 30_000)
            XCTAssertEqual(state.status, .done, state.error)
            let (targets, counts) = pages.take()
            XCTAssertEqual(targets, Array(repeating: downTarget, count: count), "the callbacks get the target as the host wrote it")
            XCTAssertEqual(Set(counts).count, 1, "a target was parsed between two pages of one run: \(counts)")
            XCTAssertGreaterThan(events.value, count, "every page is reported")
            return SyncTarget.parses - start
        }
        let onePage = try runDown(pages: 1)
        XCTAssertEqual(try runDown(pages: 5), onePage, "a run of five pages parses more targets than a run of one")
        XCTAssertEqual(try runDown(pages: 1), onePage)

        let upTarget = #"{"type":"paged","sobjectType":"Thing","zeta":1,"alpha":[true]}"#
        let records = (1...6).map { #"{"Name":"n\#($0)","__local__":true,"__locally_created__":true}"# }
        _ = try store.upsert(soup: "c", entriesJSON: "[" + records.joined(separator: ",") + "]")
        let upStart = SyncTarget.parses
        let up = try manager.wait(id: try manager.syncUp(targetJSON: upTarget, soupName: "c", optionsJSON: nil, name: nil, callback: nil),
                                  timeoutMs: 30_000)
        XCTAssertEqual(up.status, .done, up.error)
        XCTAssertTrue(up.jsonText.contains(#""target":\#(upTarget),"#), up.jsonText)
        let (pushed, counts) = pushes.take()
        XCTAssertEqual(pushed, Array(repeating: upTarget + " create", count: 6))
        XCTAssertEqual(Set(counts).count, 1, "a target was parsed between two records of one sync up: \(counts)")
        XCTAssertEqual(counts.first, upStart + 2, "creating the sync and its run's read of its state parse it, nothing else before the records go")
    }

    // What a sync reads back from the store is the typed target it was created with, each kind
    // in its own case; the state JSON keeps the host's key order.
    func testTargetsReadBackTyped() throws {
        let store = try self.store
        for soup in ["c", "kids", "todo"] { try store.registerSoup(soup, specsJSON: #"[{"path":"Id","type":"string"},{"path":"id","type":"string"}]"#) }
        let manager = try store.syncManager()
        func read(_ state: SyncState) throws -> SyncTarget.Parsed {
            guard let read = try manager.status(id: state.id) else { throw TestFailure("sync \(state.id) is missing") }
            XCTAssertEqual(read.jsonText, state.jsonText)
            return try read.target.parsed.get()
        }

        let soql = #"{"type":"soql","query":"SELECT Name FROM Account","maxBatchSize":500}"#
        guard case .down(.builtIn(let target)) = try read(try manager.createSyncDown(targetJSON: soql, soupName: "c", optionsJSON: nil, name: nil)),
              let soqlTarget = target as? SoqlTarget else { return XCTFail("soql") }
        XCTAssertEqual(soqlTarget.idFieldName, "Id")

        let twoPhase = #"{"type":"twophase","tables":[{"name":"things","idKey":"id"}]}"#
        guard case .down(.twoPhase(let down)) = try read(try manager.createSyncDown(targetJSON: twoPhase, soupName: "c", optionsJSON: nil, name: nil)),
              case .up(.twoPhase(let up)) = try read(try manager.createSyncUp(targetJSON: twoPhase, soupName: "c", optionsJSON: nil, name: nil))
        else { return XCTFail("twophase") }
        XCTAssertEqual(down.tables.map(\.soupName), ["c"])
        XCTAssertEqual(up.tables.map(\.name), ["things"])

        let defaultUp = try manager.createSyncUp(targetJSON: nil, soupName: "c", optionsJSON: nil, name: nil)
        XCTAssertTrue(defaultUp.jsonText.contains(#""target":{},"#), defaultUp.jsonText)
        guard case .up(.salesforce(let collection)) = try read(defaultUp) else { return XCTFail("default") }
        XCTAssertEqual(collection.mode, .collection)
        XCTAssertEqual(collection.batchSize, 200)

        let single = #"{"sobjectType":"Contact","type":"single","createFieldlist":["LastName"],"zeta":1,"alpha":2}"#
        let singleState = try manager.createSyncUp(targetJSON: single, soupName: "c", optionsJSON: nil, name: nil)
        XCTAssertTrue(singleState.jsonText.contains(#""target":\#(single),"#), singleState.jsonText)
        guard case .up(.salesforce(let singleTarget)) = try read(singleState) else { return XCTFail("single") }
        XCTAssertEqual(singleTarget.mode, .single)
        XCTAssertEqual(singleTarget.createFieldlist, ["LastName"])
        XCTAssertEqual(singleTarget.batchSize, 1)

        let parentChildren = #"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"c"},"children":{"sobjectType":"Contact","soupName":"kids","parentIdFieldName":"AccountId"},"childrenCreateFieldlist":["LastName"]}"#
        guard case .up(.parentChildren(let pc)) = try read(try manager.createSyncUp(targetJSON: parentChildren, soupName: "c", optionsJSON: nil, name: nil))
        else { return XCTFail("parent_children") }
        XCTAssertEqual([pc.parentSoup, pc.childSoup, pc.parentIdFieldName], ["c", "kids", "AccountId"])
        XCTAssertEqual(pc.children.createFieldlist, ["LastName"])
        XCTAssertEqual(pc.parent.createFieldlist, nil)
        XCTAssertEqual(pc.children.sobjectType, "Contact")

        guard case .up(.datasync(let datasync, let table)) = try read(try manager.createSyncUp(targetJSON: #"{"type":"datasync","table":"todo"}"#, soupName: "todo", optionsJSON: nil, name: nil))
        else { return XCTFail("datasync") }
        XCTAssertEqual(table.table, "todo")
        XCTAssertEqual(datasync.idFieldName, "id")

        // A custom target is refused until its type is registered, and is read back unbound.
        let custom = #"{"type":"mine","sobjectType":"X"}"#
        XCTAssertThrowsError(try manager.createSyncUp(targetJSON: custom, soupName: "c", optionsJSON: nil, name: nil)) {
            XCTAssertEqual(($0 as? StoreError)?.message, "Unknown sync up target type 'mine': use collection, single, datasync, or register a custom target")
        }
        try manager.registerCustomTarget("mine", CustomTargetCallbacks(pushRecord: { _, _, _ in "{}" }))
        guard case .up(.custom(let unbound)) = try read(try manager.createSyncUp(targetJSON: custom, soupName: "c", optionsJSON: nil, name: nil))
        else { return XCTFail("custom") }
        XCTAssertEqual(unbound.type, "mine")
        XCTAssertEqual(unbound.text, custom)
        XCTAssertEqual(try unbound.parsed.get().sobjectType, "X")
    }
}

/// A value shared with callbacks on the sync worker.
private final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
