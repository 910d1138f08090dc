import SyncStoreCore
/// Parses a sync down target JSON into its implementation.
package enum SyncDownTargets {
    package static func make(_ json: JSON, soupName: String, customTargets: CustomTargetRegistry?) throws -> SyncDownTarget {
        guard json.isObject else { throw StoreError.argument("A sync down target must be a JSON object with \"type\"") }
        let type = json["type"]?.string ?? (json["query"] != nil ? "soql" : "")
        switch type {
        case "soql": return try SoqlTarget(json)
        case "sosl": return try SoslTarget(json)
        case "mru": return try MruTarget(json)
        case "refresh": return try RefreshTarget(json, soupName: soupName)
        case "parent_children": return try ParentChildrenTarget(json)
        case "briefcase": return try BriefcaseTarget(json)
        case "layout": return try LayoutTarget(json)
        case "metadata": return try MetadataTarget(json)
        case "datasync": return try DatasyncTarget(json)
        default:
            if let custom = customTargets?.down(type) { return try custom.make(json) }
            throw StoreError.argument("Unknown sync down target type '\(type)': use soql, sosl, mru, refresh, parent_children, briefcase, layout, metadata, datasync, or register a custom target")
        }
    }
}
