import SyncStoreCore
/// `{"type":"parent_children", "parent": {"sobjectType", "soupName", "idFieldName"?,
///   "modificationDateFieldName"?}, "parentFieldlist": [...], "parentSoqlFilter"?: "...",
///   "children": {"sobjectType", "sobjectTypePlural", "soupName", "parentIdFieldName",
///   "idFieldName"?, "modificationDateFieldName"?}, "childrenFieldlist": [...],
///   "relationshipType"?: "MASTER_DETAIL"|"LOOKUP"}`: parents and their children in one SOQL
/// with a child subquery; parents go to the parent soup, children to theirs. Every run fetches
/// the whole scope: a timestamp filter on parents would miss children changed on their own.
package struct ParentChildrenTarget: SyncDownTarget {
    package struct Side {
        package let sobjectType: String
        package let soupName: String
        package let idFieldName: String
        package let modificationDateFieldName: String

        package init(_ json: JSON?, what: String) throws {
            guard let json, json.isObject else { throw StoreError.argument("A parent_children target needs a \"\(what)\" object") }
            let common = try TargetCommon(json)
            sobjectType = try common.required("sobjectType")
            soupName = try common.required("soupName")
            idFieldName = common.idFieldName
            modificationDateFieldName = common.modificationDateFieldName
        }
    }

    package let parent: Side
    package let children: Side
    package let childrenPlural: String
    package let parentIdFieldName: String
    package let parentFields: [String]
    package let childFields: [String]
    package let filter: String?

    package var idFieldName: String { parent.idFieldName }
    package var modificationDateFieldName: String { parent.modificationDateFieldName }

    package init(_ json: JSON) throws {
        parent = try Side(json["parent"], what: "parent")
        children = try Side(json["children"], what: "children")
        guard let childJSON = json["children"] else { throw StoreError.argument("A parent_children target needs \"children\"") }
        let childCommon = try TargetCommon(childJSON)
        childrenPlural = try childCommon.required("sobjectTypePlural")
        parentIdFieldName = try childCommon.required("parentIdFieldName")
        let common = try TargetCommon(json)
        func with(_ list: [String], _ required: [String]) -> [String] {
            var fields = list
            for f in required where !fields.contains(where: { $0.caseInsensitiveEquals(f) }) { fields.append(f) }
            return fields
        }
        parentFields = with(try common.stringList("parentFieldlist") ?? [], [parent.idFieldName, parent.modificationDateFieldName])
        childFields = with(try common.stringList("childrenFieldlist") ?? [],
                           [children.idFieldName, children.modificationDateFieldName, parentIdFieldName])
        filter = try TargetCommon.optionalString(json, "parentSoqlFilter")
    }

    private func soql(parentFields: [String], childFields: [String], ordered: Bool) -> String {
        var q = "SELECT \(parentFields.joined(separator: ", ")), (SELECT \(childFields.joined(separator: ", ")) FROM \(childrenPlural)) FROM \(parent.sobjectType)"
        if let filter { q += " WHERE \(filter)" }
        if ordered { q += " ORDER BY \(parent.modificationDateFieldName)" }
        return q
    }

    private func page(_ ctx: SyncContext, _ doc: JSONDocument) throws -> DownPage {
        guard let records = doc.root["records"], records.isArray else {
            throw StoreError(.server, "The parent_children query response has no records array")
        }
        var parents: [JSON] = []
        var kids: [JSON] = []
        // Children are detached from their parent below, so each is given its own reference first.
        var kidDocs: [JSONDocument] = []
        for record in records.elements {
            if let related = record[childrenPlural] {
                for child in try allChildren(ctx, related) {
                    guard let own = child.retained() else { continue }
                    let doc = JSONDocument(owning: own)
                    kidDocs.append(doc)
                    kids.append(doc.root)
                }
                record.remove(childrenPlural)
            }
            parents.append(record)
        }
        let done = doc.root["done"]?.bool ?? true
        return DownPage(owner: [doc] + kidDocs, groups: [
            RecordGroup(soupName: parent.soupName, idFieldName: parent.idFieldName,
                        modificationDateFieldName: parent.modificationDateFieldName, records: parents),
            RecordGroup(soupName: children.soupName, idFieldName: children.idFieldName,
                        modificationDateFieldName: children.modificationDateFieldName, records: kids),
        ], totalSize: doc.root["totalSize"]?.int64, next: done ? nil : doc.root["nextRecordsUrl"]?.string)
    }

    /// A parent's children: the nested result's records, then its further pages when the
    /// server cut the list (`"done":false` with a `nextRecordsUrl` of its own).
    private func allChildren(_ ctx: SyncContext, _ related: JSON) throws -> [JSON] {
        var children = related["records"]?.elements ?? []
        var done = related["done"]?.bool ?? true
        var next = related["nextRecordsUrl"]?.string
        var locators = PageLocators()
        while !done, let path = next {
            try locators.check(path)
            let more = try ctx.rest.json("GET", path, cancel: ctx.cancel)
            guard let records = more.root["records"], records.isArray else {
                throw StoreError(.server, "A page of children (\(path)) has no records array")
            }
            children += records.elements
            done = more.root["done"]?.bool ?? true
            next = more.root["nextRecordsUrl"]?.string
        }
        return children
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        try page(ctx, try ctx.rest.json("GET", QueryPaging.queryPath(soql(parentFields: parentFields, childFields: childFields, ordered: true)), cancel: ctx.cancel))
    }

    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        guard let next = page.next else { throw StoreError(.internal, "nextPage called after the last page") }
        return try self.page(ctx, try ctx.rest.json("GET", next, cancel: ctx.cancel))
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? {
        var parents = Set<String>()
        var kids = Set<String>()
        var path: String? = QueryPaging.queryPath(soql(parentFields: [parent.idFieldName], childFields: [children.idFieldName], ordered: false))
        var locators = PageLocators()
        while let current = path {
            try locators.check(current)
            let doc = try ctx.rest.json("GET", current, cancel: ctx.cancel)
            for record in doc.root["records"]?.elements ?? [] {
                if let id = record[parent.idFieldName]?.string { parents.insert(id) }
                guard let related = record[childrenPlural] else { continue }
                for child in try allChildren(ctx, related) {
                    if let id = child[children.idFieldName]?.string { kids.insert(id) }
                }
            }
            path = (doc.root["done"]?.bool ?? true) ? nil : doc.root["nextRecordsUrl"]?.string
        }
        return [parent.soupName: parents, children.soupName: kids]
    }
}
