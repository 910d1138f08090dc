// REST answers the engine parses: an in-process server answers each request of a sync run with
// the input's next answer. The input's first byte picks the run (sync down soql, mru, sosl,
// metadata (describe), layout, briefcase, parent_children; sync up collection, single,
// parent_children (composite), the same with external ids); the rest is answers separated by
// "\n--8<--\n", each a status selector byte then the body. The first request may get a 401, so
// the token refresh answer is parsed too. Every run must end (DONE or FAILED, never INTERNAL,
// within the wait), and afterwards every entry of the soups reads back as JSON within the JSON
// rule's depth. A first byte of 128 or more also runs a sync down a second time with every
// object key of the answers spelled with \u escapes: the same answers, so the same outcome
// (status and entries stored).
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let server = FakeServer()
private let store: SmartStore = {
    let (store, _) = fuzzFixtureStore("rest_answers")
    fuzzSetup("contacts") {
        try store.registerSoup("contacts", specsJSON: #"[{"path":"Id","type":"string"},{"path":"AccountId","type":"string"},{"path":"LastModifiedDate","type":"string"}]"#)
    }
    return store
}()
private let manager: SyncManager = fuzzSetup("sync manager") {
    let manager = try store.syncManager()
    manager.setRemote(try RemoteConfig.parse("""
        {"instanceUrl":"http://127.0.0.1:\(server.port)","accessToken":"t0","refreshToken":"r","clientId":"c",
         "maxAttempts":2,"retryBaseDelayMs":0,"createSettleMs":0,"connectTimeoutMs":2000,"stallTimeoutMs":2000}
        """))
    return manager
}

private let statuses = [200, 201, 204, 400, 401, 403, 404, 409, 412, 500, 300, 299]

/// Entries with local changes, for the sync up runs.
private let dirtyAccounts = """
[{"Id":"001A","Name":"Changed","__local__":true,"__locally_updated__":true,"attributes":{"type":"Account"}},
 {"Name":"New","__local__":true,"__locally_created__":true,"attributes":{"type":"Account"}},
 {"Id":"001B","__local__":true,"__locally_deleted__":true,"attributes":{"type":"Account"}}]
"""
private let dirtyContacts = """
[{"LastName":"Kid","AccountId":"001A","__local__":true,"__locally_created__":true},
 {"Id":"003B","LastName":"Kid2","AccountId":"001A","__local__":true,"__locally_updated__":true}]
"""
private let parentChildrenDown = #"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"parentFieldlist":["Id","Name","LastModifiedDate"],"children":{"sobjectType":"Contact","sobjectTypePlural":"Contacts","soupName":"contacts","parentIdFieldName":"AccountId"},"childrenFieldlist":["Id","LastName","AccountId","LastModifiedDate"],"relationshipType":"LOOKUP"}"#
private let parentChildrenUp = #"{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"contacts","parentIdFieldName":"AccountId"},"parentCreateFieldlist":["Name"],"childrenCreateFieldlist":["LastName"]}"#

private enum Run { case down(String), up(String?, String) }
private let runs: [Run] = [
    .down(#"{"type":"soql","query":"SELECT Id, Name, LastModifiedDate FROM Account"}"#),
    .down(#"{"type":"mru","sobjectType":"Account","fieldlist":["Id","Name"]}"#),
    .down(#"{"type":"sosl","query":"FIND {Acme} RETURNING Account(Id, Name)"}"#),
    .down(#"{"type":"metadata","sobjectType":"Account"}"#),
    .down(#"{"type":"layout","sobjectType":"Account","layoutType":"Compact"}"#),
    .down(#"{"type":"briefcase","infos":[{"sobjectType":"Account","fieldlist":["Name"],"soupName":"accounts"}]}"#),
    .down(parentChildrenDown),
    .up(nil, "{\"fieldlist\":[\"Name\"]}"),
    .up(#"{"type":"single","createFieldlist":["Name"],"updateFieldlist":["Name"]}"#, "{\"mergeMode\":\"LEAVE_IF_CHANGED\"}"),
    .up(parentChildrenUp, "{}"),
    .up(#"{"externalIdFieldName":"Name","maxBatchSize":2}"#, "{\"fieldlist\":[\"Name\"]}"),
]

private let cut = Array("\n--8<--\n".utf8)

private func answers(_ bytes: ArraySlice<UInt8>) -> [(Int, [UInt8])] {
    var parts: [ArraySlice<UInt8>] = []
    var rest = bytes
    while let r = rest.firstRange(of: cut) {
        parts.append(rest[..<r.lowerBound])
        rest = rest[r.upperBound...]
    }
    parts.append(rest)
    return parts.map { part in
        guard let first = part.first else { return (200, []) }
        return (statuses[Int(first) % statuses.count], Array(part.dropFirst()))
    }
}

/// Every stored entry of `soup` parses as JSON (an entry the engine cannot read back is data
/// lost) and nests no deeper than the JSON rule allows; answers the number of entries.
@discardableResult
private func checkReadable(_ soup: String) -> Int {
    guard let text = fuzzTry("read back \(soup)", { try store.runSmartQuery(specJSON: "{\"queryType\":\"smart\",\"pageSize\":100000,\"smartSql\":\"SELECT {\(soup):_soup} FROM {\(soup)}\"}") }) else {
        fuzzFail("the entries of '\(soup)' cannot be read back after a sync")
    }
    fuzzExpectJSON(text, "read back")
    store.closeCursors(owner: 0)
    guard let page = fuzzTry("parse \(soup)", { try JSONDocument.parse(text.string, limitDepth: false) }),
          let rows = page.root["currentPageOrderedEntries"]?.elements else { fuzzFail("the read back of '\(soup)' is not a query answer") }
    for row in rows {
        let entry = row[0]?.dump() ?? ""
        var bytes = Array(entry.utf8)
        if JSONRules.firstTooDeep(&bytes, count: bytes.count, limit: JSONRules.maxDepth) != nil {
            fuzzFail("an entry of '\(soup)' nests deeper than \(JSONRules.maxDepth) levels: \(entry.prefix(200))")
        }
    }
    return rows.count
}

/// `body` with every object key's printable ASCII characters written as \u escapes (a key is a
/// string followed by a colon); other bytes as they are, so text that is not JSON stays not JSON.
private func escapingKeys(_ body: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var i = 0
    while i < body.count {
        guard body[i] == UInt8(ascii: "\"") else { out.append(body[i]); i += 1; continue }
        var end = i + 1
        while end < body.count, body[end] != UInt8(ascii: "\"") { end += body[end] == UInt8(ascii: "\\") ? 2 : 1 }
        guard end < body.count else { out.append(contentsOf: body[i...]); break }
        var next = end + 1
        while next < body.count, [0x20, 0x0A, 0x0D, 0x09].contains(body[next]) { next += 1 }
        let isKey = next < body.count && body[next] == UInt8(ascii: ":")
        out.append(UInt8(ascii: "\""))
        var k = i + 1
        while k < end {
            let c = body[k]
            if c == UInt8(ascii: "\\") {
                out.append(contentsOf: body[k..<min(k + 2, end)]); k += 2
            } else if isKey && c >= 0x20 && c < 0x80 {
                // (A raw control character stays raw: escaped, it would make invalid JSON valid.)
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: Array("\\u00".utf8) + [hex[Int(c >> 4)], hex[Int(c & 15)]])
                k += 1
            } else {
                out.append(c); k += 1
            }
        }
        out.append(UInt8(ascii: "\""))
        i = end + 1
    }
    return out
}

/// Runs `run` against `answers` from a reset store; its end state and the entries stored.
private func runOnce(_ run: Run, _ answers: [(Int, [UInt8])]) -> (SyncState, Int) {
    let manager = manager  // made first: it registers the soup of sync states
    fuzzSetup("reset") {
        try store.clearSoup(fuzzSoup)
        try store.clearSoup("contacts")
        try store.clearSoup(SyncStateStore.soupName)
        _ = try store.upsert(soup: fuzzSoup, entriesJSON: fuzzSoupEntries)
        if case .up = run {
            _ = try store.upsert(soup: fuzzSoup, entriesJSON: dirtyAccounts)
            _ = try store.upsert(soup: "contacts", entriesJSON: dirtyContacts)
        }
    }
    server.load(answers)
    let id = fuzzTry("start the sync") { () -> Int64 in
        switch run {
        case .down(let target): return try manager.syncDown(targetJSON: target, soupName: fuzzSoup, optionsJSON: nil, name: nil, callback: nil)
        case .up(let target, let options): return try manager.syncUp(targetJSON: target, soupName: fuzzSoup, optionsJSON: options, name: nil, callback: nil)
        }
    }
    guard let id else { fuzzFail("a sync did not start") }
    guard let state = fuzzTry("wait", { try manager.wait(id: id, timeoutMs: 20_000) }) else { fuzzFail("wait failed") }
    if !state.isTerminal { fuzzFail("a sync run did not end within 20 s (status \(state.status))") }
    if state.errorCode == ErrorCode.internal.rawValue { fuzzFail("a sync run ended INTERNAL: \(state.error)") }
    return (state, checkReadable(fuzzSoup) + checkReadable("contacts"))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRestAnswers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let run = runs[Int(bytes[0]) % runs.count]
    let given = answers(bytes[1...])
    let (state, stored) = runOnce(run, given)
    guard bytes[0] >= 128, case .down = run else { return 0 }
    let (again, storedAgain) = runOnce(run, given.map { ($0.0, escapingKeys($0.1)) })
    if again.status != state.status || storedAgain != stored {
        fuzzFail("the answers with escaped keys ended \(again.status) with \(storedAgain) entries, as written \(state.status) with \(stored): \(again.error.prefix(300)) / \(state.error.prefix(300))")
    }
    return 0
}
