/// Stable error categories; raw values are the C ABI's SYNCSTORE_ERR_* codes, `name` their macro
/// names without the prefix (Tests/c/check_abi_facts.py checks both against include/syncstore.h).
package enum ErrorCode: Int32, Sendable, CaseIterable {
    case argument = 1
    case notFound = 2
    case exists = 3
    case busy = 4
    case network = 5
    case auth = 6
    case server = 7
    case conflict = 8
    case storage = 9
    case `internal` = 10
    case state = 11

    /// The header's name without "SYNCSTORE_ERR_" ("NOT_FOUND"): syncstore_status_name() and the
    /// CLI's JSON errors say it.
    package var name: String {
        switch self {
        case .argument: return "ARGUMENT"
        case .notFound: return "NOT_FOUND"
        case .exists: return "EXISTS"
        case .busy: return "BUSY"
        case .network: return "NETWORK"
        case .auth: return "AUTH"
        case .server: return "SERVER"
        case .conflict: return "CONFLICT"
        case .storage: return "STORAGE"
        case .internal: return "INTERNAL"
        case .state: return "STATE"
        }
    }
}

/// The one error type the core throws. Messages say what was wrong and what to do.
package struct StoreError: Error, CustomStringConvertible, Sendable {
    package let code: ErrorCode
    package let message: String
    package let retryable: Bool

    package init(_ code: ErrorCode, _ message: String, retryable: Bool = false) {
        self.code = code
        self.message = message
        self.retryable = retryable
    }

    package var description: String { "\(code): \(message)" }

    package static func argument(_ message: String) -> StoreError { StoreError(.argument, message) }
    package static func notFound(_ message: String) -> StoreError { StoreError(.notFound, message) }
    package static func soupNotFound(_ soup: String) -> StoreError {
        StoreError(.notFound, "Soup '\(soup)' does not exist; register it first")
    }
}

/// Server text kept in sync states, callbacks and `__last_error__` is bounded: a misbehaving
/// server must not copy megabytes into every status callback.
package enum MessageLimit {
    package static let bytes = 4096

    /// `text` cut to at most `bytes` UTF-8 bytes (on a character boundary), saying how much was cut.
    package static func bound(_ text: String) -> String {
        let utf8 = text.utf8
        guard utf8.count > bytes else { return text }
        var end = utf8.index(utf8.startIndex, offsetBy: bytes - 64)
        // Back up to the start of a UTF-8 sequence.
        while end > utf8.startIndex, (utf8[end] & 0xC0) == 0x80 { end = utf8.index(before: end) }
        let kept = String(decoding: utf8[utf8.startIndex..<end], as: UTF8.self)
        return kept + " … [\(utf8.count - utf8.distance(from: utf8.startIndex, to: end)) more bytes cut]"
    }
}
