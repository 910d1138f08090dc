import SyncStoreCore
/// `{"type": "collection" (default) | "single", "createFieldlist"?, "updateFieldlist"?,
///   "externalIdFieldName"?, "sobjectType"?, "idFieldName"?, "modificationDateFieldName"?,
///   "maxBatchSize"? (1...200)}` — how local changes are pushed (docs/sync.md#sync-up-targets).
package struct SyncUpTarget {
    package enum Mode: String { case collection, single, datasync }

    package let mode: Mode
    package let createFieldlist: [String]?
    package let updateFieldlist: [String]?
    package let externalIdFieldName: String?
    package let sobjectType: String?
    package let idFieldName: String
    package let modificationDateFieldName: String
    package let batchSize: Int
    /// A custom target's callbacks, when the type is registered by the host.
    package let custom: CustomTargetCallbacks?
    package let json: String

    /// Fields the server sets itself; never sent when the field list is "everything".
    package static let readOnly: Set<String> = ["id", "createddate", "createdbyid", "lastmodifieddate", "lastmodifiedbyid",
                                        "systemmodstamp", "isdeleted", "lastvieweddate", "lastreferenceddate", "attributes"]

    package static func parse(_ text: String?, customTargets: CustomTargetRegistry) throws -> SyncUpTarget {
        let doc = try JSONDocument.parseOptional(text, what: "sync up target") ?? JSONDocument.object()
        let root = doc.root.isNull ? JSONDocument.object().root : doc.root
        guard root.isObject else { throw StoreError.argument("A sync up target must be a JSON object") }
        let typeName = root["type"]?.string ?? "collection"
        let common = typeName == "datasync" ? try TargetCommon(root, id: DatasyncTable.idField, modificationDate: DatasyncTable.stampField, check: DatasyncTable.init) : try TargetCommon(root)
        var custom: CustomTargetCallbacks? = nil
        let mode: Mode
        if let m = Mode(rawValue: typeName) {
            mode = m
        } else if let callbacks = customTargets.callbacks(typeName), callbacks.pushRecord != nil {
            mode = .single
            custom = callbacks
        } else {
            throw StoreError.argument("Unknown sync up target type '\(typeName)': use collection, single, datasync, or register a custom target")
        }
        var batch = 200
        if let v = root["maxBatchSize"], !v.isNull {
            guard let n = v.int64, (1...200).contains(n) else { throw StoreError.argument("maxBatchSize must be 1 to 200") }
            batch = Int(n)
        }
        return SyncUpTarget(mode: mode, createFieldlist: try common.stringList("createFieldlist"),
                            updateFieldlist: try common.stringList("updateFieldlist"),
                            externalIdFieldName: try TargetCommon.optionalString(root, "externalIdFieldName"),
                            sobjectType: try TargetCommon.optionalString(root, "sobjectType"),
                            idFieldName: common.idFieldName, modificationDateFieldName: common.modificationDateFieldName,
                            batchSize: mode == .single ? 1 : batch, custom: custom, json: root.dump())
    }

    /// The body fields for a create or update: the configured list (else every field that is
    /// not local bookkeeping, a relationship object or server-maintained), without the id and
    /// modification-date fields and without nulls.
    package func fields(of record: JSON, creating: Bool, options: SyncOptions) -> [(String, JSON)] {
        let list = (creating ? createFieldlist : updateFieldlist) ?? options.fieldlist
        let skip = serverKeyFields
        if let list {
            return list.compactMap { name in
                guard !skip.contains(name.lowercased()), let value = record[name], !value.isNull else { return nil }
                return (name, value)
            }
        }
        return allFields(of: record)
    }

    /// The id and modification-date fields (lowercased): the server sets them, a body never sends them.
    private var serverKeyFields: Set<String> { [idFieldName.lowercased(), modificationDateFieldName.lowercased()] }

    /// Every data field of the record: no soup or sync members, no id or modification date, no
    /// server-computed or relationship fields, no nulls.
    package func allFields(of record: JSON) -> [(String, JSON)] {
        let skip = serverKeyFields
        return record.members.filter { name, value in
            !value.isNull && !name.hasPrefix("_soup") && !name.hasPrefix("__") && !skip.contains(name.lowercased())
                && !SyncUpTarget.readOnly.contains(name.lowercased()) && !value.isObject
        }
    }
}
