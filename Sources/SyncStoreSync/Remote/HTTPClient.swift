import CCurl
import Glibc
import SyncStoreSupport
import SyncStoreCore

/// One HTTP exchange.
package struct HTTPRequest {
    package var method: String
    package var url: String
    package var headers: [String] = []
    package var body: [UInt8]? = nil
}

package struct HTTPResponse {
    package let status: Int
    package let body: [UInt8]
    /// The server's clock from its `Date` header (epoch ms, whole seconds), when it sent one.
    package var date: Int64? = nil
    /// Its `Content-Type` header, when it sent one.
    package var contentType: String? = nil
    /// The `name=value` part of each `Set-Cookie` header (the Streaming API needs its cookies back).
    package var cookies: [String] = []

    package var text: String { String(decoding: body, as: UTF8.self) }
    package var isSuccess: Bool { status >= 200 && status < 300 }

    /// The body parsed from its bytes (not from `text`, which would repair invalid UTF-8).
    package func json(what: String) throws -> JSONDocument {
        try body.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return try JSONDocument.parse("", what: what) }
            return try JSONDocument.parse(bytes: base, length: raw.count, what: what)
        }
    }
}

/// Transport settings of a remote.
package struct HTTPSettings {
    package var connectTimeoutMs = 10_000
    /// A transfer slower than 1 byte/s for this long is abandoned.
    package var stallTimeoutMs = 30_000
    package var verifyTLS = true
    package var caBundle: String? = nil
    package var userAgent = "SyncStore/\(SyncStoreVersion.string)"
}

/// libcurl's process-wide setup must run once before any handle exists.
private let curlGlobal: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

/// A reusable libcurl easy handle: its connection cache keeps the TCP/TLS connection alive
/// between requests to the same host. Used by one thread at a time.
package final class HTTPClient {
    private let handle: UnsafeMutableRawPointer

    package init() throws {
        guard curlGlobal, let handle = curl_easy_init() else {
            throw StoreError(.internal, "libcurl could not be initialised")
        }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    /// Performs the request. Any HTTP status is returned; transport failures throw NETWORK
    /// (retryable), a cancelled transfer throws STATE.
    /// What to do about a certificate the client could not verify or a CA file it could not load.
    package static func tlsAdvice(_ result: CURLcode, caBundle: String?) -> String {
        switch result {
        case CURLE_PEER_FAILED_VERIFICATION:
            return caBundle == nil
                ? ". The server's TLS certificate is not trusted: give the certificate authority that signed it (a PEM file) as \"caBundle\" in the remote config"
                : ". The server's TLS certificate is not signed by the certificate authorities in \"caBundle\" \(caBundle ?? ""): give the one that signed it"
        case CURLE_SSL_CACERT_BADFILE:
            return ". The \"caBundle\" file \(caBundle ?? "") cannot be read as PEM certificates: check its path and content"
        default:
            return ""
        }
    }

    package func perform(_ request: HTTPRequest, settings: HTTPSettings, cancel: CancelFlag?) throws -> HTTPResponse {
        curl_easy_reset(handle)
        let sink = ResponseSink(cancel: cancel, body: request.body ?? [])
        let context = Unmanaged.passUnretained(sink).toOpaque()
        var headers: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(headers) }
        for header in request.headers { headers = curl_slist_append(headers, header) }

        var rc = CURLE_OK
        func set(_ option: CURLoption, _ value: Int) { if rc == CURLE_OK { rc = ccurl_setopt_long(handle, option, value) } }
        func set(_ option: CURLoption, _ value: String) { if rc == CURLE_OK { rc = value.withCString { ccurl_setopt_ptr(handle, option, $0) } } }

        set(CURLOPT_URL, request.url)
        set(CURLOPT_USERAGENT, settings.userAgent)
        set(CURLOPT_ACCEPT_ENCODING, "")  // every encoding curl supports (gzip, deflate)
        set(CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMs)
        set(CURLOPT_LOW_SPEED_LIMIT, 1)
        set(CURLOPT_LOW_SPEED_TIME, max(1, settings.stallTimeoutMs / 1000))
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_TCP_KEEPALIVE, 1)
        set(CURLOPT_SSL_VERIFYPEER, settings.verifyTLS ? 1 : 0)
        set(CURLOPT_SSL_VERIFYHOST, settings.verifyTLS ? 2 : 0)
        if let ca = settings.caBundle { set(CURLOPT_CAINFO, ca) }
        if rc == CURLE_OK { rc = ccurl_setopt_ptr(handle, CURLOPT_HTTPHEADER, headers) }
        if rc == CURLE_OK { rc = ccurl_set_writer(handle, responseWriter, context) }
        if rc == CURLE_OK { rc = ccurl_set_progress(handle, transferProgress, context) }
        if rc == CURLE_OK { rc = ccurl_set_header_fn(handle, headerReader, context) }
        // The body goes through a read callback that cannot rewind: libcurl then never resends
        // it by itself (see ccurl_set_reader); retries are the REST client's decision alone.
        if request.body != nil || request.method == "POST" || request.method == "PATCH" {
            if request.method != "POST" { set(CURLOPT_POST, 1) }
            if rc == CURLE_OK { rc = ccurl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(sink.body.count)) }
            if rc == CURLE_OK { rc = ccurl_set_reader(handle, requestReader, context) }
        }
        switch request.method {
        case "GET": set(CURLOPT_HTTPGET, 1)
        case "POST": set(CURLOPT_POST, 1)
        default: set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        guard rc == CURLE_OK else {
            throw StoreError(.internal, "libcurl refused an option: \(String(cString: curl_easy_strerror(rc)))")
        }
        let result = curl_easy_perform(handle)
        // A transfer that completed returns its answer even if the sync was stopped meanwhile:
        // dropping the answer to a write would lose what the server did.
        if result == CURLE_ABORTED_BY_CALLBACK || (result != CURLE_OK && cancel?.isCancelled ?? false) {
            throw StoreError(.state, "The transfer was cancelled because the sync was stopped")
        }
        if result == CURLE_SEND_FAIL_REWIND {
            throw StoreError(.network, "\(request.method) \(RemoteURL.redacted(request.url)): the connection closed after the request was sent, so the server may have applied it; it was not sent again",
                             retryable: true)
        }
        guard result == CURLE_OK else {
            throw StoreError(.network, "\(request.method) \(RemoteURL.redacted(request.url)) failed: \(String(cString: curl_easy_strerror(result)))"
                             + HTTPClient.tlsAdvice(result, caBundle: settings.caBundle), retryable: true)
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, body: sink.bytes, date: sink.date, contentType: sink.contentType, cookies: sink.cookies)
    }
}

/// One transfer's state shared with libcurl's callbacks: the request body and how much of it
/// was read, the response body and Date header, the cancel flag.
private final class ResponseSink {
    var bytes: [UInt8] = []
    var date: Int64? = nil
    var contentType: String? = nil
    var cookies: [String] = []
    let body: [UInt8]
    var sent = 0
    let cancel: CancelFlag?
    init(cancel: CancelFlag?, body: [UInt8]) {
        self.cancel = cancel
        self.body = body
    }
}

private let requestReader: ccurl_read_fn = { buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let n = min(size * count, sink.body.count - sink.sent)
    guard n > 0 else { return 0 }
    sink.body.withUnsafeBytes { raw in
        if let base = raw.baseAddress { UnsafeMutableRawPointer(buffer).copyMemory(from: base + sink.sent, byteCount: n) }
    }
    sink.sent += n
    return n
}

private let headerReader: ccurl_write_fn = { data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let n = size * count
    // "Date: Mon, 23 Nov 2026 09:31:49 GMT\r\n"; a new status line (after a 100 Continue) starts over.
    let line = data.withMemoryRebound(to: UInt8.self, capacity: n) { String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self) }
    if line.hasPrefix("HTTP/") {
        sink.date = nil
        sink.contentType = nil
        sink.cookies = []
    } else if line.count > 5, line.prefix(5).lowercased() == "date:" {
        sink.date = HTTPDate.parse(String(line.dropFirst(5)).trimmingSpaces())
    } else if line.count > 13, line.prefix(13).lowercased() == "content-type:" {
        sink.contentType = String(line.dropFirst(13)).trimmingSpaces()
    } else if line.count > 11, line.prefix(11).lowercased() == "set-cookie:" {
        let pair = String(line.dropFirst(11)).split(separator: ";", maxSplits: 1).first.map { String($0).trimmingSpaces() } ?? ""
        if pair.contains("=") { sink.cookies.append(pair) }
    }
    return n
}

private let responseWriter: ccurl_write_fn = { data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let n = size * count
    data.withMemoryRebound(to: UInt8.self, capacity: n) { sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
    return n
}

private let transferProgress: ccurl_progress_fn = { context, _, _, _, _ in
    guard let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    return (sink.cancel?.isCancelled ?? false) ? 1 : 0
}
