import Foundation
import SyncStoreSupport

/// `sobjects/...`: describe, record CRUD, upsert by external id, updated/deleted.
extension API {
    func sobjectsRoute(_ req: APIRequest, _ s: [String], version: String) throws -> APIResponse {
        guard let typeName = s.first else {
            try allow(req, ["GET"])
            return APIResponse(status: 200, json: globalDescribe(version))
        }
        let obj = try object(typeName)
        switch s.count {
        case 1:
            switch req.method {
            case "GET": return try basicInfo(obj, version: version)
            case "POST": return try createRoute(obj, req, version: version, asUpsert: false)
            default: throw APIError.methodNotAllowed(req.method, allowed: ["GET", "POST"])
            }
        case 2 where s[1] == "describe":
            try allow(req, ["GET"])
            return APIResponse(status: 200, json: describe(obj, version: version))
        case 3 where s[1] == "describe" && s[2] == "layouts":
            try allow(req, ["GET"])
            return APIResponse(status: 200, json: describeLayouts(obj, version: version))
        case 4 where s[1] == "describe" && s[2] == "layouts":
            try allow(req, ["GET"])
            guard SFId.to18(s[3]) == API.masterRecordTypeId else { throw APIError.notFound }
            return APIResponse(status: 200, json: describeLayout(obj))
        case 2 where s[1] == "updated" || s[1] == "deleted":
            try allow(req, ["GET"])
            return try changes(obj, req, deleted: s[1] == "deleted")
        case 2 where s[1].lowercased() == "id" && req.method == "POST" && API.major(version) >= 37:
            // `Id` as the external id field with no value: an org creates the record (API 37.0+).
            return try createRoute(obj, req, version: version, asUpsert: true)
        case 2:
            guard let id = SFId.to18(s[1]), id.hasPrefix(obj.keyPrefix) else {
                throw APIError(404, "NOT_FOUND", "Provided external ID field does not exist or is not accessible: \(s[1])")
            }
            return try recordRoute(obj, id: id, req, version: version)
        case 3:
            return try externalIdRoute(obj, fieldName: s[1], value: s[2], req, version: version)
        default:
            throw APIError.notFound
        }
    }

    /// A create answers a SaveResult; `asUpsert` (POST `sobjects/{T}/Id`) an UpsertResult.
    private func createRoute(_ obj: SObjectDef, _ req: APIRequest, version: String, asUpsert: Bool) throws -> APIResponse {
        let body = try req.json()
        let id = try store.db.savepoint {
            try store.create(obj, values: try store.columnValues(obj, body: body, creating: true))
        }
        var resp = asUpsert ? upsertAnswer(id: id, created: true, version: version)
            : APIResponse(status: 201, json: .object([("id", .string(id)), ("success", .bool(true)), ("errors", .array([]))]))
        resp.headers.append(("Location", "/services/data/\(req.segments[2])/sobjects/\(obj.name)/\(id)"))
        return resp
    }

    /// An upsert's answer. From API 46.0: 201 (created) or 200 (updated) with `created`; before,
    /// 201 without `created` or 204 with no body, as an org answers at those versions.
    func upsertAnswer(id: String, created: Bool, version: String) -> APIResponse {
        let modern = API.major(version) >= 46
        if !created && !modern { return APIResponse(status: 204, body: []) }
        var pairs: [(String, JSON)] = [("id", .string(id)), ("success", .bool(true)), ("errors", .array([]))]
        if modern { pairs.append(("created", .bool(created))) }
        return APIResponse(status: created ? 201 : 200, json: .object(pairs))
    }

    private func recordRoute(_ obj: SObjectDef, id: String, _ req: APIRequest, version: String) throws -> APIResponse {
        switch req.method {
        case "GET", "HEAD":
            // A record in the recycle bin reads as missing (writes to it say ENTITY_IS_DELETED).
            guard let meta = try store.meta(obj, id: id), !meta.isDeleted else { throw APIError.notFound }
            let headers = [("ETag", meta.etag), ("Last-Modified", SFTime.httpDate(millis: meta.lastModifiedMillis))]
            if let inm = req.headers["if-none-match"], etagMatches(inm, meta) { return APIResponse(status: 304, headers: headers, body: []) }
            if let ims = req.headers["if-modified-since"], let since = SFTime.parseHTTPDate(ims), meta.lastModifiedMillis / 1000 * 1000 <= since {
                return APIResponse(status: 304, headers: headers, body: [])
            }
            let fields = try fieldList(req.query["fields"], obj: obj)
            guard let rec = try retrieve(obj, ids: [id], fields: fields, version: version).first ?? nil else { throw APIError.notFound }
            store.touch(obj.name, id)
            return APIResponse(status: 200, headers: headers, body: rec)
        case "PATCH":
            let body = try req.json()
            try store.db.savepoint {
                let meta = try store.requireLive(obj, id: id)
                try checkPreconditions(req, meta)
                try store.update(obj, id: id, values: try store.columnValues(obj, body: body, creating: false))
            }
            return APIResponse(status: 204, body: [])
        case "DELETE":
            try store.db.savepoint {
                let meta = try store.requireLive(obj, id: id)
                try checkPreconditions(req, meta)
                try store.delete(obj, id: id)
            }
            return APIResponse(status: 204, body: [])
        default:
            throw APIError.methodNotAllowed(req.method, allowed: ["GET", "PATCH", "DELETE", "HEAD"])
        }
    }

    func fieldList(_ param: String?, obj: SObjectDef) throws -> [String]? {
        guard let param, !param.isEmpty else { return nil }
        let names = param.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for n in names where !n.contains(".") && obj.field(n) == nil {
            throw APIError(400, "INVALID_FIELD", "No such column '\(n)' on entity '\(obj.name)'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name. Please reference your WSDL or the describe call for the appropriate names.")
        }
        return names
    }

    private func etagMatches(_ header: String, _ meta: Store.RecordMeta) -> Bool {
        header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.contains { tag in
            tag == "*" || tag == meta.etag || tag.replacingOccurrences(of: "W/", with: "") == meta.etag
        }
    }

    /// If-Unmodified-Since (second precision, as HTTP dates are) and If-Match/If-None-Match.
    func checkPreconditions(_ req: APIRequest, _ meta: Store.RecordMeta) throws {
        if let ius = req.headers["if-unmodified-since"] {
            guard let since = SFTime.parseHTTPDate(ius) else {
                throw APIError(400, "INVALID_HEADER_TYPE", "Invalid If-Unmodified-Since header: \(ius)")
            }
            if meta.lastModifiedMillis / 1000 * 1000 > since {
                throw APIError(412, "PRECONDITION_FAILED", "The requested entity has been modified since \(ius). LastModifiedDate: \(meta.lastModified)")
            }
        }
        if let im = req.headers["if-match"], !etagMatches(im, meta) {
            throw APIError(412, "PRECONDITION_FAILED", "The requested entity's ETag does not match If-Match: \(im). Current ETag: \(meta.etag)")
        }
        if let inm = req.headers["if-none-match"], etagMatches(inm, meta) {
            throw APIError(412, "PRECONDITION_FAILED", "The requested entity matches If-None-Match: \(inm)")
        }
    }

    /// Value of an external id given in a URL, in the field's stored form.
    func externalIdValue(_ field: FieldDef, _ raw: String) -> SQLValue {
        switch field.type {
        case .int: return Int64(raw).map { .int($0) } ?? .text(raw)
        case .double, .currency, .percent: return Double(raw).map { .real($0) } ?? .text(raw)
        default: return .text(raw)
        }
    }

    private func externalIdRoute(_ obj: SObjectDef, fieldName: String, value: String, _ req: APIRequest, version: String) throws -> APIResponse {
        guard let field = obj.field(fieldName), field.externalId || field.name == "Id" else {
            throw APIError(404, "NOT_FOUND", "Provided external ID field does not exist or is not accessible: \(fieldName)")
        }
        if field.name == "Id" {
            guard let id = SFId.to18(value), id.hasPrefix(obj.keyPrefix) else { throw APIError(400, "MALFORMED_ID", "Id: id value of incorrect type: \(value)", fields: ["Id"]) }
            if req.method == "PATCH" {
                let body = try req.json()
                let created = try upsert(obj, field: field, value: value, body: body, version: version).1
                return upsertAnswer(id: id, created: created, version: version)
            }
            return try recordRoute(obj, id: id, req, version: version)
        }
        let matches = try store.ids(obj, field: field, value: externalIdValue(field, value))
        switch req.method {
        case "PATCH":
            let body = try req.json()
            let (id, created) = try upsert(obj, field: field, value: value, body: body, version: version)
            return upsertAnswer(id: id, created: created, version: version)
        case "GET", "DELETE":
            if matches.count > 1 {
                return APIResponse(status: 300, json: .array(matches.map { .string("/services/data/v\(version)/sobjects/\(obj.name)/\($0)") }))
            }
            guard let id = matches.first else { throw APIError.notFound }
            return try recordRoute(obj, id: id, req, version: version)
        default:
            throw APIError.methodNotAllowed(req.method, allowed: ["GET", "PATCH", "DELETE"])
        }
    }

    /// Upsert by external id: 0 matches creates, 1 updates, more is a 300 MULTIPLE_CHOICES error.
    func upsert(_ obj: SObjectDef, field: FieldDef, value: String, body: JSON, version: String) throws -> (String, Bool) {
        try store.db.savepoint {
            if field.name == "Id" {
                guard let id = SFId.to18(value) else { throw APIError(400, "MALFORMED_ID", "Id: id value of incorrect type: \(value)", fields: ["Id"]) }
                _ = try store.requireLive(obj, id: id)
                try store.update(obj, id: id, values: try store.columnValues(obj, body: body, creating: false))
                return (id, false)
            }
            let matches = try store.ids(obj, field: field, value: externalIdValue(field, value))
            if matches.count > 1 {
                throw APIError(300, "MULTIPLE_CHOICES", "Multiple records found for \(field.name) = \(value): \(matches.joined(separator: ", "))", fields: [field.name])
            }
            if let bodyValue = body.value(forKeyIgnoringCase: field.name), !bodyValue.isNull, bodyValue.stringValue != value, bodyValue.intValue.map(String.init) != value {
                throw APIError(400, "INVALID_FIELD", "The value of the external id field in the request body (\(bodyValue.text)) does not match the one in the URL (\(value))", fields: [field.name])
            }
            if let id = matches.first {
                try store.update(obj, id: id, values: try store.columnValues(obj, body: body, creating: false, ignoring: [field.name.lowercased()]))
                return (id, false)
            }
            var values = try store.columnValues(obj, body: body, creating: true, ignoring: [field.name.lowercased()])
            values.append((field, externalIdValue(field, value)))
            return (try store.create(obj, values: values), true)
        }
    }

    private func changes(_ obj: SObjectDef, _ req: APIRequest, deleted: Bool) throws -> APIResponse {
        guard let startText = req.query["start"], let endText = req.query["end"] else {
            throw APIError(400, "MISSING_ARGUMENT", "start and end are both required parameters")
        }
        guard let start = SFTime.parseDateTime(startText), let end = SFTime.parseDateTime(endText) else {
            throw APIError(400, "INVALID_DATE_FORMAT", "start and end must be ISO-8601 date-times, e.g. 2026-01-01T00:00:00+00:00")
        }
        guard start <= end else { throw APIError(400, "INVALID_REPLICATION_DATE", "start date must be before end date") }
        let rows = try store.changes(obj, deleted: deleted, start: SFTime.format(millis: start), end: SFTime.format(millis: end))
        let latest = SFTime.format(millis: min(end, SFTime.serverNowMillis()) / 60_000 * 60_000)
        if deleted {
            return APIResponse(status: 200, json: .object([
                ("deletedRecords", .array(rows.map { .object([("id", .string($0.0)), ("deletedDate", .string($0.1))]) })),
                ("earliestDateAvailable", .string(SFTime.format(millis: Int64(CivilDate.days(year: 2020, month: 1, day: 1)) * 86_400_000))),
                ("latestDateCovered", .string(latest)),
            ]))
        }
        return APIResponse(status: 200, json: .object([
            ("ids", .array(rows.map { .string($0.0) })),
            ("latestDateCovered", .string(latest)),
        ]))
    }

    // MARK: describe

    private func urls(_ obj: SObjectDef, _ v: String) -> JSON {
        let base = "/services/data/v\(v)/sobjects/\(obj.name)"
        return .object([
            ("sobject", .string(base)), ("describe", .string("\(base)/describe")),
            ("rowTemplate", .string("\(base)/{ID}")), ("layouts", .string("\(base)/describe/layouts")),
        ])
    }

    private func objectSummary(_ obj: SObjectDef, _ v: String) -> [(String, JSON)] {
        [
            ("activateable", .bool(false)), ("createable", .bool(true)), ("custom", .bool(obj.custom)),
            ("customSetting", .bool(false)), ("deletable", .bool(true)), ("deprecatedAndHidden", .bool(false)),
            ("feedEnabled", .bool(false)), ("keyPrefix", .string(obj.keyPrefix)), ("label", .string(obj.label)),
            ("labelPlural", .string(obj.labelPlural)), ("layoutable", .bool(true)), ("mergeable", .bool(false)),
            ("mruEnabled", .bool(true)), ("name", .string(obj.name)), ("queryable", .bool(true)),
            ("replicateable", .bool(true)), ("retrieveable", .bool(true)), ("searchable", .bool(true)),
            ("triggerable", .bool(true)), ("undeletable", .bool(true)), ("updateable", .bool(true)),
            ("urls", urls(obj, v)),
        ]
    }

    private func globalDescribe(_ v: String) -> JSON {
        .object([
            ("encoding", .string("UTF-8")), ("maxBatchSize", .int(200)),
            ("sobjects", .array(schema.objects.map { .object(objectSummary($0, v)) })),
        ])
    }

    private func basicInfo(_ obj: SObjectDef, version: String) throws -> APIResponse {
        var fields = ["Id"]
        if let n = obj.nameFieldName { fields.append(n) }
        var w = JSONWriter()
        w.raw("{\"objectDescribe\":")
        w.value(.object(objectSummary(obj, version)))
        w.raw(",\"recentItems\":[")
        let ids = store.recentIds(obj.name)
        let records = try retrieve(obj, ids: ids, fields: fields, version: version).compactMap { $0 }
        for (i, r) in records.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw(r)
        }
        w.raw("]}")
        return APIResponse(status: 200, body: w.bytes)
    }

    /// One field of a describe (also a layout item's `details`).
    private func fieldDescribe(_ f: FieldDef) -> JSON {
        let isString = f.type.isText || f.type == .id || f.type == .reference
        return .object([
            ("aggregatable", .bool(true)), ("autoNumber", .bool(false)),
            ("byteLength", .int(isString ? Int64(f.length * 3) : 0)),
            ("calculated", .bool(!f.compoundOf.isEmpty)), ("cascadeDelete", .bool(f.cascadeDelete)), ("caseSensitive", .bool(false)),
            ("createable", .bool(f.createable)), ("custom", .bool(f.name.hasSuffix("__c"))),
            ("defaultValue", f.defaultValue ?? .null), ("defaultedOnCreate", .bool(f.system || f.type == .boolean || f.defaultValue != nil)),
            ("digits", .int(0)), ("externalId", .bool(f.externalId)), ("filterable", .bool(true)),
            ("groupable", .bool(f.type != .textarea && f.type != .double)), ("idLookup", .bool(f.name == "Id" || f.externalId)),
            ("label", .string(f.label)), ("length", .int(isString ? Int64(f.length) : 0)),
            ("name", .string(f.name)), ("nameField", .bool(f.nameField)), ("nillable", .bool(f.nillable)),
            ("picklistValues", .array(f.picklistValues.map { .object([("active", .bool(true)), ("defaultValue", .bool(false)), ("label", .string($0)), ("validFor", .null), ("value", .string($0))]) })),
            ("precision", .int(f.type == .currency ? 18 : 0)),
            ("referenceTo", .array(f.referenceTo.map { [.string($0)] } ?? [])),
            ("relationshipName", f.relationshipName.map { .string($0) } ?? .null),
            ("restrictedPicklist", .bool(false)), ("scale", .int(f.type == .currency ? 2 : 0)),
            ("soapType", .string(f.type.soapType)), ("sortable", .bool(f.type != .textarea)),
            ("type", .string(f.type.rawValue)), ("unique", .bool(f.unique)), ("updateable", .bool(f.updateable)),
        ])
    }

    /// The master record type: the only one here (an org without record types has just it).
    static let masterRecordTypeId = "012000000000000AAA"

    private func recordTypeInfo(_ obj: SObjectDef, _ v: String) -> [(String, JSON)] {
        [
            ("active", .bool(true)), ("available", .bool(true)), ("defaultRecordTypeMapping", .bool(true)),
            ("developerName", .string("Master")), ("master", .bool(true)), ("name", .string("Master")),
            ("recordTypeId", .string(API.masterRecordTypeId)),
            ("urls", .object([("layout", .string("/services/data/v\(v)/sobjects/\(obj.name)/describe/layouts/\(API.masterRecordTypeId)"))])),
        ]
    }

    func describe(_ obj: SObjectDef, version: String) -> JSON {
        var pairs = objectSummary(obj, version)
        pairs.append(("fields", .array(obj.fields.map(fieldDescribe))))
        pairs.append(("childRelationships", .array(obj.childRelationships.map {
            .object([("cascadeDelete", .bool($0.cascadeDelete)), ("childSObject", .string($0.childSObject)), ("deprecatedAndHidden", .bool(false)),
                     ("field", .string($0.field)), ("relationshipName", .string($0.name)), ("restrictedDelete", .bool(false))])
        })))
        pairs.append(("recordTypeInfos", .array([.object(recordTypeInfo(obj, version))])))
        pairs.append(("compactLayoutable", .bool(true)))
        return .object(pairs)
    }

    // MARK: layouts

    /// Fields a generated layout shows, two per row: everything a user enters, then (as the
    /// system information section of an org's layout) the created and modified dates.
    private func layoutRows(_ obj: SObjectDef) -> [ArraySlice<FieldDef>] {
        let visible = obj.fields.filter { !$0.system } + obj.fields.filter { $0.name == "CreatedDate" || $0.name == "LastModifiedDate" }
        return stride(from: 0, to: visible.count, by: 2).map { visible[$0..<min($0 + 2, visible.count)] }
    }

    private func layoutId(_ obj: SObjectDef) -> String { SFId.make(prefix: "00h", sequence: Int64(fnv1a(obj.name) % 1_000_000)) }
    private func sectionId(_ obj: SObjectDef) -> String { SFId.make(prefix: "01B", sequence: Int64(fnv1a(obj.name) % 1_000_000)) }

    /// `sobjects/{T}/describe/layouts`: every layout and the record type mappings (one each here).
    func describeLayouts(_ obj: SObjectDef, version: String) -> JSON {
        var mapping = recordTypeInfo(obj, version).filter { $0.0 != "active" && $0.0 != "urls" }
        mapping.append(("layoutId", .string(layoutId(obj))))
        mapping.append(("picklistsForRecordType", .array(obj.fields.filter { !$0.picklistValues.isEmpty }.map { f in
            .object([("picklistName", .string(f.name)), ("picklistValues", fieldDescribe(f)["picklistValues"] ?? .array([]))])
        })))
        return .object([
            ("layouts", .array([describeLayout(obj)])),
            ("recordTypeMappings", .array([.object(mapping)])),
            ("recordTypeSelectorRequired", .array([.bool(false)])),
        ])
    }

    /// `sobjects/{T}/describe/layouts/{recordTypeId}`: the describe layout (SOAP DescribeLayout as
    /// JSON), generated from the fields as the UI API layout is; related lists from the child relationships.
    func describeLayout(_ obj: SObjectDef) -> JSON {
        let id = layoutId(obj)
        func section(editing: Bool) -> JSON {
            var tab = 0
            let rows: [JSON] = layoutRows(obj).map { pair in
                .object([("layoutItems", .array(pair.map { f in
                    tab += 1
                    return .object([
                        ("editableForNew", .bool(f.createable)), ("editableForUpdate", .bool(f.updateable)),
                        ("label", .string(f.label)),
                        ("layoutComponents", .array([.object([("details", fieldDescribe(f)), ("displayLines", .int(1)),
                                                              ("tabOrder", .int(Int64(tab))), ("type", .string("Field")), ("value", .string(f.name))])])),
                        ("placeholder", .bool(false)), ("required", .bool(editing && f.requiredOnCreate)),
                    ])
                })), ("numItems", .int(Int64(pair.count)))])
            }
            return .object([
                ("collapsed", .bool(false)), ("columns", .int(2)), ("heading", .string("\(obj.label) Information")),
                ("layoutRows", .array(rows)), ("layoutSectionId", .string(sectionId(obj))), ("parentLayoutId", .string(id)),
                ("rows", .int(Int64(rows.count))), ("tabOrder", .string("LeftRight")),
                ("useCollapsibleSection", .bool(false)), ("useHeading", .bool(true)),
            ])
        }
        let related: [JSON] = obj.childRelationships.compactMap { rel in
            guard let child = schema.object(rel.childSObject) else { return nil }
            let shown = child.nameFieldName ?? "Id"
            let label = child.field(shown)?.label ?? shown
            return .object([
                ("accessLevelRequiredForCreate", .null), ("buttons", .array([])),
                ("columns", .array([.object([("field", .string("\(child.name).\(shown)")), ("fieldApiName", .string(shown)), ("format", .null),
                                             ("label", .string(label)), ("lookupId", .string("Id")), ("name", .string(shown)), ("sortable", .bool(true))])])),
                ("custom", .bool(child.custom)), ("field", .string(rel.field)), ("label", .string(child.labelPlural)),
                ("limitRows", .int(5)), ("name", .string(rel.name)), ("sobject", .string(child.name)), ("sort", .array([])),
            ])
        }
        return .object([
            ("buttonLayoutSection", .object([("detailButtons", .array([]))])),
            ("detailLayoutSections", .array([section(editing: false)])),
            ("editLayoutSections", .array([section(editing: true)])),
            ("feedView", .null), ("highlightsPanelLayoutSection", .null), ("id", .string(id)),
            ("multirowEditLayoutSections", .array([])), ("offlineLinks", .array([])),
            ("quickActionList", .object([("quickActionListItems", .array([]))])),
            ("relatedContent", .null), ("relatedLists", .array(related)), ("saveOptions", .array([])),
        ])
    }

    /// `ui-api/layout/{T}`: the UI API's shape of the same generated layout.
    func layout(_ req: APIRequest, type: String, version: String) throws -> APIResponse {
        let obj = try object(type)
        let layoutType = req.query["layoutType"] ?? "Full"
        let mode = req.query["mode"] ?? "View"
        let rows: [JSON] = layoutRows(obj).map { pair in
            .object([("layoutItems", .array(pair.map { f in
                .object([
                    ("editableForNew", .bool(f.createable)), ("editableForUpdate", .bool(f.updateable)),
                    ("label", .string(f.label)),
                    ("layoutComponents", .array([.object([("apiName", .string(f.name)), ("componentType", .string("Field")), ("label", .string(f.label))])])),
                    ("lookupIdApiName", f.type == .reference ? .string(f.name) : .null),
                    ("required", .bool(f.requiredOnCreate)), ("sortable", .bool(true)),
                ])
            }))])
        }
        return APIResponse(status: 200, json: .object([
            ("eTag", .string(String(fnv1a(obj.name + layoutType + mode), radix: 16))),
            ("id", .string(layoutId(obj))), ("layoutType", .string(layoutType)), ("mode", .string(mode)),
            ("objectApiName", .string(obj.name)),
            ("saveOptions", .array([])),
            ("sections", .array([.object([
                ("collapsible", .bool(false)), ("columns", .int(2)), ("heading", .string("\(obj.label) Information")),
                ("id", .string(sectionId(obj))),
                ("layoutRows", .array(rows)), ("rows", .int(Int64(rows.count))), ("tabOrder", .string("LeftRight")),
                ("useHeading", .bool(true)),
            ])])),
        ]))
    }

    // MARK: briefcase

    /// `connect/briefcase/priming-records`: ids and SystemModstamps of the records each briefcase
    /// rule selects, filtered by changedAfterTimestamp, paged with a relayToken that carries the
    /// offset and the filter (`rt-<offset>[-<afterMillis>]`): as in the API, later pages send only
    /// the token.
    func primingRecords(_ req: APIRequest, version: String) throws -> APIResponse {
        let pageSize = 2000
        var offset = 0
        var after: Int64?
        if let c = req.query["changedAfterTimestamp"], !c.isEmpty {
            guard let ms = Int64(c) ?? SFTime.parseDateTime(c) else {
                throw APIError(400, "INVALID_INPUT", "changedAfterTimestamp must be epoch milliseconds or an ISO-8601 date-time")
            }
            after = ms
        }
        if let token = req.query["relayToken"], !token.isEmpty {
            let parts = token.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, parts[0] == "rt", let n = Int(parts[1]), n >= 0, n <= 100_000_000 else {
                throw APIError(400, "INVALID_INPUT", "Invalid relayToken: \(token)")
            }
            offset = n
            if parts.count == 3 {
                guard let ms = Int64(parts[2]) else { throw APIError(400, "INVALID_INPUT", "Invalid relayToken: \(token)") }
                after = ms
            }
        }
        // Collect every (type, id, stamp) in rule order (deduplicated), then serve one page.
        var all: [(String, String, String)] = []
        var seen = Set<String>()
        for b in schema.briefcases {
            for rule in b.rules {
                var soql = "SELECT Id, SystemModstamp FROM \(rule.sobjectType)"
                var conds: [String] = []
                if let w = rule.whereClause { conds.append("(\(w))") }
                if let after { conds.append("SystemModstamp > \(SFTime.format(millis: after))") }
                if !conds.isEmpty { soql += " WHERE " + conds.joined(separator: " AND ") }
                soql += " ORDER BY SystemModstamp, Id"
                let result: QueryResult
                do {
                    result = try store.run(try SoqlCompiler(schema: schema, version: version).compile(try SoqlParser.parse(soql), includeDeleted: false))
                } catch let e as SoqlError {
                    throw APIError(500, "UNKNOWN_EXCEPTION", "briefcase rule for \(rule.sobjectType) is invalid: \(e.message)")
                }
                for i in 0..<result.starts.count {
                    let rec = try JSON.parse(Array(result.slice(from: i, count: 1)))
                    if let id = rec["Id"]?.stringValue, let stamp = rec["SystemModstamp"]?.stringValue, seen.insert(id).inserted {
                        all.append((rule.sobjectType, id, stamp))
                    }
                }
            }
        }
        let pageRows = all.dropFirst(offset).prefix(pageSize)
        // Shape read by the Mobile SDK: objectApiName -> recordTypeId -> [{id, systemModstamp}],
        // timestamps as `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`. No record types here: the master one.
        var byType: [(String, [JSON])] = []
        for (type, id, stamp) in pageRows {
            let entry: JSON = .object([("id", .string(id)), ("systemModstamp", .string(stamp.replacingOccurrences(of: "+0000", with: "Z")))])
            if let ti = byType.firstIndex(where: { $0.0 == type }) {
                byType[ti].1.append(entry)
            } else {
                byType.append((type, [entry]))
            }
        }
        let next = offset + pageRows.count
        let ruleCount = schema.briefcases.reduce(0) { $0 + $1.rules.count }
        return APIResponse(status: 200, json: .object([
            ("primingRecords", .object(byType.map { ($0.0, .object([(API.masterRecordTypeId, .array($0.1))])) })),
            ("relayToken", next < all.count ? .string("rt-\(next)" + (after.map { "-\($0)" } ?? "")) : .null),
            ("ruleErrors", .array([])),
            ("stats", .object([("ruleCountTotal", .int(Int64(ruleCount))), ("recordCountTotal", .int(Int64(all.count))),
                               ("ruleCountServed", .int(Int64(ruleCount))), ("recordCountServed", .int(Int64(pageRows.count)))])),
        ]))
    }
}
