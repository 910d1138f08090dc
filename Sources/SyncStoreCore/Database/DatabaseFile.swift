import CSQLite
import CSyncStoreCipher
import Glibc

/// The key of an encrypted store as the host gave it: a passphrase, or `x'<64 hex>'` (the raw
/// 256-bit key, no KDF) or `x'<96 hex>'` (raw key and salt), with the PBKDF2 iterations for a
/// passphrase. Its text is never printed, logged or stored (docs/encryption.md).
package struct StoreKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// SQLCipher 4's default; the Mobile SDK uses 4000.
    package static let defaultKdfIter = 256_000

    private let secret: Secret
    package let kdfIter: Int

    package init(_ text: String, kdfIter: Int = StoreKey.defaultKdfIter) throws {
        guard !text.isEmpty else {
            throw StoreError.argument("The key must not be empty; leave \"key\" out (or null) for a store that is not encrypted")
        }
        // x'...' is the raw-key form; a malformed one is a mistake, not a passphrase.
        let utf8 = Array(text.utf8)
        if utf8.count >= 3, utf8[0] | 0x20 == UInt8(ascii: "x"), utf8[1] == UInt8(ascii: "'"), utf8.last == UInt8(ascii: "'") {
            let hex = utf8[2..<(utf8.count - 1)]
            let isHex = hex.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0 | 0x20) }
            guard isHex && (hex.count == 64 || hex.count == 96) else {
                throw StoreError.argument("A raw key is x'<64 hex digits>' (the 256-bit key) or x'<96 hex digits>' (key and salt)")
            }
        }
        guard kdfIter >= 1 && kdfIter <= Int(Int32.max) else {
            throw StoreError.argument("kdfIter must be an integer from 1 to \(Int32.max) (the default is \(StoreKey.defaultKdfIter))")
        }
        secret = Secret(Array(text.utf8))
        self.kdfIter = kdfIter
    }

    package var description: String { "StoreKey(<hidden>, kdfIter: \(kdfIter))" }
    package var debugDescription: String { description }

    package static func == (a: StoreKey, b: StoreKey) -> Bool { a.kdfIter == b.kdfIter && a.secret.bytes == b.secret.bytes }

    package func withBytes<T>(_ body: (UnsafePointer<CChar>, Int) -> T) -> T {
        secret.bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else { return "".withCString { body($0, 0) } }
                return body(base, chars.count)
            }
        }
    }

    /// A class so the bytes are wiped once, when the last copy of the key goes, and so reflection
    /// (`dump`, default descriptions of containing types) shows no text.
    private final class Secret: @unchecked Sendable, CustomReflectable {
        var bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        deinit {
            bytes.withUnsafeMutableBufferPointer { buffer in
                if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
            }
        }
        var customMirror: Mirror { Mirror(self, children: []) }
    }
}

/// The database file a store's connections open: its path and, for an encrypted store, the key
/// the codec registered for it (derived once per store open; wiped when the last connection using
/// it has closed and this object is gone).
package final class DatabaseFile: @unchecked Sendable {
    package let path: String
    /// The codec's number for the key; 0 for a plaintext store.
    package let keyId: Int64
    package var isEncrypted: Bool { keyId != 0 }
    /// The KDF iterations of the key (the default for a plaintext file).
    package let kdfIter: Int
    /// Read as a file nobody changes (SQLite's `immutable`): a read-only store in a directory
    /// this process cannot write, with no -wal file, which SQLite could not open otherwise.
    package var immutable = false

    /// Checks that `key` fits the file at `path` (nil: the file must be plaintext or new) and
    /// registers the key. Never writes the file. `keyFrom` names the file whose salt the key
    /// takes when it is not `path` (a change of key writes the new store beside the old one).
    package init(path: String, key: StoreKey?, keyFrom: String? = nil, kdfIter: Int = StoreKey.defaultKdfIter) throws {
        self.path = path
        self.kdfIter = key?.kdfIter ?? kdfIter
        let probed = keyFrom ?? path
        guard let key else {
            switch ss_cipher_probe(probed) {
            case Int32(SS_CIPHER_NOT_PLAINTEXT):
                throw StoreError(.auth, "Store file '\(path)' is encrypted: open it with its key (\"key\" in the store config). The file was not changed.")
            case Int32(SS_CIPHER_NOT_A_DATABASE):
                throw DatabaseFile.notADatabase(path)
            case Int32(SS_CIPHER_IO):
                throw StoreError(.storage, "Cannot read '\(path)': \(String(cString: strerror(errno)))")
            default:
                keyId = 0
                return
            }
        }
        try DatabaseFile.registerCodec()
        var id: Int64 = 0
        let rc = key.withBytes { ss_cipher_key_create(probed, $0, $1, Int32(key.kdfIter), &id) }
        switch rc {
        case Int32(SS_CIPHER_OK):
            keyId = id
        case Int32(SS_CIPHER_PLAINTEXT):
            throw StoreError(.auth, "Store file '\(path)' is not encrypted: open it without a key, or encrypt it with syncstore_change_key. The file was not changed.")
        case Int32(SS_CIPHER_WRONG_KEY):
            throw StoreError(.auth, "The key does not open store file '\(path)': it is not the key (or kdfIter) the store was encrypted with, or the file is not an encrypted store (page 1 failed its HMAC check). The file was not changed.")
        case Int32(SS_CIPHER_NOT_A_DATABASE):
            throw DatabaseFile.notADatabase(path)
        case Int32(SS_CIPHER_DAMAGED):
            throw StoreError(.storage, "Page 1 of the encrypted store '\(path)' failed its integrity check (HMAC) while the key is right: the file is damaged or was changed outside SyncStore; restore it from a backup")
        case Int32(SS_CIPHER_BAD_KEY):
            throw StoreError.argument("The key is invalid: use a non-empty passphrase or x'<64 hex digits>'")
        case Int32(SS_CIPHER_IO):
            throw StoreError(.storage, "Cannot read '\(path)' to check its key: \(String(cString: strerror(errno)))")
        default:
            throw StoreError(.internal, "The encryption library failed while deriving the key (out of memory?)")
        }
    }

    deinit { if keyId != 0 { ss_cipher_key_release(keyId) } }

    private static func notADatabase(_ path: String) -> StoreError {
        StoreError(.storage, "Cannot open database '\(path)': file is not a database (neither a SyncStore store nor an encrypted one)")
    }

    /// Whether `key` is the one this file was opened with (nil: a plaintext file).
    package func matches(_ key: StoreKey?) -> Bool {
        guard let key else { return keyId == 0 }
        guard keyId != 0 else { return false }
        return key.withBytes { ss_cipher_key_matches(keyId, $0, $1, Int32(key.kdfIter)) } == 1
    }

    /// What sqlite3_open_v2 takes: the name (a URI carrying the key's number when encrypted),
    /// the flags to add, and the VFS.
    package var sqliteName: String {
        DatabaseFile.uri(path, parameters: [keyId == 0 ? nil : "sskey=\(keyId)", immutable ? "immutable=1" : nil]
            .compactMap { $0 }.joined(separator: "&"))
    }
    /// The name of `otherPath` opened with this file's key, for ATTACH / VACUUM INTO from a
    /// connection that may not use the codec's VFS.
    package func uri(at otherPath: String) -> String {
        DatabaseFile.uri(otherPath, parameters: keyId == 0 ? "" : "vfs=\(DatabaseFile.vfsName)&sskey=\(keyId)")
    }
    /// Always a URI, so VACUUM INTO (a change of key) can name a file with its VFS and key.
    package var openFlags: Int32 { SQLITE_OPEN_URI }
    package var vfs: String? { keyId == 0 ? nil : DatabaseFile.vfsName }

    package static let vfsName = String(cString: ss_cipher_vfs_name())

    package static func registerCodec() throws {
        let rc = ss_cipher_vfs_register()
        guard rc == SQLITE_OK else { throw StoreError(.internal, "Cannot register the encryption VFS (SQLite code \(rc))") }
    }

    /// `file:` URI for a path: every byte but unreserved ones and '/' percent-encoded.
    package static func uri(_ path: String, parameters: String) -> String {
        var out = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 15)]))
            }
        }
        return parameters.isEmpty ? out : out + "?" + parameters
    }
}
