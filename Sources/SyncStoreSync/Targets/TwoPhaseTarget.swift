import SyncStoreSupport
import SyncStoreCore

/// `{"type": "twophase", "fetchUrl"?: "/twophase/fetch", "synchroniseUrl"?: "/twophase/synchronise",
///   "tables": [{"name", "soupName"?, "idKey"? ("id"), "timestampFormat"? ("datetime" | "iso8601")}]}`
/// — a server speaking the two-phase fetch/synchronise protocol (docs/sync.md#two-phase), as a
/// sync down (fetch, then get) or a sync up (fetch, then add/update/delete with get) target.
/// URLs starting with '/' go on the remote's instance URL. A table's soupName defaults to the
/// sync's soup; each table needs a soup of its own.
package struct TwoPhaseTarget {
    package enum Format: String { case datetime, iso8601 }

    package struct Table {
        package let name: String
        package let soupName: String
        package let idKey: String
        package let format: Format

        /// The smallest step the format shows: an edit must be at least this much newer.
        package var unit: Int64 { format == .datetime ? 1000 : 1 }

        package func format(_ millis: Int64) -> String {
            format == .datetime ? Timestamp.formatSpaced(millis) : Timestamp.format(millis)
        }

        /// `millis` rounded up to what the format shows (an edit is never stamped earlier than it was made).
        package func ceil(_ millis: Int64) -> Int64 {
            let r = ((millis % unit) + unit) % unit
            return r == 0 ? millis : millis - r + unit
        }
    }

    package static let lastUpdate = "last_update"
    package let fetchUrl: String
    package let synchroniseUrl: String
    package let tables: [Table]

    /// A sync down and a sync up type (check_abi_facts.py reads the line below).
    package static func isTwoPhase(_ root: JSON) -> Bool { root.isObject && root["type"]?.string == "twophase" } // sync down and up

    package init(_ json: JSON, soupName: String) throws {
        fetchUrl = try TargetCommon.optionalString(json, "fetchUrl") ?? "/twophase/fetch"
        synchroniseUrl = try TargetCommon.optionalString(json, "synchroniseUrl") ?? "/twophase/synchronise"
        guard let list = json["tables"], list.isArray, list.count > 0 else {
            throw StoreError.argument("A twophase target needs \"tables\": [{\"name\", \"soupName\"?, \"idKey\"?, \"timestampFormat\"?}]")
        }
        var tables: [Table] = []
        for item in list.elements {
            guard item.isObject, let name = try TargetCommon.optionalString(item, "name") else {
                throw StoreError.argument("Each twophase table must be an object with a non-empty \"name\"")
            }
            let formatName = try TargetCommon.optionalString(item, "timestampFormat") ?? Format.datetime.rawValue
            guard let format = Format(rawValue: formatName) else {
                throw StoreError.argument("Twophase table '\(name)': \"timestampFormat\" must be \"datetime\" (YYYY-MM-DD HH:MM:SS) or \"iso8601\"")
            }
            let table = Table(name: name, soupName: try TargetCommon.optionalString(item, "soupName") ?? soupName,
                              idKey: try TargetCommon.optionalString(item, "idKey") ?? "id", format: format)
            guard !tables.contains(where: { $0.name == name || $0.soupName == table.soupName }) else {
                throw StoreError.argument("Twophase table '\(name)' is listed twice or shares soup '\(table.soupName)' with another table: give each table its own \"soupName\"")
            }
            guard !table.name.contains(",") else {
                throw StoreError.argument("Twophase table name '\(name)' must not contain ','")
            }
            tables.append(table)
        }
        self.tables = tables
    }

    /// Every table's soup exists and has an index on the table's id key (entries are matched on it).
    package func check(_ store: SmartStore) throws {
        for t in tables {
            let info = try store.requireSoup(t.soupName)
            if info.index(for: t.idKey) == nil {
                throw StoreError.argument("Soup '\(t.soupName)' needs an index on '\(t.idKey)' to sync twophase table '\(t.name)'; register it with that index")
            }
        }
    }

    /// The phase 1 request: the fetch URL naming this target's tables.
    package var fetchPath: String {
        let names = RemoteURL.query([("tables", tables.map(\.name).joined(separator: ","))])
        return fetchUrl + (fetchUrl.includes("?") ? "&" : "?") + names
    }
}
