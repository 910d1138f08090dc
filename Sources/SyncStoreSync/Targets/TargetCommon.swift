import SyncStoreCore
/// Keys every target understands.
package struct TargetCommon {
    package let json: JSON
    package let idFieldName: String
    package let modificationDateFieldName: String

    package init(_ json: JSON) throws {
        self.json = json
        idFieldName = try TargetCommon.optionalString(json, "idFieldName") ?? "Id"
        modificationDateFieldName = try TargetCommon.optionalString(json, "modificationDateFieldName") ?? "LastModifiedDate"
    }

    /// Fixed id and modification-date fields (a protocol's own), after `check` accepted the JSON.
    package init<T>(_ json: JSON, id: String, modificationDate: String, check: (JSON) throws -> T) throws {
        _ = try check(json)
        self.json = json
        idFieldName = id
        modificationDateFieldName = modificationDate
    }

    package static func optionalString(_ json: JSON, _ key: String) throws -> String? {
        guard let v = json[key], !v.isNull else { return nil }
        guard let s = v.string, !s.isEmpty else { throw StoreError.argument("Target \"\(key)\" must be a non-empty string") }
        return s
    }

    package func required(_ key: String) throws -> String {
        guard let s = try TargetCommon.optionalString(json, key) else {
            throw StoreError.argument("A \(json["type"]?.string ?? "") target needs \"\(key)\"")
        }
        return s
    }

    package func stringList(_ key: String) throws -> [String]? {
        guard let v = json[key], !v.isNull else { return nil }
        return try SyncStoreSync.stringList(v, key)
    }
}
