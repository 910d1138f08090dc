/// Stable error categories; raw values are the C ABI's SYNCSTORE_ERR_* codes.
public enum ErrorCode: Int32, Sendable {
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
}

/// The one error type the core throws. Messages say what was wrong and what to do.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let code: ErrorCode
    public let message: String
    public let retryable: Bool

    public init(_ code: ErrorCode, _ message: String, retryable: Bool = false) {
        self.code = code
        self.message = message
        self.retryable = retryable
    }

    public var description: String { "\(code): \(message)" }

    static func argument(_ message: String) -> StoreError { StoreError(.argument, message) }
    static func notFound(_ message: String) -> StoreError { StoreError(.notFound, message) }
    static func soupNotFound(_ soup: String) -> StoreError {
        StoreError(.notFound, "Soup '\(soup)' does not exist; register it first")
    }
}
