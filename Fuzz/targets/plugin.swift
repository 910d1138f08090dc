// The hybrid plugins' dispatcher (docs/hybrid-plugin.md): the first line names a service and an
// action ("smartstore pgQuerySoup"), the rest is the args array cordova.exec would pass. Every
// call must answer exactly once, with a status the header knows (never INTERNAL), a success
// value that is JSON (never none: the platforms answer "OK" or true where there is nothing else
// to say) and an error message that is a JSON string. Runs are left out (they would
// answer from the sync thread, after this input) and there is no remote, so the session
// services answer AUTH.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

private let plugin: HybridPlugin = fuzzSetup("plugin") {
    let made = try HybridPlugin(root: "\(fuzzRoot)/plugin", optionsJSON: nil)
    let setup = #"[{"soupName": "accounts", "indexes": [{"path": "Id", "type": "string"}, {"path": "Name", "type": "full_text"}]}]"#
    made.exec(service: HybridPlugin.smartStoreService, action: "pgRegisterSoup", argsJSON: setup) { status, _ in
        if status != 0 { fuzzFail("harness setup (register the soup) failed: \(status)") }
    }
    return made
}

private let services = ["smartstore": HybridPlugin.smartStoreService, "mobilesync": HybridPlugin.mobileSyncService,
                        "oauth": HybridPlugin.oauthService, "network": HybridPlugin.networkService]
private let runs: Set<String> = ["syncDown", "syncUp", "reSync", "cleanResyncGhosts"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlugin(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size) else { return 0 }
    let (head, args) = fuzzSplit(text)
    let words = head.split(separator: " ", maxSplits: 1).map(String.init)
    guard words.count == 2, !runs.contains(words[1]) else { return 0 }
    let service = services[words[0]] ?? words[0]
    final class Answers: @unchecked Sendable { var list: [(Int32, String?)] = [] }
    let answers = Answers()
    plugin.exec(service: service, action: words[1], argsJSON: args) { status, json in answers.list.append((status, json)) }
    guard answers.list.count == 1, let (status, json) = answers.list.first else {
        fuzzFail("\(head) answered \(answers.list.count) times")
    }
    guard (0...11).contains(status), status != ErrorCode.internal.rawValue else {
        fuzzFail("\(head) answered status \(status): \(json ?? "")")
    }
    guard let json else { fuzzFail("\(head) answered status \(status) without a value") }
    guard let doc = try? JSONDocument.parse(json, what: "answer") else { fuzzFail("\(head) answered text that is not JSON: \(json)") }
    if status != 0 && doc.root.string == nil { fuzzFail("\(head)'s error is not a JSON string: \(json)") }
    return 0
}
