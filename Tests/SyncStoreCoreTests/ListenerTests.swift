// Soup listeners (ChangeListeners): after each commit, on the store's notifier thread, each
// listener hears what changed in its soup (or every soup), never of a rolled-back write.
import Foundation
import XCTest
@testable import SyncStoreCore
@testable import SyncStoreSync

/// What one listener heard, parsed, with a wait for the next notices.
private final class Heard: @unchecked Sendable {
    private let lock = Lock()
    private var notices: [[String: Any]] = []
    private var seenThreads: [pthread_t] = []
    var onNotice: (([String: Any]) -> Void)?

    func take(_ text: String) {
        let notice = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? ["unparsed": text]
        let hook: (([String: Any]) -> Void)? = lock.withLock {
            notices.append(notice)
            seenThreads.append(pthread_self())
            return onNotice
        }
        hook?(notice)
    }

    /// Waits (up to 5 s) until `count` notices arrived; returns them all.
    func wait(for count: Int) -> [[String: Any]] {
        for _ in 0..<500 where all.count < count { usleep(10_000) }
        return all
    }

    var all: [[String: Any]] { lock.withLock { notices } }
    var threads: [pthread_t] { lock.withLock { seenThreads } }
}

/// Flags a callback sets for the test thread.
private final class Flags: @unchecked Sendable {
    private let lock = Lock()
    private var inside = false, finished = false
    var isInside: Bool { lock.withLock { inside } }
    var isFinished: Bool { lock.withLock { finished } }
    func enter() { lock.withLock { inside = true } }
    func finish() { lock.withLock { finished = true } }
}

private func soups(_ notice: [String: Any]) -> [[String: Any]] { notice["soups"] as? [[String: Any]] ?? [] }
private func names(_ notice: [String: Any]) -> [String] { soups(notice).compactMap { $0["soup"] as? String } }
private func kindCount(_ soup: [String: Any], _ kind: String) -> Int { ((soup[kind] as? [String: Any])?["count"] as? NSNumber)?.intValue ?? -1 }
/// Waits (up to 5 s) until the notices heard tell of `commits` commits; returns them.
private func heardCommits(_ heard: Heard, _ commits: Int) -> [[String: Any]] {
    func told() -> Int { heard.all.compactMap { ($0["commits"] as? NSNumber)?.intValue }.reduce(0, +) }
    for _ in 0..<500 where told() < commits { usleep(10_000) }
    return heard.all
}
private func kind(_ notice: [String: Any]) -> String? { (notice["origin"] as? [String: Any])?["kind"] as? String }

final class ListenerTests: StoreTestCase {
    private var listeners: ChangeListeners!

    override func setUpWithError() throws {
        try super.setUpWithError()
        try register("s", #"[{"path":"k","type":"string"}]"#)
        try register("t", #"[{"path":"k","type":"string"}]"#)
        listeners = try ChangeListeners.of(try store)
    }

    override func tearDownWithError() throws {
        try listeners?.handleClosing(0, last: true)
        try super.tearDownWithError()
    }

    private func listen(_ soup: String?, owner: Int = 0) throws -> (Int64, Heard) {
        let heard = Heard()
        let token = try listeners.add(store: try store, soup: soup, owner: owner) { heard.take($0) }
        return (token, heard)
    }

    func testASoupListenerHearsItsSoupOnlyAndANullListenerEveryCommit() throws {
        let (_, onS) = try listen("s")
        let (_, onAll) = try listen(nil)
        _ = try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"},{"k":"b"}]"#)
        _ = heardCommits(onAll, 1)
        _ = try store.upsert(soup: "t", entriesJSON: #"{"k":"c"}"#)
        _ = heardCommits(onAll, 2)
        try store.clearSoup("s")
        // Commits that come while a notice waits are merged into it: count commits, not notices.
        let all = heardCommits(onAll, 3)
        XCTAssertEqual(all.map(names), [["s"], ["t"], ["s"]])
        let s = heardCommits(onS, 2)
        XCTAssertEqual(s.count, 2)
        XCTAssertEqual(kindCount(soups(s[0])[0], "inserted"), 2)
        XCTAssertEqual((soups(s[0])[0]["inserted"] as? [String: Any])?["cut"] as? Bool, false)
        XCTAssertEqual(soups(s[1])[0]["cleared"] as? Bool, true)
        let sequences = all.compactMap { ($0["sequence"] as? NSNumber)?.int64Value }
        XCTAssertEqual(sequences, sequences.sorted())
        XCTAssertEqual(Set(sequences).count, 3)
    }

    func testCommitsThatComeWhileANoticeWaitsAreMergedIntoIt() throws {
        let (_, heard) = try listen(nil)
        for i in 0..<50 { _ = try store.upsert(soup: i % 2 == 0 ? "s" : "t", entriesJSON: #"{"k":"m\#(i)"}"#) }
        let all = heardCommits(heard, 50)
        XCTAssertEqual(all.compactMap { ($0["commits"] as? NSNumber)?.intValue }.reduce(0, +), 50)
        let inserted = all.flatMap(soups).map { kindCount($0, "inserted") }.reduce(0, +)
        XCTAssertEqual(inserted, 50)
        XCTAssertEqual((all.last?["sequence"] as? NSNumber)?.intValue, (all.map { ($0["sequence"] as? NSNumber)?.intValue ?? 0 }.max()))
    }

    func testAnUnknownSoupIsNotFoundAndNothingIsAdded() throws {
        XCTAssertThrowsError(try listen("nope")) { XCTAssertEqual(($0 as? StoreError)?.code, .notFound) }
        XCTAssertEqual(listeners.count, 0)
    }

    func testARolledBackWriteIsNeverHeard() throws {
        let (_, heard) = try listen(nil)
        XCTAssertThrowsError(try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"}, 3]"#))
        _ = try store.upsert(soup: "t", entriesJSON: #"{"k":"after"}"#)
        let all = heard.wait(for: 1)
        usleep(100_000)
        XCTAssertEqual(heard.all.count, 1)
        XCTAssertEqual(all.map(names), [["t"]])
    }

    func testOriginSaysWhichHandleOrTheEngineWrote() throws {
        let (_, heard) = try listen("s", owner: 7)
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"mine"}"#, owner: 7)
        _ = heardCommits(heard, 1)
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"other"}"#, owner: 8)
        _ = heardCommits(heard, 2)
        let info = try store.requireSoup("s")
        try store.write(origin: .engine(run: 42)) { db in
            try store.withEntryWriter(db, soup: info, externalIdPath: nil) { writer in
                var sink: TextBuffer? = nil
                let doc = try JSONDocument.parse(#"{"k":"engine"}"#)
                try writer.upsert(doc.root, index: 0, now: 1, into: &sink)
            }
        }
        let all = heardCommits(heard, 3)
        XCTAssertEqual(all.map(kind), ["handle", "otherHandle", "sync"])
        XCTAssertEqual(((all.last?["origin"] as? [String: Any])?["syncId"] as? NSNumber)?.intValue, 42)
    }

    func testNoticesComeOnTheNotifierThreadNotTheWriter() throws {
        let (_, heard) = try listen(nil)
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"a"}"#)
        _ = heard.wait(for: 1)
        XCTAssertEqual(heard.threads.count, 1)
        XCTAssertEqual(pthread_equal(heard.threads[0], pthread_self()), 0)
    }

    func testRemovedListenerHearsNothingMoreAndRemovingTwiceIsState() throws {
        let (token, heard) = try listen(nil)
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"a"}"#)
        _ = heard.wait(for: 1)
        try listeners.remove(token)
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"b"}"#)
        usleep(100_000)
        XCTAssertEqual(heard.all.count, 1)
        XCTAssertThrowsError(try listeners.remove(token)) { XCTAssertEqual(($0 as? StoreError)?.code, .state) }
    }

    func testAListenerMayRemoveItselfAndWriteInItsCallback() throws {
        let store = try self.store
        let heard = Heard()
        let tokenBox = TokenBox()
        let listeners = self.listeners!
        heard.onNotice = { notice in
            if names(notice) == ["s"] {
                _ = try? store.upsert(soup: "t", entriesJSON: #"{"k":"echo"}"#)
                try? listeners.remove(tokenBox.token)
            }
        }
        tokenBox.token = try listeners.add(store: store, soup: nil, owner: 0) { heard.take($0) }
        let (_, other) = try listen("t")
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"a"}"#)
        XCTAssertEqual(other.wait(for: 1).count, 1, "the write made in the callback is heard")
        usleep(100_000)
        XCTAssertEqual(heard.all.count, 1, "removed in its own callback: it hears nothing more")
        XCTAssertEqual(listeners.count, 1)
    }

    func testRemoveWaitsForARunningCallback() throws {
        let heard = Heard()
        let flags = Flags()
        heard.onNotice = { _ in
            flags.enter()
            usleep(300_000)
            flags.finish()
        }
        let token = try listeners.add(store: try store, soup: nil, owner: 0) { heard.take($0) }
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"a"}"#)
        while !flags.isInside { usleep(5_000) }
        try listeners.remove(token)
        XCTAssertTrue(flags.isFinished)
    }

    /// The notifier takes every notice due in one round; a callback that waits for another
    /// thread removing listeners of the same round must not deadlock (remove waits for a call in
    /// progress, not for the round), and a listener removed before its turn is never called.
    func testACallbackWaitingForAThreadThatRemovesListenersOfItsRoundDoesNotDeadlock() throws {
        final class Calls: @unchecked Sendable {
            let lock = Lock()
            var removed = Set<Int64>()
            var late = 0
            var removedInTime = false
            var callbackEnded = false
        }
        final class TokenBox: @unchecked Sendable { var token: Int64 = 0 }
        let calls = Calls()
        var others: [Int64] = []
        for _ in 0..<20 {
            let box = TokenBox()
            box.token = try listeners.add(store: try store, soup: "s", owner: 0) { _ in
                calls.lock.withLock { if calls.removed.contains(box.token) { calls.late += 1 } }
            }
            others.append(box.token)
        }
        let (first, firstHeard) = try listen("s")
        let done = Flags()
        let notifier: ChangeListeners = listeners
        firstHeard.onNotice = { _ in
            guard !done.isInside else { return }
            done.enter()
            Thread { [others] in
                for token in others {
                    try? notifier.remove(token)
                    calls.lock.withLock { _ = calls.removed.insert(token) }
                }
                done.finish()
            }.start()
            for _ in 0..<300 where !done.isFinished { usleep(10_000) }
            calls.lock.withLock {
                calls.removedInTime = done.isFinished
                calls.callbackEnded = true
            }
        }
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"a"}"#)
        XCTAssertEqual(firstHeard.wait(for: 1).count, 1)
        for _ in 0..<500 where !calls.lock.withLock({ calls.callbackEnded }) { usleep(10_000) }
        XCTAssertTrue(calls.lock.withLock { calls.removedInTime }, "the removing thread waited for the callback that waited for it")
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"b"}"#)
        XCTAssertEqual(firstHeard.wait(for: 2).count, 2)
        usleep(50_000)
        XCTAssertEqual(calls.lock.withLock { calls.late }, 0, "a listener was called after its remove returned")
        try listeners.remove(first)
    }

    func testClosingAHandleRemovesItsListenersAndTheLastCloseAll() throws {
        let (mine, heardMine) = try listen(nil, owner: 1)
        let (_, heardOther) = try listen(nil, owner: 2)
        try listeners.handleClosing(1, last: false)
        XCTAssertThrowsError(try listeners.remove(mine))
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"a"}"#)
        XCTAssertEqual(heardOther.wait(for: 1).count, 1)
        XCTAssertEqual(heardMine.all.count, 0)
        try listeners.handleClosing(2, last: true)
        XCTAssertEqual(listeners.count, 0)
        _ = try store.upsert(soup: "s", entriesJSON: #"{"k":"b"}"#)
        usleep(100_000)
        XCTAssertEqual(heardOther.all.count, 1)
        XCTAssertThrowsError(try listen(nil)) { XCTAssertEqual(($0 as? StoreError)?.code, .state) }
    }

    func testARemovedSoupIsHeardAsRemoved() throws {
        let (_, heard) = try listen("t")
        try store.removeSoup("t")
        let all = heard.wait(for: 1)
        XCTAssertEqual(soups(all[0]).first?["removed"] as? Bool, true)
    }
}

private final class TokenBox: @unchecked Sendable { var token: Int64 = 0 }
