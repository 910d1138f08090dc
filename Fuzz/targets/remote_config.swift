// Remote configs (`syncstore_set_remote`): instance URL, tokens, API version, TLS, timeouts
// and retry settings. An accepted config has an http(s) instance URL with a host and no trailing slash,
// an API version of the form v<major>.<minor>, and settings inside their documented ranges.
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRemoteConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size), let c = fuzzTry("RemoteConfig.parse", { try RemoteConfig.parse(text) }) else { return 0 }
    let host = c.instanceURL.drop { $0 != ":" }.dropFirst(3).first
    if !(c.instanceURL.hasPrefix("http://") || c.instanceURL.hasPrefix("https://")) || c.instanceURL.hasSuffix("/") || host == nil || host == "/" {
        fuzzFail("instance URL '\(c.instanceURL)' accepted")
    }
    let parts = c.apiVersion.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
    let digits = parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    if !c.apiVersion.hasPrefix("v") || parts.count != 2 || !digits {
        fuzzFail("API version '\(c.apiVersion)' accepted")
    }
    if !(1...10).contains(c.maxAttempts) || !(0...60_000).contains(c.retryBaseDelayMs) || !(0...600_000).contains(c.createSettleMs) {
        fuzzFail("a setting out of its range was accepted")
    }
    // The URLs requests go to are built from it.
    let rest = RestClient(config: c)
    _ = rest.url("query?q=x")
    _ = rest.url("/services/data/v62.0/query/01g")
    _ = c.effectiveTokenURL
    return 0
}
