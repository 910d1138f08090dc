/// A Salesforce REST error: HTTP status plus `[{"message","errorCode"[,"fields"]}]`.
struct APIError: Error {
    let status: Int
    let errorCode: String
    let message: String
    /// DML errors carry `fields`; request-level errors (auth, SOQL, routing) do not, as in the API.
    let fields: [String]?

    init(_ status: Int, _ errorCode: String, _ message: String, fields: [String]? = nil) {
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.fields = fields
    }

    var body: [UInt8] {
        var w = JSONWriter()
        w.raw("[")
        writeObject(&w, codeKey: "errorCode")
        w.raw("]")
        return w.bytes
    }

    /// One error object; collections and upsert results use `statusCode` instead of `errorCode`.
    func writeObject(_ w: inout JSONWriter, codeKey: String) {
        w.raw("{\"message\":")
        w.string(message)
        w.raw(",\"\(codeKey)\":")
        w.string(errorCode)
        if let fields {
            w.raw(",\"fields\":")
            w.value(.array(fields.map { .string($0) }))
        }
        w.raw("}")
    }

    static let notFound = APIError(404, "NOT_FOUND", "The requested resource does not exist")
    static let invalidSession = APIError(401, "INVALID_SESSION_ID", "Session expired or invalid")
    static let entityIsDeleted = APIError(404, "ENTITY_IS_DELETED", "entity is deleted", fields: [])

    static func jsonParser(_ msg: String) -> APIError { APIError(400, "JSON_PARSER_ERROR", msg) }
    static func methodNotAllowed(_ method: String, allowed: [String]) -> APIError {
        APIError(405, "METHOD_NOT_ALLOWED", "HTTP Method '\(method)' not allowed. Allowed are \(allowed.joined(separator: ","))")
    }
}
