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
    /// A custom target's callbacks, when the type is registered by the host (see SyncUpTargets.bind).
    package var custom: CustomTargetCallbacks? = nil
    /// A custom target's JSON, as its callbacks receive it.
    package var customJSON = ""

    /// Fields the server sets itself; never sent when the field list is "everything".
    package static let readOnly: Set<String> = ["id", "createddate", "createdbyid", "lastmodifieddate", "lastmodifiedbyid",
                                        "systemmodstamp", "isdeleted", "lastvieweddate", "lastreferenceddate", "attributes"]

    package init(mode: Mode, createFieldlist: [String]? = nil, updateFieldlist: [String]? = nil, externalIdFieldName: String? = nil,
                 sobjectType: String? = nil, idFieldName: String, modificationDateFieldName: String, batchSize: Int) {
        self.mode = mode
        self.createFieldlist = createFieldlist
        self.updateFieldlist = updateFieldlist
        self.externalIdFieldName = externalIdFieldName
        self.sobjectType = sobjectType
        self.idFieldName = idFieldName
        self.modificationDateFieldName = modificationDateFieldName
        self.batchSize = batchSize
    }

    /// The rest of a target whose type and common keys are read (`mode` .single for a custom one).
    fileprivate init(_ root: JSON, mode: Mode, common: TargetCommon) throws {
        var batch = 200
        if let v = root["maxBatchSize"], !v.isNull {
            guard let n = v.int64, (1...200).contains(n) else { throw StoreError.argument("maxBatchSize must be 1 to 200") }
            batch = Int(n)
        }
        self.init(mode: mode, createFieldlist: try common.stringList("createFieldlist"),
                  updateFieldlist: try common.stringList("updateFieldlist"),
                  externalIdFieldName: try TargetCommon.optionalString(root, "externalIdFieldName"),
                  sobjectType: try TargetCommon.optionalString(root, "sobjectType"),
                  idFieldName: common.idFieldName, modificationDateFieldName: common.modificationDateFieldName,
                  batchSize: mode == .single ? 1 : batch)
    }

    /// A collection target on these id and modification-date fields, everything else by default.
    package static func keys(idFieldName: String, modificationDateFieldName: String) -> SyncUpTarget {
        SyncUpTarget(mode: .collection, idFieldName: idFieldName, modificationDateFieldName: modificationDateFieldName, batchSize: 200)
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

/// Sync up targets: the JSON parsed into a `SyncUpTargetKind` (once, see SyncTarget), and a
/// custom one bound to its callbacks. SyncTasks.make turns each kind into the task that runs it.
package enum SyncUpTargets {
    /// JSON null is the default target, `{}` (a collection of the soup's records).
    package static func parse(_ json: JSON, soupName: String) throws -> SyncUpTargetKind {
        let root = json.isNull ? JSONDocument.object().root : json
        if TwoPhaseTarget.isTwoPhase(root) { return .twoPhase(try TwoPhaseTarget(root, soupName: soupName)) }
        if root["type"]?.string == "parent_children" { return .parentChildren(try ParentChildrenUpTarget(root)) }
        guard root.isObject else { throw StoreError.argument("A sync up target must be a JSON object") }
        let typeName = root["type"]?.string ?? "collection"
        if typeName == SyncUpTarget.Mode.datasync.rawValue {
            let table = try DatasyncTable(root)
            let common = try TargetCommon(root, id: DatasyncTable.idField, modificationDate: DatasyncTable.stampField) { _ in table }
            return .datasync(try SyncUpTarget(root, mode: .datasync, common: common), table)
        }
        let common = try TargetCommon(root)
        if let mode = SyncUpTarget.Mode(rawValue: typeName) { return .salesforce(try SyncUpTarget(root, mode: mode, common: common)) }
        return .custom(UnboundCustomTarget(type: typeName, parsed: Result { try SyncUpTarget(root, mode: .single, common: common) },
                                           text: root.dump()))
    }

    /// A custom target bound to the callbacks registered for its type now.
    package static func bind(_ custom: UnboundCustomTarget<SyncUpTarget>, customTargets: CustomTargetRegistry) throws -> SyncUpTarget {
        guard let callbacks = customTargets.callbacks(custom.type), callbacks.pushRecord != nil else {
            throw StoreError.argument("Unknown sync up target type '\(custom.type)': use collection, single, datasync, or register a custom target")
        }
        var target = try custom.parsed.get()
        target.custom = callbacks
        target.customJSON = custom.text
        return target
    }
}
