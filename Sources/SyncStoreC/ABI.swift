import CSyncStoreABI
import Glibc
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

// Shared plumbing of the @_cdecl entry points: turning C arguments into Swift values and every
// thrown error into a status code plus syncstore_error, so nothing ever traps into the host.

/// syncstore_version()'s text (the header's SYNCSTORE_VERSION), copied once into storage that
/// lives as long as the process, as the header promises.
let libraryVersion = StaticCString(SyncStoreVersion.string)

/// A NUL-terminated copy of a string that is never freed nor written after it is made: the ABI's
/// "static storage" strings, readable from any thread.
struct StaticCString: @unchecked Sendable {
    let pointer: UnsafePointer<CChar>

    init(_ text: String) {
        let bytes = Array(text.utf8CString)
        let storage = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        storage.initialize(from: bytes, count: bytes.count)
        pointer = UnsafePointer(storage)
    }
}

/// Runs an entry point body: success clears `err`, a StoreError fills it, anything else is INTERNAL.
@inline(__always)
func guarded(_ err: UnsafeMutablePointer<syncstore_error>?, _ body: () throws -> Void) -> Int32 {
    SyncCompanion.install()
    do {
        try body()
        if let err { fill(err, code: 0, retryable: false, message: "") }
        return 0
    } catch let error as StoreError {
        if let err { fill(err, code: error.code.rawValue, retryable: error.retryable, message: error.message) }
        return error.code.rawValue
    } catch {
        if let err { fill(err, code: ErrorCode.internal.rawValue, retryable: false, message: "Unexpected error: \(error)") }
        return ErrorCode.internal.rawValue
    }
}

private func fill(_ err: UnsafeMutablePointer<syncstore_error>, code: Int32, retryable: Bool, message: String) {
    err.pointee.code = code
    err.pointee.retryable = retryable ? 1 : 0
    let capacity = Int(SYNCSTORE_ERROR_MESSAGE_SIZE)
    withUnsafeMutableBytes(of: &err.pointee.message) { raw in
        var utf8 = Array(message.utf8)
        if utf8.count > capacity - 1 {
            // Cut on a UTF-8 boundary so the message stays valid text.
            var cut = capacity - 1
            while cut > 0 && (utf8[cut] & 0xC0) == 0x80 { cut -= 1 }
            utf8 = Array(utf8[0..<cut])
        }
        for (i, b) in utf8.enumerated() { raw[i] = b }
        raw[utf8.count] = 0
    }
}

/// The error a host callback reported (its status and the syncstore_error it filled), as the
/// library's: `what` names the callback ("Custom target fetch_page", "The key provider").
func hostFailure(_ what: String, status: Int32, _ error: syncstore_error) -> StoreError {
    var error = error
    let message = withUnsafeBytes(of: &error.message) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    return StoreError(ErrorCode(rawValue: status) ?? .internal, "\(what) failed: \(message.isEmpty ? "no message" : message)",
                      retryable: error.retryable != 0)
}

/// A required UTF-8 string argument.
func text(_ p: UnsafePointer<CChar>?, _ name: String) throws -> String {
    guard let p else { throw StoreError(.argument, "\(name) must not be NULL") }
    guard let s = String(validatingCString: p) else { throw StoreError(.argument, "\(name) is not valid UTF-8") }
    return s
}

/// An optional UTF-8 string argument (NULL stays nil).
func optionalText(_ p: UnsafePointer<CChar>?, _ name: String) throws -> String? {
    guard let p else { return nil }
    return try text(p, name)
}

func handle(_ store: OpaquePointer?) -> Int { Int(bitPattern: store.map { UnsafeRawPointer($0) }) }

func store(_ pointer: OpaquePointer?) throws -> SmartStore {
    guard pointer != nil else { throw StoreError(.argument, "The store handle must not be NULL") }
    return try StoreRegistry.shared.store(handle(pointer))
}

/// Hands a result to the caller (freed with syncstore_free); requires a non-NULL out pointer.
func output(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ buffer: TextBuffer) throws {
    guard let out else { return }
    guard let copy = buffer.mallocCString() else { throw StoreError(.internal, "Out of memory copying the result") }
    out.pointee = copy
}

func output(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ string: String) throws {
    var buffer = TextBuffer(capacity: string.utf8.count)
    buffer.append(string)
    try output(out, buffer)
}

func clear(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) { out?.pointee = nil }

func requireOut<T>(_ out: UnsafeMutablePointer<T>?, _ name: String) throws -> UnsafeMutablePointer<T> {
    guard let out else { throw StoreError(.argument, "\(name) must not be NULL") }
    return out
}
