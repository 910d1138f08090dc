/// Which store a host means (docs/smartstore.md#stores): `{"isGlobalStore": bool, "storeName": "...",
/// "key": "...", "kdfIter": n, "readOnly": bool}`, a bare boolean for isGlobalStore, or nothing
/// for the default user store. `key` opens (or creates) an encrypted store (docs/encryption.md);
/// `readOnly` opens an existing store for reading only (a file or directory this process cannot
/// write).
package struct StoreConfig: Equatable, Sendable {
    package static let defaultName = "smartstore"

    package let isGlobal: Bool
    package let name: String
    package let key: StoreKey?
    /// PBKDF2 iterations: the key's, or (no key) the ones a later change of key will use.
    package let kdfIter: Int
    /// Opened for reading only: never created or written (see SmartStore's `readOnly`).
    package let readOnly: Bool

    package init(isGlobal: Bool = false, name: String = StoreConfig.defaultName, key: StoreKey? = nil,
                kdfIter: Int? = nil, readOnly: Bool = false) throws {
        try StoreConfig.validate(name: name)
        self.isGlobal = isGlobal
        self.name = name
        self.key = key
        self.kdfIter = key?.kdfIter ?? kdfIter ?? StoreKey.defaultKdfIter
        self.readOnly = readOnly
    }

    package static func parse(_ text: String?) throws -> StoreConfig {
        guard let doc = try JSONDocument.parseOptional(text, what: "store config") else { return try StoreConfig() }
        let root = doc.root
        switch root.kind {
        case .null: return try StoreConfig()
        case .bool: return try StoreConfig(isGlobal: root.bool ?? false)
        case .object:
            let (isGlobal, name) = try identity(root)
            var readOnly = false
            if let r = root["readOnly"], !r.isNull {
                guard let b = r.bool else { throw StoreError.argument("readOnly must be true or false") }
                readOnly = b
            }
            let kdfIter = try parseKdfIter(root)
            let key = try parseKey(root, kdfIter: kdfIter)
            return try StoreConfig(isGlobal: isGlobal, name: name, key: key, kdfIter: kdfIter, readOnly: readOnly)
        default:
            throw StoreError.argument("A store config is {\"isGlobalStore\": bool, \"storeName\": string, \"key\": string, \"readOnly\": bool}, a boolean, or null")
        }
    }

    /// Which store an object names: "isGlobalStore" (false when missing or null) and "storeName"
    /// (the default store when missing or null); the hybrid plugins read their calls' the same way.
    package static func identity(_ root: JSON) throws -> (isGlobal: Bool, name: String) {
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
        return (isGlobal, name)
    }

    /// `"kdfIter"`: a positive integer or null.
    private static func parseKdfIter(_ root: JSON) throws -> Int {
        guard let k = root["kdfIter"], !k.isNull else { return StoreKey.defaultKdfIter }
        guard let n = k.int64, n >= 1, n <= Int64(Int32.max) else {
            throw StoreError.argument("kdfIter must be a positive integer (PBKDF2 iterations; the default is \(StoreKey.defaultKdfIter), the Mobile SDK uses 4000)")
        }
        return Int(n)
    }

    /// `"key"`: a string or null.
    private static func parseKey(_ root: JSON, kdfIter: Int) throws -> StoreKey? {
        guard let k = root["key"], !k.isNull else { return nil }
        guard let text = k.string else {
            throw StoreError.argument("key must be a string: a passphrase or x'<64 hex digits>'")
        }
        return try StoreKey(text, kdfIter: kdfIter)
    }

    /// Store names become file names, so they are restricted to a portable, traversal-free set.
    package static func validate(name: String) throws {
        let ok = !name.isEmpty && name.utf8.count <= 128 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" || $0 == "-" || $0 == "." }
        guard ok else {
            throw StoreError.argument("Store name '\(name)' is invalid: use 1-128 characters of A-Z a-z 0-9 _ . - not starting with '.'")
        }
    }

    package var folder: String { isGlobal ? "global" : "user" }
}
