import Foundation

/// sObject Collections (`composite/sobjects`) and `/composite` with referenceIds.
extension API {
    static let maxCollection = 200
    static let maxComposite = 25
    /// Of a composite request's subrequests, at most this many are sObject Collections or queries.
    static let maxCompositeCollections = 5

    private struct Rollback: Error {}

    func compositeRoute(_ req: APIRequest, _ s: [String], version: String) throws -> APIResponse {
        if s.isEmpty {
            try allow(req, ["POST"])
            return try composite(req, version: version)
        }
        if s == ["batch"] {
            try allow(req, ["POST"])
            return try batch(req)
        }
        // sObject Collections came with API 42.0, their upsert with 46.0: not found before, as in an org.
        guard s[0] == "sobjects", API.major(version) >= (s.count == 3 ? 46 : 42) else { throw APIError.notFound }
        switch s.count {
        case 1:
            switch req.method {
            case "POST": return try collectionWrite(req, creating: true, version: version)
            case "PATCH": return try collectionWrite(req, creating: false, version: version)
            case "DELETE": return try collectionDelete(req)
            default: throw APIError.methodNotAllowed(req.method, allowed: ["POST", "PATCH", "DELETE"])
            }
        case 2:
            let obj = try object(s[1])
            switch req.method {
            case "POST":
                let body = try req.json()
                let ids = body["ids"]?.arrayValue?.compactMap { $0.stringValue } ?? []
                let fields = body["fields"]?.arrayValue?.compactMap { $0.stringValue } ?? []
                guard !fields.isEmpty else { throw APIError(400, "INVALID_FIELD", "The fields parameter is required") }
                return try collectionRetrieve(obj, ids: ids, fields: fields, version: version)
            case "GET":
                let ids = (req.query["ids"] ?? "").split(separator: ",").map(String.init)
                guard let fields = try fieldList(req.query["fields"], obj: obj) else { throw APIError(400, "INVALID_FIELD", "The fields parameter is required") }
                return try collectionRetrieve(obj, ids: ids, fields: fields, version: version)
            default: throw APIError.methodNotAllowed(req.method, allowed: ["GET", "POST"])
            }
        case 3:
            try allow(req, ["PATCH"])
            return try collectionUpsert(req, obj: try object(s[1]), fieldName: s[2], version: version)
        default:
            throw APIError.notFound
        }
    }

    private func collectionRetrieve(_ obj: SObjectDef, ids: [String], fields: [String], version: String) throws -> APIResponse {
        guard ids.count <= 2000 else { throw APIError(400, "EXCEEDED_ID_LIMIT", "More than 2000 ids") }
        _ = try fieldList(fields.joined(separator: ","), obj: obj)
        let normalized = ids.map { SFId.to18($0) ?? $0 }
        let records = try retrieve(obj, ids: normalized, fields: fields, version: version)
        var w = JSONWriter()
        w.raw("[")
        for (i, r) in records.enumerated() {
            if i > 0 { w.raw(",") }
            if let r { w.raw(r) } else { w.raw("null") }
        }
        w.raw("]")
        return APIResponse(status: 200, body: w.bytes)
    }

    /// One result of a collection call: `{"id","success","errors"[,"created"]}`.
    private struct ItemResult {
        var id: String?
        var error: APIError?
        var created: Bool?

        func write(_ w: inout JSONWriter) {
            w.raw("{")
            if let id { w.raw("\"id\":"); w.string(id); w.raw(",") }
            w.raw("\"success\":\(error == nil ? "true" : "false"),\"errors\":[")
            if let error {
                let e = APIError(error.status, error.errorCode, error.message, fields: error.fields ?? [])
                e.writeObject(&w, codeKey: "statusCode")
            }
            w.raw("]")
            if let created, error == nil { w.raw(",\"created\":\(created)") }
            w.raw("}")
        }
    }

    private static let rolledBack = APIError(400, "ALL_OR_NONE_OPERATION_ROLLED_BACK",
                                             "Record rolled back because not all records were valid and the request was using AllOrNone header", fields: [])

    /// Runs `items` one by one; each in a savepoint, all in one when allOrNone.
    private func runItems(_ count: Int, allOrNone: Bool, _ body: (Int) throws -> ItemResult) throws -> [ItemResult] {
        var results: [ItemResult] = []
        func one(_ i: Int) -> ItemResult {
            do {
                return try store.db.savepoint { try body(i) }
            } catch let e as APIError {
                return ItemResult(id: nil, error: e)
            } catch let e as ItemError {
                return ItemResult(id: e.id, error: e.error)
            } catch {
                return ItemResult(id: nil, error: APIError(500, "UNKNOWN_EXCEPTION", "\(error)", fields: []))
            }
        }
        if !allOrNone {
            // One outer transaction, one savepoint per record: partial failure, cheap commits.
            try store.db.savepoint {
                for i in 0..<count { results.append(one(i)) }
            }
            return results
        }
        do {
            try store.db.savepoint {
                for i in 0..<count { results.append(one(i)) }
                if results.contains(where: { $0.error != nil }) { throw Rollback() }
            }
        } catch is Rollback {
            results = results.map { r in
                r.error != nil ? r : ItemResult(id: r.created == true ? nil : r.id, error: API.rolledBack)
            }
        }
        return results
    }

    private func writeResults(_ results: [ItemResult]) -> APIResponse {
        var w = JSONWriter()
        w.raw("[")
        for (i, r) in results.enumerated() {
            if i > 0 { w.raw(",") }
            r.write(&w)
        }
        w.raw("]")
        return APIResponse(status: 200, body: w.bytes)
    }

    private func collectionBody(_ req: APIRequest) throws -> (Bool, [JSON]) {
        let body = try req.json()
        guard let records = body["records"]?.arrayValue else {
            throw APIError(400, "INVALID_FIELD", "The records parameter is required")
        }
        guard records.count <= API.maxCollection else {
            throw APIError(400, "EXCEEDED_ID_LIMIT", "record limit reached. cannot submit more than \(API.maxCollection) records into this call")
        }
        return (body["allOrNone"]?.boolValue ?? false, records)
    }

    private func recordType(_ rec: JSON) throws -> SObjectDef {
        guard let t = rec["attributes"]?["type"]?.stringValue else {
            throw APIError(400, "INVALID_TYPE", "Must send a concrete entity type.", fields: [])
        }
        guard let obj = schema.object(t) else { throw APIError(400, "INVALID_TYPE", "sObject type '\(t)' is not supported.", fields: []) }
        return obj
    }

    private func collectionWrite(_ req: APIRequest, creating: Bool, version: String) throws -> APIResponse {
        let (allOrNone, records) = try collectionBody(req)
        let results = try runItems(records.count, allOrNone: allOrNone) { i in
            let rec = records[i]
            if creating {
                let obj = try recordType(rec)
                let id = try store.create(obj, values: try store.columnValues(obj, body: rec, creating: true))
                return ItemResult(id: id, error: nil)
            }
            guard let raw = rec.value(forKeyIgnoringCase: "Id")?.stringValue else {
                throw APIError(400, "MISSING_ARGUMENT", "Id not specified in an update call", fields: [])
            }
            guard let id = SFId.to18(raw) else { throw APIError(400, "MALFORMED_ID", "malformed id \(raw)", fields: ["Id"]) }
            do {
                let obj = try recordType(rec)
                guard id.hasPrefix(obj.keyPrefix) else { throw APIError(400, "MALFORMED_ID", "Id: id value of incorrect type: \(raw)", fields: ["Id"]) }
                _ = try store.requireLive(obj, id: id)
                try store.update(obj, id: id, values: try store.columnValues(obj, body: rec, creating: false))
                return ItemResult(id: id, error: nil)
            } catch var e as APIError {
                if e.errorCode == "NOT_FOUND" { e = APIError(400, "INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", fields: []) }
                throw ItemError(id: id, error: e)
            }
        }
        return writeResults(results)
    }

    /// Carries the record id along with an error, so failed updates/deletes still report their id.
    private struct ItemError: Error {
        let id: String
        let error: APIError
    }

    private func collectionDelete(_ req: APIRequest) throws -> APIResponse {
        let ids = (req.query["ids"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !ids.isEmpty else { throw APIError(400, "MISSING_ARGUMENT", "The ids parameter is required") }
        guard ids.count <= API.maxCollection else {
            throw APIError(400, "EXCEEDED_ID_LIMIT", "record limit reached. cannot submit more than \(API.maxCollection) records into this call")
        }
        let allOrNone = (req.query["allOrNone"] ?? "false").lowercased() == "true"
        let results = try runItems(ids.count, allOrNone: allOrNone) { i in
            let raw = ids[i]
            guard let id = SFId.to18(raw), let obj = store.object(forId: id) else {
                throw ItemError(id: raw, error: APIError(400, "MALFORMED_ID", "malformed id \(raw)", fields: []))
            }
            guard let m = try store.meta(obj, id: id) else {
                throw ItemError(id: id, error: APIError(400, "INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", fields: []))
            }
            if m.isDeleted { throw ItemError(id: id, error: APIError(400, "ENTITY_IS_DELETED", "entity is deleted", fields: [])) }
            try store.delete(obj, id: id)
            return ItemResult(id: id, error: nil)
        }
        return writeResults(results)
    }

    private func collectionUpsert(_ req: APIRequest, obj: SObjectDef, fieldName: String, version: String) throws -> APIResponse {
        guard let field = obj.field(fieldName), field.externalId || field.name == "Id" else {
            throw APIError(404, "NOT_FOUND", "Provided external ID field does not exist or is not accessible: \(fieldName)")
        }
        let (allOrNone, records) = try collectionBody(req)
        let results = try runItems(records.count, allOrNone: allOrNone) { i in
            let rec = records[i]
            if let t = rec["attributes"]?["type"]?.stringValue, t.lowercased() != obj.name.lowercased() {
                throw APIError(400, "INVALID_TYPE", "Record type \(t) does not match \(obj.name)", fields: [])
            }
            let v = rec.value(forKeyIgnoringCase: field.name)
            if field.name == "Id", v == nil || v?.isNull == true || v?.stringValue == "" {
                // `Id` as the external id and none given: an org creates the record.
                let id = try store.create(obj, values: try store.columnValues(obj, body: rec, creating: true, ignoring: ["id"]))
                return ItemResult(id: id, error: nil, created: true)
            }
            guard let v, !v.isNull else {
                throw APIError(400, "MISSING_ARGUMENT", "\(field.name) not specified", fields: [field.name])
            }
            let value = v.stringValue ?? v.intValue.map(String.init) ?? v.text
            let (id, created) = try upsert(obj, field: field, value: value, body: rec, version: version)
            return ItemResult(id: id, error: nil, created: created)
        }
        return writeResults(results)
    }

    // MARK: composite/batch

    /// `{"batchRequests":[{"method","url":"vNN.N/...","richInput"?}], "haltOnError"?}`: independent
    /// subrequests (no transaction, no references) -> `{"hasErrors","results":[{"statusCode","result"}]}`.
    private func batch(_ req: APIRequest) throws -> APIResponse {
        let body = try req.json()
        guard let subs = body["batchRequests"]?.arrayValue, !subs.isEmpty else {
            throw APIError(400, "JSON_PARSER_ERROR", "batchRequests is required")
        }
        guard subs.count <= API.maxComposite else {
            throw APIError(400, "LIMIT_EXCEEDED", "Limit Exceeded. Max number of batch requests: \(API.maxComposite)")
        }
        let haltOnError = body["haltOnError"]?.boolValue ?? false
        var hasErrors = false
        var results = JSONWriter()
        for (i, sub) in subs.enumerated() {
            if i > 0 { results.raw(",") }
            if haltOnError && hasErrors {
                results.raw("{\"statusCode\":412,\"result\":")
                results.raw(APIError(412, "BATCH_PROCESSING_HALTED", "Batch processing halted per request").body)
                results.raw("}")
                continue
            }
            var url = sub["url"]?.stringValue ?? ""
            if !url.hasPrefix("/") { url = "/services/data/" + url }
            var spec: [(String, JSON)] = [("method", sub["method"] ?? .string("GET")), ("url", .string(url)), ("referenceId", .string("b\(i)"))]
            if let input = sub["richInput"] { spec.append(("body", input)) }
            let resp = runSub(.object(spec), bodies: [:], version: "")
            if resp.status >= 400 { hasErrors = true }
            results.raw("{\"statusCode\":\(resp.status),\"result\":")
            if resp.body.isEmpty { results.raw("null") } else { results.raw(resp.body) }
            results.raw("}")
        }
        var w = JSONWriter()
        w.raw("{\"hasErrors\":\(hasErrors),\"results\":[")
        w.raw(results.bytes)
        w.raw("]}")
        return APIResponse(status: 200, body: w.bytes)
    }

    // MARK: /composite

    func composite(_ req: APIRequest, version: String) throws -> APIResponse {
        let body = try req.json()
        guard let subs = body["compositeRequest"]?.arrayValue, !subs.isEmpty else {
            throw APIError(400, "JSON_PARSER_ERROR", "compositeRequest is required")
        }
        guard subs.count <= API.maxComposite else {
            throw APIError(400, "LIMIT_EXCEEDED", "Limit Exceeded. Max number of subrequests: \(API.maxComposite)")
        }
        let allOrNone = body["allOrNone"]?.boolValue ?? false
        var seenRefs = Set<String>()
        for sub in subs {
            guard let ref = sub["referenceId"]?.stringValue, !ref.isEmpty, sub["method"]?.stringValue != nil, sub["url"]?.stringValue != nil else {
                throw APIError(400, "INVALID_INPUT", "Every subrequest needs method, url and referenceId")
            }
            guard seenRefs.insert(ref).inserted else { throw APIError(400, "INVALID_INPUT", "Duplicate referenceId provided in the request: \(ref)") }
        }
        guard subs.filter({ API.isCollectionOrQuery($0["url"]?.stringValue ?? "") }).count <= API.maxCompositeCollections else {
            throw APIError(400, "LIMIT_EXCEEDED", "Limit Exceeded. Max number of sObject Collections and query subrequests: \(API.maxCompositeCollections)")
        }
        var outputs: [(String, APIResponse)] = []
        var bodies: [String: JSON] = [:]
        var failed = false
        let halted = APIError(400, "PROCESSING_HALTED", "The transaction was rolled back since another operation in the same transaction failed.")

        func runAll() {
            for sub in subs {
                let ref = sub["referenceId"]?.stringValue ?? ""
                if allOrNone && failed {
                    outputs.append((ref, APIResponse(error: halted)))
                    continue
                }
                let resp = runSub(sub, bodies: bodies, version: version)
                if resp.status >= 400 { failed = true }
                if let parsed = try? JSON.parse(resp.body) { bodies[ref] = parsed }
                outputs.append((ref, resp))
            }
        }
        if allOrNone {
            _ = try? store.db.savepoint {
                runAll()
                if failed { throw Rollback() }
            }
            if failed {
                outputs = outputs.map { ($0.0, $0.1.status < 400 ? APIResponse(error: halted) : $0.1) }
            }
        } else {
            runAll()
        }
        var w = JSONWriter()
        w.raw("{\"compositeResponse\":[")
        for (i, (ref, resp)) in outputs.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw("{\"body\":")
            if resp.body.isEmpty { w.raw("null") } else { w.raw(resp.body) }
            w.raw(",\"httpHeaders\":")
            w.value(.object(resp.headers.filter { $0.0 != "Content-Type" }.map { ($0.0, .string($0.1)) }))
            w.raw(",\"httpStatusCode\":\(resp.status),\"referenceId\":")
            w.string(ref)
            w.raw("}")
        }
        w.raw("]}")
        return APIResponse(status: 200, body: w.bytes)
    }

    /// `composite/sobjects...`, `query`, `queryAll` (and their next pages): the subrequests an org
    /// counts against `maxCompositeCollections`.
    static func isCollectionOrQuery(_ url: String) -> Bool {
        let path = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let s = path.split(separator: "/")
        guard s.count >= 4, s[0] == "services", s[1] == "data" else { return false }
        return s[3] == "query" || s[3] == "queryAll" || (s[3] == "composite" && s.count >= 5 && s[4] == "sobjects")
    }

    private func runSub(_ sub: JSON, bodies: [String: JSON], version: String) -> APIResponse {
        do {
            let method = (sub["method"]?.stringValue ?? "GET").uppercased()
            let url = try substitute(sub["url"]?.stringValue ?? "", bodies: bodies, inJSON: false)
            var bodyBytes: [UInt8] = []
            if let b = sub["body"], !b.isNull {
                bodyBytes = Array(try substitute(b.text, bodies: bodies, inJSON: true).utf8)
            }
            let parts = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            var headers: [String: String] = [:]
            for (k, v) in sub["httpHeaders"]?.objectValue ?? [] { if let s = v.stringValue { headers[k.lowercased()] = s } }
            let subReq = APIRequest(method: method, rawPath: parts[0], rawQuery: parts.count > 1 ? parts[1] : nil, headers: headers, body: bodyBytes)
            guard subReq.segments.count >= 3, subReq.segments[0] == "services", subReq.segments[1] == "data",
                  let v = parseVersion(subReq.segments[2]) else {
                throw APIError(400, "INVALID_INPUT", "The url must start with /services/data/vXX.X/: \(url)")
            }
            // composite and composite/batch cannot nest (composite/sobjects can be a subrequest).
            if subReq.segments.count > 3, subReq.segments[3] == "composite", subReq.segments.count == 4 || subReq.segments[4] == "batch" {
                throw APIError(400, "INVALID_INPUT", "composite requests cannot be nested")
            }
            var resp = try store.db.savepoint { try dispatch(subReq, version: v) }
            if resp.status >= 400 { resp.headers = [] }
            return resp
        } catch let e as APIError {
            return APIResponse(error: e)
        } catch {
            return APIResponse(error: APIError(500, "UNKNOWN_EXCEPTION", "\(error)"))
        }
    }

    /// Replaces `@{ref.path}` with values from earlier responses (`@{NewAccount.id}`,
    /// `@{q.records[0].Id}`). Inside JSON text the value is escaped for a string context.
    private func substitute(_ text: String, bodies: [String: JSON], inJSON: Bool) throws -> String {
        guard text.contains("@{") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "@{") {
            out += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else { out += rest[start.lowerBound...]; rest = ""; break }
            let expr = String(rest[start.upperBound..<end])
            let value = try resolveReference(expr, bodies: bodies)
            if inJSON {
                var w = JSONWriter()
                w.string(value)
                out += String(decoding: w.bytes.dropFirst().dropLast(), as: UTF8.self)
            } else {
                out += value
            }
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }

    private func resolveReference(_ expr: String, bodies: [String: JSON]) throws -> String {
        func invalid() -> APIError {
            APIError(400, "PROCESSING_HALTED", "Invalid reference specified. No value for \(expr) found in \(expr.split(separator: ".").first.map(String.init) ?? expr). Provided referenceId ('\(expr)') is not valid.")
        }
        var parts = expr.split(separator: ".").map(String.init)
        guard !parts.isEmpty, var node = bodies[parts.removeFirst()] else { throw invalid() }
        for part in parts {
            // `records[0]` style index segments.
            var name = part
            var indexes: [Int] = []
            while let open = name.lastIndex(of: "["), name.hasSuffix("]"), let i = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]) {
                indexes.insert(i, at: 0)
                name = String(name[..<open])
            }
            if !name.isEmpty {
                guard let next = node[name] else { throw invalid() }
                node = next
            }
            for i in indexes {
                guard let arr = node.arrayValue, i >= 0, i < arr.count else { throw invalid() }
                node = arr[i]
            }
        }
        switch node {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return formatDouble(d)
        case .bool(let b): return b ? "true" : "false"
        case .null: return ""
        default: return node.text
        }
    }
}
