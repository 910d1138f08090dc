// Smart SQL: `{soup:path}` / `{soup:_soup}` translation, then SmartSqlGuard's vetting and the
// read-only authorizer. Any text is run as a smart query (a page and the cursor's first page):
// the answer is a handled error or JSON text, and the store is never changed (no write, no
// schema change, no PRAGMA, ATTACH or extension gets past the guard).
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let (store, path): (SmartStore, String) = {
    let (store, path) = fuzzFixtureStore("smart_sql")
    fuzzSetup("second soup") {
        try store.registerSoup("contacts", specsJSON: #"[{"path":"AccountId","type":"string"},{"path":"LastName","type":"full_text"}]"#)
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"AccountId":"001A","LastName":"Doe"},{"AccountId":"001B","LastName":"Roe"}]"#)
    }
    fuzzIndexDates(store, soup: "contacts")
    return (store, path)
}()
private let before = fuzzFingerprint(path)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSmartSql(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let sql = fuzzString(data, size) else { return 0 }
    let spec = "{\"queryType\":\"smart\",\"pageSize\":4,\"timeoutMs\":500,\"smartSql\":\(fuzzJSONString(sql))}"
    if let out = fuzzTry("runSmartQuery", { try store.runSmartQuery(specJSON: spec) }) { fuzzExpectJSON(out, "runSmartQuery") }
    if let out = fuzzTry("queryPage", { try store.queryPage(soup: nil, specJSON: spec, page: 1) }) { fuzzExpectJSON(out, "queryPage") }
    store.closeCursors(owner: 0)
    let now = fuzzFingerprint(path)
    if now != before { fuzzFail("Smart SQL changed the store:\n\(sql)\n--- before\n\(before)--- after\n\(now)") }
    return 0
}
