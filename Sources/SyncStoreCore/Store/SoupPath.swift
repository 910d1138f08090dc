import CJansson
import SyncStoreSupport

/// Dot-separated paths into soup entries ("Account.Name") and their projection (docs/smartstore.md#soups-and-index-specs).
package enum SoupPath {
    package static let entryId = "_soupEntryId"
    package static let lastModified = "_soupLastModifiedDate"
    package static let created = "_soupCreatedDate"
    package static let soupItself = "_soup"

    package static func validate(_ path: String) throws {
        guard !path.isEmpty else { throw StoreError.argument("A path must not be empty") }
        var previous = UInt8(ascii: ".")
        for byte in path.utf8 {
            if byte == UInt8(ascii: ".") && previous == UInt8(ascii: ".") {
                throw StoreError.argument("Path '\(path)' has an empty component; use dot-separated field names")
            }
            if byte == UInt8(ascii: "\"") || byte < 0x20 {
                throw StoreError.argument("Path '\(path)' contains a double quote or control character")
            }
            previous = byte
        }
        if previous == UInt8(ascii: ".") {
            throw StoreError.argument("Path '\(path)' has an empty component; use dot-separated field names")
        }
    }

    /// `json_extract(<soupColumn>, '$."a"."b"')` — the SQL that reads `path` from the JSON text.
    /// Quoting each key lets keys hold spaces or punctuation; `'` is doubled for the literal.
    /// SQLite matches a quoted key against the key as escaped in the JSON text, where `\` is
    /// `\\`, so backslashes are doubled (newer SQLite unescapes both sides; doubling works there too).
    ///
    /// `guarded`: an entry SQLite's JSON functions cannot parse (stored by an earlier version,
    /// e.g. nested deeper than SQLite reads) reads as null instead of failing the whole statement,
    /// so one such entry never stops a soup's queries. json_valid costs no second parse: SQLite
    /// caches a statement's parses of the same text. json1 index expressions stay unguarded: a
    /// query must spell the expression exactly as the stored CREATE INDEX does to use the index
    /// (and SQLite never let such an index hold an unparsable entry).
    package static func jsonExtract(_ path: String, soupColumn: String = "soup", guarded: Bool = true) -> String {
        var jsonPath = "$"
        for part in path.split(separator: ".") { jsonPath += ".\"\(String(part).replacingAll("\\", with: "\\\\"))\"" }
        let extract = "json_extract(\(soupColumn), '\(jsonPath.replacingAll("'", with: "''"))')"
        return guarded ? "CASE WHEN json_valid(\(soupColumn)) THEN \(extract) END" : extract
    }

    /// The value at `path`. Going through an array collects the projection of every element
    /// (nulls skipped), so "cats.color" over [{color:a},{color:b}] is ["a","b"].
    package static func project(_ entry: JSON, _ path: String) -> Projected {
        project(entry, components(path)[...])
    }

    /// A path split at its dots, for callers that project the same path many times.
    package static func components(_ path: String) -> [String] { path.split(separator: ".").map(String.init) }

    package static func project(_ node: JSON, _ parts: ArraySlice<String>) -> Projected {
        guard let first = parts.first else { return .borrowed(node) }
        switch node.kind {
        case .object:
            guard let child = node[first] else { return .missing }
            return project(child, parts.dropFirst())
        case .array:
            let collected = JSONDocument.array()
            for element in node.elements {
                switch project(element, parts) {
                case .missing: continue
                case .borrowed(let v):
                    if v.isNull { continue }
                    collected.root.append(owned: v.retained())
                case .owned(let doc):
                    collected.root.append(owned: doc.root.retained())
                }
            }
            return .owned(collected)
        default:
            return .missing
        }
    }

    package enum Projected {
        case missing
        case borrowed(JSON)
        case owned(JSONDocument)

        package var json: JSON? {
            switch self {
            case .missing: return nil
            case .borrowed(let v): return v.isNull ? nil : v
            case .owned(let d): return d.root
            }
        }
    }

    /// The index value of `path` in `entry`. A collected projection (through an array) owns its
    /// JSON, so it is kept alive until the value is read.
    package static func indexValue(_ entry: JSON, _ path: String, for type: IndexType) -> SQLValue {
        indexValue(entry, components(path), for: type)
    }

    package static func indexValue(_ entry: JSON, _ components: [String], for type: IndexType) -> SQLValue {
        let projected = project(entry, components[...])
        return withExtendedLifetime(projected) { sqlValue(projected.json, for: type) }
    }

    /// The SQL value an index column stores for a projected JSON value. Column affinity then
    /// converts (numbers to text in string columns, numeric text to numbers in integer columns).
    package static func sqlValue(_ value: JSON?, for type: IndexType) -> SQLValue {
        guard let value else { return .null }
        switch value.kind {
        case .null: return .null
        case .string: return .text(value.string ?? "")
        case .integer: return .int(value.int64 ?? 0)
        case .real: return .real(value.double ?? 0)
        case .bool:
            let b = value.bool ?? false
            return type == .string || type == .fullText ? .text(b ? "true" : "false") : .int(b ? 1 : 0)
        case .object, .array: return .text(value.dump())
        }
    }
}

extension String {
    package func replacingAll(_ target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var out = ""
        out.reserveCapacity(utf8.count + 8)
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
