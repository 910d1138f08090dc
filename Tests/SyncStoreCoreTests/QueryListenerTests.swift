// Query listeners, merged notices, minimum intervals, buffered handles and other processes'
// commits (the C header's "Listeners"): a query listener hears only what changed its result,
// with the new first page and the difference; a slow or throttled listener has one notice
// pending, never a queue.
import Foundation
import XCTest
@testable import SyncStoreCore
import SyncStoreSupport

/// Notices one listener heard, parsed, with a wait.
private final class Notices: @unchecked Sendable {
    private let lock = Lock()
    private var list: [[String: Any]] = []
    private var threadList: [pthread_t] = []

    func take(_ text: String) {
        let notice = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? ["unparsed": text]
        lock.withLock {
            list.append(notice)
            threadList.append(pthread_self())
        }
    }

    /// Waits (up to 5 s) until `count` notices arrived; returns them all.
    func wait(for count: Int) -> [[String: Any]] {
        for _ in 0..<500 where all.count < count { usleep(10_000) }
        return all
    }

    var all: [[String: Any]] { lock.withLock { list } }
    var threads: [pthread_t] { lock.withLock { threadList } }
}

private func idsOf(_ notice: [String: Any], _ kind: String) -> [Int64] {
    ((notice[kind] as? [String: Any])?["ids"] as? [NSNumber])?.map(\.int64Value) ?? []
}
private func countOf(_ notice: [String: Any], _ kind: String) -> Int { ((notice[kind] as? [String: Any])?["count"] as? NSNumber)?.intValue ?? -1 }
private func total(_ notice: [String: Any]) -> Int { (notice["totalEntries"] as? NSNumber)?.intValue ?? -1 }
private func page(_ notice: [String: Any]) -> [[String: Any]] { notice["currentPageOrderedEntries"] as? [[String: Any]] ?? [] }
private func originKind(_ notice: [String: Any]) -> String? { (notice["origin"] as? [String: Any])?["kind"] as? String }

final class QueryListenerTests: StoreTestCase {
    private var listeners: ChangeListeners!

    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"k","type":"string"},{"path":"n","type":"integer"}]"#)
        try register("t", #"[{"path":"k","type":"string"}]"#)
        listeners = try ChangeListeners.of(try store)
    }

    override func tearDownWithError() throws {
        try listeners?.handleClosing(0, last: true)
        try super.tearDownWithError()
    }

    private func watch(_ spec: String, owner: Int = 0) throws -> (Int64, Notices) {
        let notices = Notices()
        let token = try listeners.addQuery(store: try store, specJSON: spec, owner: owner) { notices.take($0) }
        return (token, notices)
    }

    private func upsert(_ soup: String, _ json: String) throws -> [Int64] {
        let stored = try parseJSON(try store.upsert(soup: soup, entriesJSON: json).string)
        let list = (stored as? [[String: Any]]) ?? [stored as? [String: Any] ?? [:]]
        return list.compactMap { ($0["_soupEntryId"] as? NSNumber)?.int64Value }
    }

    func testAnExactQueryHearsOnlyChangesOfItsResultWithTheDiffAndTheFirstPage() throws {
        let ids = try upsert("s", #"[{"k":"a","n":1},{"k":"b","n":2}]"#)
        let (_, heard) = try watch(#"{"soupName":"s","queryType":"exact","indexPath":"k","matchKey":"a","pageSize":5}"#)
        let first = heard.wait(for: 1)[0]
        XCTAssertEqual(originKind(first), "initial")
        XCTAssertEqual(total(first), 1)
        XCTAssertEqual(idsOf(first, "added"), [ids[0]])
        XCTAssertEqual(page(first).first?["k"] as? String, "a")

        _ = try upsert("s", #"{"k":"z","n":3}"#)       // outside the result: not heard
        _ = try upsert("t", #"{"k":"a"}"#)             // another soup: not heard
        let added = try upsert("s", #"{"k":"a","n":4}"#)
        let second = heard.wait(for: 2)[1]
        XCTAssertEqual(originKind(second), "handle")
        XCTAssertEqual(idsOf(second, "added"), added)
        XCTAssertEqual(countOf(second, "removed"), 0)
        XCTAssertEqual(total(second), 2)
        XCTAssertEqual(page(second).count, 2)

        _ = try store.upsert(soup: "s", entriesJSON: #"{"_soupEntryId":\#(ids[0]),"k":"a","n":9}"#)
        let third = heard.wait(for: 3)[2]
        XCTAssertEqual(idsOf(third, "changed"), [ids[0]])
        XCTAssertEqual(countOf(third, "added"), 0)

        _ = try store.upsert(soup: "s", entriesJSON: #"{"_soupEntryId":\#(added[0]),"k":"q"}"#)
        let fourth = heard.wait(for: 4)[3]
        XCTAssertEqual(idsOf(fourth, "removed"), added)
        XCTAssertEqual(total(fourth), 1)

        try store.removeEntries(soup: "s", ids: [ids[0]])
        let fifth = heard.wait(for: 5)[4]
        XCTAssertEqual(idsOf(fifth, "removed"), [ids[0]])
        XCTAssertEqual(total(fifth), 0)
        XCTAssertEqual(page(fifth).count, 0)
        usleep(100_000)
        XCTAssertEqual(heard.all.count, 5)
    }

    func testARangeQueryOverACutOrClearedChangeReadsTheWholeResult() throws {
        let (_, heard) = try watch(#"{"soupName":"s","queryType":"range","indexPath":"n","beginKey":10,"endKey":2000,"orderPath":"n","pageSize":3}"#)
        XCTAssertEqual(total(heard.wait(for: 1)[0]), 0)
        var many: [String] = []
        for n in 1...1500 { many.append(#"{"k":"x","n":\#(n)}"#) }
        _ = try upsert("s", "[" + many.joined(separator: ",") + "]")
        let big = heard.wait(for: 2)[1]
        XCTAssertEqual(total(big), 1491)
        XCTAssertEqual(countOf(big, "added"), 1491)
        XCTAssertEqual(((big["added"] as? [String: Any])?["cut"] as? Bool), true)
        XCTAssertEqual(page(big).compactMap { ($0["n"] as? NSNumber)?.intValue }, [10, 11, 12])
        try store.clearSoup("s")
        let cleared = heard.wait(for: 3)[2]
        XCTAssertEqual(total(cleared), 0)
        XCTAssertEqual(countOf(cleared, "removed"), 1491)
    }

    func testASmartSqlListenerHearsWhenItsRowsChange() throws {
        _ = try upsert("s", #"[{"k":"a","n":1},{"k":"b","n":2}]"#)
        let (_, heard) = try watch(#"{"queryType":"smart","smartSql":"select {s:k}, count(*) from {s} group by {s:k} order by {s:k}","pageSize":10}"#)
        let first = heard.wait(for: 1)[0]
        XCTAssertEqual(total(first), 2)
        XCTAssertEqual(first["currentPageOrderedEntries"] as? [[AnyHashable]], [["a", 1], ["b", 1]])
        _ = try upsert("t", #"{"k":"a"}"#)            // a soup the SQL does not name
        _ = try upsert("s", #"{"k":"a","n":3}"#)
        let second = heard.wait(for: 2)[1]
        XCTAssertEqual((second["added"] as? [String: Any])?["rows"] as? [[AnyHashable]], [["a", 2]])
        XCTAssertEqual((second["removed"] as? [String: Any])?["rows"] as? [[AnyHashable]], [["a", 1]])
        usleep(100_000)
        XCTAssertEqual(heard.all.count, 2)
    }

    func testARemovedSoupIsToldOnceThenNothing() throws {
        let ids = try upsert("t", #"{"k":"a"}"#)
        let (_, heard) = try watch(#"{"soupName":"t","queryType":"range","indexPath":"k"}"#)
        try store.removeSoup("t")
        let gone = heard.wait(for: 2)[1]
        XCTAssertEqual(idsOf(gone, "removed"), ids)
        XCTAssertEqual(total(gone), 0)
        try register("t", #"[{"path":"k","type":"string"}]"#)
        _ = try upsert("t", #"{"k":"b"}"#)
        usleep(150_000)
        XCTAssertEqual(heard.all.count, 2)
    }

    func testBadSpecsAreRefusedAndAddNothing() throws {
        for (spec, code) in [(#"{"queryType":"exact","indexPath":"k","matchKey":"a"}"#, ErrorCode.argument),
                             (#"{"soupName":"nope","queryType":"range"}"#, .notFound),
                             (#"{"soupName":"s","queryType":"exact","indexPath":"k"}"#, .argument),
                             (#"{"queryType":"smart","smartSql":"delete from {s}"}"#, .argument),
                             (#"{"queryType":"smart","smartSql":"select * from {nope}"}"#, .argument),
                             ("not json", .argument)] {
            XCTAssertThrowsError(try watch(spec), spec) { XCTAssertEqual(($0 as? StoreError)?.code, code, spec) }
        }
        XCTAssertEqual(listeners.count, 0)
        XCTAssertThrowsError(try listeners.setInterval(12345, milliseconds: 5)) { XCTAssertEqual(($0 as? StoreError)?.code, .state) }
        XCTAssertThrowsError(try listeners.send(owner: 3)) { XCTAssertEqual(($0 as? StoreError)?.code, .state) }
    }

    func testAMinimumIntervalMergesCommitsIntoOneNotice() throws {
        let notices = Notices()
        let token = try listeners.add(store: try store, soup: "s", owner: 0) { notices.take($0) }
        try listeners.setInterval(token, milliseconds: 300)
        XCTAssertThrowsError(try listeners.setInterval(token, milliseconds: -1)) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
        for i in 0..<20 { _ = try upsert("s", #"{"k":"m\#(i)"}"#) }
        func commits() -> Int { notices.all.compactMap { ($0["commits"] as? NSNumber)?.intValue }.reduce(0, +) }
        for _ in 0..<500 where commits() < 20 { usleep(10_000) }
        usleep(400_000)
        let all = notices.all
        XCTAssertLessThanOrEqual(all.count, 3, "20 commits inside the interval are merged")
        let commits = all.compactMap { ($0["commits"] as? NSNumber)?.intValue }.reduce(0, +)
        XCTAssertEqual(commits, 20)
        let inserted = all.map { countOf((($0["soups"] as? [[String: Any]]) ?? [])[0], "inserted") }.reduce(0, +)
        XCTAssertEqual(inserted, 20)
    }

    func testABufferedHandleIsToldReadyOnceAndSendsOnItsOwnThread() throws {
        let ready = Notices()
        try listeners.buffer(owner: 5) { ready.take("{}") }
        let notices = Notices()
        _ = try listeners.add(store: try store, soup: nil, owner: 5) { notices.take($0) }
        let (_, query) = try watch(#"{"soupName":"s","queryType":"exact","indexPath":"k","matchKey":"a"}"#, owner: 5)
        _ = try upsert("s", #"{"k":"a"}"#)
        _ = try upsert("t", #"{"k":"b"}"#)
        XCTAssertEqual(ready.wait(for: 1).count, 1)
        usleep(100_000)
        XCTAssertEqual(ready.all.count, 1, "ready is called once until the host sends")
        XCTAssertEqual(notices.all.count, 0)
        XCTAssertEqual(try listeners.send(owner: 5), 3, "one merged soup notice and the query's two")
        XCTAssertEqual(notices.all.count, 1)
        XCTAssertEqual(notices.all[0]["commits"] as? Int, 2)
        XCTAssertEqual(query.all.map(originKind), ["initial", "otherHandle"])
        XCTAssertTrue(notices.threads.allSatisfy { pthread_equal($0, pthread_self()) != 0 })
        XCTAssertEqual(try listeners.send(owner: 5), 0)
        _ = try upsert("s", #"{"k":"c"}"#)
        XCTAssertEqual(ready.wait(for: 2).count, 2, "ready again after a send")
    }

    func testAnotherProcessesCommitIsNoticed() throws {
        let soupNotices = Notices()
        _ = try listeners.add(store: try store, soup: "s", owner: 0) { soupNotices.take($0) }
        let (_, query) = try watch(#"{"soupName":"s","queryType":"exact","indexPath":"k","matchKey":"far"}"#)
        _ = query.wait(for: 1)
        // A second store object on the file writes as another process would: its own connections.
        let other = try SmartStore(path: dbPath)
        let started = SyncStoreSupport.Clock.monotonicMillis()
        _ = try other.upsert(soup: "s", entriesJSON: #"{"k":"far"}"#)
        let heard = soupNotices.wait(for: 1)
        XCTAssertLessThan(SyncStoreSupport.Clock.monotonicMillis() - started, 1000)
        XCTAssertEqual(originKind(heard[0]), "otherProcess")
        XCTAssertEqual(((heard[0]["soups"] as? [[String: Any]])?.first?["unknown"]) as? Bool, true)
        let second = query.wait(for: 2)
        XCTAssertEqual(second.count, 2)
        XCTAssertEqual(total(second[1]), 1)
        XCTAssertEqual(originKind(second[1]), "otherProcess")
        // This process's own writes are not told as another's.
        _ = try upsert("s", #"{"k":"near"}"#)
        let mine = soupNotices.wait(for: 2)
        usleep(100_000)
        XCTAssertEqual(soupNotices.all.map(originKind), ["otherProcess", "handle"])
        XCTAssertEqual(mine.count, 2)
    }

    func testOneEntryChangeUnderALargeResultIsJudgedFromTheEntry() throws {
        var many: [String] = []
        for n in 0..<20_000 { many.append(#"{"k":"big","n":\#(n)}"#) }
        _ = try upsert("s", "[" + many.joined(separator: ",") + "]")
        let (_, heard) = try watch(#"{"soupName":"s","queryType":"exact","indexPath":"k","matchKey":"big","orderPath":"n","pageSize":2}"#)
        XCTAssertEqual(total(heard.wait(for: 1)[0]), 20_000)
        let added = try upsert("s", #"{"k":"big","n":-1}"#)
        let notice = heard.wait(for: 2)[1]
        XCTAssertEqual(idsOf(notice, "added"), added)
        XCTAssertEqual(total(notice), 20_001)
        XCTAssertEqual(page(notice).compactMap { ($0["n"] as? NSNumber)?.intValue }, [-1, 0])
    }
    /// Query listeners of one soup told of the same commit are judged in one statement
    /// (`SharedJudging`, one arm each): each hears what its own condition says, no other's.
    func testQueryListenersOfOneSoupJudgedTogetherEachHearTheirOwnResult() throws {
        let ids = try upsert("s", #"[{"k":"a","n":1},{"k":"b","n":2},{"k":"c","n":9},{"k":"bb","n":7}]"#)
        let (b1, c1, d1) = (ids[1], ids[2], ids[3])
        let specs = [
            #"{"soupName":"s","queryType":"exact","indexPath":"k","matchKey":"a"}"#,
            #"{"soupName":"s","queryType":"range","indexPath":"n","beginKey":5,"endKey":10}"#,
            #"{"soupName":"s","queryType":"like","indexPath":"k","likeKey":"b%"}"#,
            #"{"soupName":"s","queryType":"exact","indexPath":"n","matchKey":"7"}"#,
            #"{"soupName":"s","queryType":"range","indexPath":"n","beginKey":8}"#,
            #"{"soupName":"s","queryType":"exact","indexPath":"k","matchKey":"zzz"}"#,
            #"{"soupName":"s","queryType":"range","indexPath":"n"}"#,
        ]
        let heard = try specs.map { try watch($0).1 }
        XCTAssertEqual(heard.map { total($0.wait(for: 1)[0]) }, [1, 2, 2, 1, 1, 0, 4])

        // One commit: an insert and an update.
        let stored = try upsert("s", #"[{"k":"a","n":6},{"_soupEntryId":\#(b1),"k":"b","n":8}]"#)
        let a2 = stored[0]
        let expected: [(added: [Int64], changed: [Int64], total: Int)?] = [
            ([a2], [], 2), ([a2, b1].sorted(), [], 4), ([], [b1], 2), nil, ([b1], [], 2), nil, ([a2], [b1], 5)]
        for (n, want) in expected.enumerated() {
            guard let want else { continue }
            let notice = heard[n].wait(for: 2)[1]
            XCTAssertEqual(idsOf(notice, "added").sorted(), want.added, "listener \(n) (\(specs[n]))")
            XCTAssertEqual(idsOf(notice, "changed"), want.changed, "listener \(n) (\(specs[n]))")
            XCTAssertEqual(countOf(notice, "removed"), 0, "listener \(n)")
            XCTAssertEqual(total(notice), want.total, "listener \(n)")
        }

        // Another: a delete.
        try store.removeEntries(soup: "s", ids: [c1])
        let removedFrom: [Int: Int] = [1: 3, 4: 1, 6: 4]
        for (n, remaining) in removedFrom {
            let notice = heard[n].wait(for: 3)[2]
            XCTAssertEqual(idsOf(notice, "removed"), [c1], "listener \(n)")
            XCTAssertEqual(total(notice), remaining, "listener \(n)")
        }
        usleep(100_000)
        XCTAssertEqual(heard.map(\.all.count), [2, 3, 2, 1, 3, 1, 3])
        XCTAssertEqual(page(heard[3].all[0]).compactMap { ($0["_soupEntryId"] as? NSNumber)?.int64Value }, [d1])
    }
    /// The same over paths with no column of their own (a json1 index reads the entry's text)
    /// and a full-text match.
    func testQueryListenersJudgedTogetherOverJson1AndFullTextPaths() throws {
        try register("u", #"[{"path":"k","type":"json1"},{"path":"t","type":"full_text"},{"path":"n","type":"integer"}]"#)
        let ids = try upsert("u", #"[{"k":"a","t":"hello world","n":1},{"k":"b","t":"other","n":2}]"#)
        let specs = [
            #"{"soupName":"u","queryType":"exact","indexPath":"k","matchKey":"a"}"#,
            #"{"soupName":"u","queryType":"match","indexPath":"t","matchKey":"hello"}"#,
            #"{"soupName":"u","queryType":"range","indexPath":"n","beginKey":1,"endKey":1}"#,
        ]
        let heard = try specs.map { try watch($0).1 }
        XCTAssertEqual(heard.map { total($0.wait(for: 1)[0]) }, [1, 1, 1])

        let added = try upsert("u", #"{"k":"a","t":"hello there","n":1}"#)
        for n in 0..<3 {
            let notice = heard[n].wait(for: 2)[1]
            XCTAssertEqual(idsOf(notice, "added"), added, "listener \(n) (\(specs[n]))")
            XCTAssertEqual(total(notice), 2, "listener \(n)")
        }
        _ = try upsert("u", #"{"_soupEntryId":\#(ids[1]),"k":"a","t":"hello","n":2}"#)
        for n in 0..<2 {
            let notice = heard[n].wait(for: 3)[2]
            XCTAssertEqual(idsOf(notice, "added"), [ids[1]], "listener \(n) (\(specs[n]))")
            XCTAssertEqual(total(notice), 3, "listener \(n)")
        }
        usleep(100_000)
        XCTAssertEqual(heard.map(\.all.count), [3, 3, 2])
    }
}
