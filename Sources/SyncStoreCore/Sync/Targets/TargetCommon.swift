/// Keys every target understands.
struct TargetCommon {
    let json: JSON
    let idFieldName: String
    let modificationDateFieldName: String

    init(_ json: JSON) throws {
        self.json = json
        idFieldName = try TargetCommon.optionalString(json, "idFieldName") ?? "Id"
        modificationDateFieldName = try TargetCommon.optionalString(json, "modificationDateFieldName") ?? "LastModifiedDate"
    }

    /// Fixed id and modification-date fields (a protocol's own), after `check` accepted the JSON.
    init<T>(_ json: JSON, id: String, modificationDate: String, check: (JSON) throws -> T) throws {
        _ = try check(json)
        self.json = json
        idFieldName = id
        modificationDateFieldName = modificationDate
    }

    static func optionalString(_ json: JSON, _ key: String) throws -> String? {
        guard let v = json[key], !v.isNull else { return nil }
        guard let s = v.string, !s.isEmpty else { throw StoreError.argument("Target \"\(key)\" must be a non-empty string") }
        return s
    }

    func required(_ key: String) throws -> String {
        guard let s = try TargetCommon.optionalString(json, key) else {
            throw StoreError.argument("A \(json["type"]?.string ?? "") target needs \"\(key)\"")
        }
        return s
    }

    func stringList(_ key: String) throws -> [String]? {
        guard let v = json[key], !v.isNull else { return nil }
        return try SyncStoreCore.stringList(v, key)
    }
}
