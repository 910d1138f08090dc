import SyncStoreCore
/// Sync down targets: the JSON parsed into a `SyncDownTargetKind` (once, see SyncTarget), and a
/// parsed target made the `SyncDownTarget` a run pages through.
package enum SyncDownTargets {
    package static func parse(_ json: JSON, soupName: String) throws -> SyncDownTargetKind {
        if TwoPhaseTarget.isTwoPhase(json) { return .twoPhase(try TwoPhaseTarget(json, soupName: soupName)) }
        return try builtIn(json, soupName: soupName).map { .builtIn($0) }
            ?? .custom(UnboundCustomTarget(type: json["type"]?.string ?? "", parsed: Result { try TargetCommon(json) }, text: json.dump()))
    }

    /// A built-in target; nil: the type is not one (a custom target's, or unknown).
    private static func builtIn(_ json: JSON, soupName: String) throws -> SyncDownTarget? {
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
        default: return nil
        }
    }

    /// The target a run pages through: a custom one is bound to the callbacks registered for its
    /// type now. Nil for a two-phase target (TwoPhaseTask runs it).
    package static func target(_ kind: SyncDownTargetKind, customTargets: CustomTargetRegistry) throws -> SyncDownTarget? {
        switch kind {
        case .twoPhase: return nil
        case .builtIn(let target): return target
        case .custom(let custom):
            guard let callbacks = customTargets.down(custom.type) else {
                throw StoreError.argument("Unknown sync down target type '\(custom.type)': use soql, sosl, mru, refresh, parent_children, briefcase, layout, metadata, datasync, or register a custom target")
            }
            return CustomDownTarget(common: try custom.parsed.get(), targetJSON: custom.text, callbacks: callbacks)
        }
    }
}
