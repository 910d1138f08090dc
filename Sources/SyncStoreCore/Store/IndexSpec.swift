/// The kinds of index a soup path can have (docs/smartstore.md#soups-and-index-specs).
package enum IndexType: String, Sendable, CaseIterable {
    case string, integer, floating
    case fullText = "full_text"
    case json1

    /// SQLite column type; its affinity converts bound values (e.g. numbers to text).
    package var columnType: String {
        switch self {
        case .string, .fullText: return "TEXT"
        case .integer: return "INTEGER"
        case .floating: return "REAL"
        case .json1: return ""
        }
    }
}

/// One `{"path", "type"}` pair of a soup's index specs.
package struct IndexSpec: Equatable, Sendable {
    package let path: String
    package let type: IndexType

    package init(path: String, type: IndexType) {
        self.path = path
        self.type = type
    }

    /// Parses `[{"path": "...", "type": "..."}]`; rejects an empty list and duplicate paths.
    package static func parseList(_ json: JSON) throws -> [IndexSpec] {
        guard json.isArray else { throw StoreError.argument("Index specs must be a JSON array of {\"path\", \"type\"} objects") }
        guard json.count > 0 else { throw StoreError.argument("Index specs must not be empty: give at least one {\"path\", \"type\"}") }
        var specs: [IndexSpec] = []
        var seen = Set<String>()
        for (i, item) in json.elements.enumerated() {
            guard let path = item["path"]?.string, !path.isEmpty else {
                throw StoreError.argument("Index spec \(i) needs a non-empty string \"path\"")
            }
            guard let typeName = item["type"]?.string, let type = IndexType(rawValue: typeName) else {
                throw StoreError.argument("Index spec \(i) (path '\(path)') needs \"type\" one of string, integer, floating, full_text, json1")
            }
            try SoupPath.validate(path)
            guard seen.insert(path).inserted else {
                throw StoreError.argument("Index spec path '\(path)' appears twice")
            }
            specs.append(IndexSpec(path: path, type: type))
        }
        return specs
    }

    package static func listJSON(_ specs: [IndexSpec]) -> String {
        let array = JSONDocument.array()
        for spec in specs {
            let item = JSONDocument.object()
            item.root.set("path", owned: JSONMake.string(spec.path))
            item.root.set("type", owned: JSONMake.string(spec.type.rawValue))
            array.root.append(owned: item.root.retained())
        }
        return array.root.dump()
    }
}
