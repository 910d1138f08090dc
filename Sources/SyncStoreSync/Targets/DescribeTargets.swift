import SyncStoreCore
/// `{"type":"layout","sobjectType":"Account","layoutType"?:"Full"|"Compact","mode"?:"View"|"Edit",
///   "formFactor"?, "recordTypeId"?}`: one record, the UI API layout, keyed
/// "<sobjectType>-<layoutType>-<mode>" in the id field, with those three fields added.
package struct LayoutTarget: SinglePageTarget {
    package let common: TargetCommon
    package let sobjectType: String
    package let layoutType: String
    package let mode: String
    package let formFactor: String?
    package let recordTypeId: String?

    package init(_ json: JSON) throws {
        common = try TargetCommon(json)
        sobjectType = try common.required("sobjectType")
        layoutType = try TargetCommon.optionalString(json, "layoutType") ?? "Full"
        mode = try TargetCommon.optionalString(json, "mode") ?? "View"
        formFactor = try TargetCommon.optionalString(json, "formFactor")
        recordTypeId = try TargetCommon.optionalString(json, "recordTypeId")
    }

    package var key: String { "\(sobjectType)-\(layoutType)-\(mode)" }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        var query = [("layoutType", layoutType), ("mode", mode)]
        if let formFactor { query.append(("formFactor", formFactor)) }
        if let recordTypeId { query.append(("recordTypeId", recordTypeId)) }
        let doc = try ctx.rest.json("GET", "ui-api/layout/\(RemoteURL.encode(sobjectType))?\(RemoteURL.query(query))", cancel: ctx.cancel)
        return try recordPage(ctx, doc, what: "layout",
                              fields: [(idFieldName, key), ("sobjectType", sobjectType), ("layoutType", layoutType), ("mode", mode)])
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? { [ctx.soupName: [key]] }
}

/// `{"type":"metadata","sobjectType":"Account"}`: one record, the object's describe, keyed by
/// the sObject type in the id field.
package struct MetadataTarget: SinglePageTarget {
    package let common: TargetCommon
    package let sobjectType: String

    package init(_ json: JSON) throws {
        common = try TargetCommon(json)
        sobjectType = try common.required("sobjectType")
    }

    package func firstPage(_ ctx: SyncContext, since: Int64?) throws -> DownPage {
        let doc = try ctx.rest.json("GET", "sobjects/\(RemoteURL.encode(sobjectType))/describe", cancel: ctx.cancel)
        return try recordPage(ctx, doc, what: "describe", fields: [(idFieldName, sobjectType)])
    }

    package func remoteIds(_ ctx: SyncContext) throws -> [String: Set<String>]? { [ctx.soupName: [sobjectType]] }
}
