// Remote configs (`syncstore_set_remote`): instance URL, tokens, API version, TLS, timeouts
// and retry settings. An accepted config has an http(s) instance URL without a trailing slash,
// an API version of the form v<major>.<minor>, and settings inside their documented ranges.
import Glibc
@testable import SyncStoreCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRemoteConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = fuzzString(data, size), let c = fuzzTry("RemoteConfig.parse", { try RemoteConfig.parse(text) }) else { return 0 }
    if !(c.instanceURL.hasPrefix("http://") || c.instanceURL.hasPrefix("https://")) || c.instanceURL.hasSuffix("/") {
        fuzzFail("instance URL '\(c.instanceURL)' accepted")
    }
    let parts = c.apiVersion.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
    if !c.apiVersion.hasPrefix("v") || parts.count != 2 || parts.contains(where: { $0.isEmpty }) {
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
