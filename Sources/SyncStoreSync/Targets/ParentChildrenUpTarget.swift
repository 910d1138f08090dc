import SyncStoreCore
/// A parent_children sync up target, read and checked (when the sync is created, and for each
/// run): each side is a single-record target on its own soup.
package struct ParentChildrenUpTarget {
    package let parent: SyncUpTarget
    package let children: SyncUpTarget
    package let parentSoup: String
    package let childSoup: String
    package let parentIdFieldName: String

    package init(_ targetJSON: String) throws {
        let doc = try JSONDocument.parse(targetJSON, what: "sync up target")
        let root = doc.root
        let registry = CustomTargetRegistry()
        func side(_ key: String, create: String, update: String) throws -> (SyncUpTarget, String, JSON) {
            guard let json = root[key], json.isObject else { throw StoreError.argument("A parent_children sync up target needs \"\(key)\"") }
            let common = try TargetCommon(json)
            let soup = try common.required("soupName")
            let sideDoc = JSONDocument.object()
            sideDoc.root.set("type", owned: JSONMake.string("single"))
            sideDoc.root.set("sobjectType", owned: JSONMake.string(try common.required("sobjectType")))
            sideDoc.root.set("idFieldName", owned: JSONMake.string(common.idFieldName))
            sideDoc.root.set("modificationDateFieldName", owned: JSONMake.string(common.modificationDateFieldName))
            if let v = root[create] { sideDoc.root.set("createFieldlist", owned: v.retained()) }
            if let v = root[update] { sideDoc.root.set("updateFieldlist", owned: v.retained()) }
            return (try SyncUpTarget.parse(sideDoc.root.dump(), customTargets: registry), soup, json)
        }
        (parent, parentSoup, _) = try side("parent", create: "parentCreateFieldlist", update: "parentUpdateFieldlist")
        let childJSON: JSON
        (children, childSoup, childJSON) = try side("children", create: "childrenCreateFieldlist", update: "childrenUpdateFieldlist")
        parentIdFieldName = try TargetCommon(childJSON).required("parentIdFieldName")
    }
}
