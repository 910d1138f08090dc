/// Which store a host means (semantics §1): `{"isGlobalStore": bool, "storeName": "...",
/// "key": "...", "kdfIter": n}`, a bare boolean for isGlobalStore, or nothing for the default
/// user store. `key` opens (or creates) an encrypted store (docs/encryption.md).
public struct StoreConfig: Equatable, Sendable {
    public static let defaultName = "smartstore"

    public let isGlobal: Bool
    public let name: String
    public let key: StoreKey?

    public init(isGlobal: Bool = false, name: String = StoreConfig.defaultName, key: StoreKey? = nil) throws {
        try StoreConfig.validate(name: name)
        self.isGlobal = isGlobal
        self.name = name
        self.key = key
    }

    public static func parse(_ text: String?) throws -> StoreConfig {
        guard let text, !text.allSatisfy({ $0 == " " || $0 == "\n" || $0 == "\t" }) else { return try StoreConfig() }
        let doc = try JSONDocument.parse(text, what: "store config")
        let root = doc.root
        switch root.kind {
        case .null: return try StoreConfig()
        case .bool: return try StoreConfig(isGlobal: root.bool ?? false)
        case .object:
            var isGlobal = false
            if let g = root["isGlobalStore"], !g.isNull {
                guard let b = g.bool else { throw StoreError.argument("isGlobalStore must be true or false") }
                isGlobal = b
            }
            var name = defaultName
            if let n = root["storeName"], !n.isNull {
                guard let s = n.string else { throw StoreError.argument("storeName must be a string") }
                name = s
            }
            return try StoreConfig(isGlobal: isGlobal, name: name, key: try parseKey(root))
        default:
            throw StoreError.argument("A store config is {\"isGlobalStore\": bool, \"storeName\": string, \"key\": string}, a boolean, or null")
        }
    }

    /// `"key"` (string or null) and `"kdfIter"` (positive integer, only with a key).
    private static func parseKey(_ root: JSON) throws -> StoreKey? {
        var kdfIter = StoreKey.defaultKdfIter
        if let k = root["kdfIter"], !k.isNull {
            guard let n = k.int64, n >= 1, n <= Int64(Int32.max) else {
                throw StoreError.argument("kdfIter must be a positive integer (PBKDF2 iterations; the default is \(StoreKey.defaultKdfIter), the Mobile SDK uses 4000)")
            }
            kdfIter = Int(n)
        }
        guard let k = root["key"], !k.isNull else { return nil }
        guard let text = k.string else {
            throw StoreError.argument("key must be a string: a passphrase or x'<64 hex digits>'")
        }
        return try StoreKey(text, kdfIter: kdfIter)
    }

    /// Store names become file names, so they are restricted to a portable, traversal-free set.
    static func validate(name: String) throws {
        let ok = !name.isEmpty && name.utf8.count <= 128 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" || $0 == "-" || $0 == "." }
        guard ok else {
            throw StoreError.argument("Store name '\(name)' is invalid: use 1-128 characters of A-Z a-z 0-9 _ . - not starting with '.'")
        }
    }

    var folder: String { isGlobal ? "global" : "user" }
}
