import Glibc

/// Builds JSON text by concatenating already-serialized pieces, so stored entries are
/// returned without being parsed and serialized again.
package struct TextBuffer {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    package mutating func append(_ s: String) { bytes.append(contentsOf: s.utf8) }
    package mutating func append(_ byte: UInt8) { bytes.append(byte) }
    package mutating func append(_ buffer: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: buffer) }
    package mutating func append(cString: UnsafePointer<CChar>) {
        let n = strlen(cString)
        cString.withMemoryRebound(to: UInt8.self, capacity: n) { bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
    }

    package var string: String { String(decoding: bytes, as: UTF8.self) }

    /// A malloc'd NUL-terminated copy for the C ABI (released with free/syncstore_free).
    package func mallocCString() -> UnsafeMutablePointer<CChar>? {
        guard let p = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress { memcpy(p, base, bytes.count) }
        }
        p[bytes.count] = 0
        return p
    }
}

extension TextBuffer {
    package mutating func append(contentsOf other: TextBuffer) { bytes.append(contentsOf: other.bytes) }
}
