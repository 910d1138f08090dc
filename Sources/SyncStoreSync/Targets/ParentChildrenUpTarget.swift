import SyncStoreCore
/// A parent_children sync up target, read and checked (when the sync is created or read from the
/// sync table): each side is a single-record target on its own soup.
package struct ParentChildrenUpTarget {
    package let parent: SyncUpTarget
    package let children: SyncUpTarget
    package let parentSoup: String
    package let childSoup: String
    package let parentIdFieldName: String

    package init(_ root: JSON) throws {
        func side(_ key: String, create: String, update: String) throws -> (SyncUpTarget, String, TargetCommon) {
            guard let json = root[key], json.isObject else { throw StoreError.argument("A parent_children sync up target needs \"\(key)\"") }
            let common = try TargetCommon(json)
            let soup = try common.required("soupName")
            let sobjectType = try common.required("sobjectType")
            // The field lists are the target's own, named as a single target names them.
            func list(_ key: String, _ name: String) throws -> [String]? {
                guard let v = root[key], !v.isNull else { return nil }
                return try stringList(v, name)
            }
            let target = SyncUpTarget(mode: .single, createFieldlist: try list(create, "createFieldlist"),
                                      updateFieldlist: try list(update, "updateFieldlist"), sobjectType: sobjectType,
                                      idFieldName: common.idFieldName, modificationDateFieldName: common.modificationDateFieldName,
                                      batchSize: 1)
            return (target, soup, common)
        }
        (parent, parentSoup, _) = try side("parent", create: "parentCreateFieldlist", update: "parentUpdateFieldlist")
        let childCommon: TargetCommon
        (children, childSoup, childCommon) = try side("children", create: "childrenCreateFieldlist", update: "childrenUpdateFieldlist")
        parentIdFieldName = try childCommon.required("parentIdFieldName")
    }
}
