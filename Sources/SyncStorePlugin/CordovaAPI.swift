import SyncStoreCore
import SyncStoreSync

/// The JavaScript half of the hybrid plugins as data (docs/hybrid-plugin.md, "The JavaScript
/// half"): what cordova.force.js does before cordova.exec, written once so that every binding
/// builds its smartstore / mobilesync functions and query-spec builders from it
/// (syncstore_plugin_api()). The rules that are not about argument shapes (which store, answers,
/// errors) stay the dispatcher's; this table only says how a call becomes an action.
///
/// - services.<smartstore|mobilesync>: "service" (cordova.exec's), "functions" (one per Cordova
///   function: "name", "action", "args": the positional arguments in order, each a field name or
///   {"name", "field", "member", "optional", "omittedWhen", "default"}, "fixed": fields every call
///   sends, "storeConfig": whether it takes the optional leading storeConfig, "removes": the
///   stores the action deletes ("named", "user", "global"), "run": it starts a sync run,
///   "later": its answer comes when the work ends, "nullUnless": a member whose absence from the
///   answer means null), "cursorSteps" (moveCursorToNextPage / moveCursorToPreviousPage: the step
///   and the error of a move past the edge, made before any call) and "noStore" (the actions that
///   open no store: no key is needed for them).
/// - querySpec: "fields" (every member of cordova.force.js's QuerySpec with its default),
///   "falsyKeepsDefault" (the members a falsy argument does not override: `if (order)`),
///   "orderPathFrom" (a null orderPath takes that member, but for smart specs), "builders".
/// - syncStatuses: "terminal", the statuses a run ends with.
/// - statuses: every status code with its header name and whether a plugin answer with it is
///   retryable (an answer carries its code and message only).
package enum CordovaAPI {
    /// The table as compact JSON text (the statuses appended from ErrorCode).
    package static let json: String = build()

    /// The actions that open no store, per service name (the dispatcher's own set).
    package static let noStore: Set<String> = ["pgGetAllStores", "pgGetAllGlobalStores", "pgRemoveStore", "pgRemoveAllStores",
                                       "pgRemoveAllGlobalStores", "pgShowInspector", "pgRemoveListener"]

    /// Whether a plugin answer of this status is retryable: the engine's retryable codes (a busy
    /// store, a lost connection). A server's 5xx reaches a plugin's caller as SERVER, not retried.
    package static func retryable(_ code: ErrorCode) -> Bool { code == .busy || code == .network }

    private static func build() -> String {
        guard let doc = try? JSONDocument.parse(table, what: "plugin API table") else { return "{}" }
        let store = JSONDocument.array()
        for name in noStore.sorted() { store.root.append(owned: JSONMake.string(name)) }
        if let smartstore = doc.root["services"]?["smartstore"] { smartstore.set("noStore", owned: store.root.retained()) }
        if let mobilesync = doc.root["services"]?["mobilesync"] { mobilesync.set("noStore", owned: JSONDocument.array().root.retained()) }
        let statuses = JSONDocument.array()
        let ok = JSONDocument.object()
        ok.root.set("code", owned: JSONMake.int(0))
        ok.root.set("name", owned: JSONMake.string("SYNCSTORE_OK"))
        ok.root.set("retryable", owned: JSONMake.bool(false))
        statuses.root.append(owned: ok.root.retained())
        for code in ErrorCode.allCases {
            let entry = JSONDocument.object()
            entry.root.set("code", owned: JSONMake.int(Int64(code.rawValue)))
            entry.root.set("name", owned: JSONMake.string("SYNCSTORE_ERR_\(code.name)"))
            entry.root.set("retryable", owned: JSONMake.bool(retryable(code)))
            statuses.root.append(owned: entry.root.retained())
        }
        doc.root.set("statuses", owned: statuses.root.retained())
        return doc.root.dump()
    }

    private static let table = #"""
    {
      "version": 1,
      "services": {
        "smartstore": {
          "service": "com.salesforce.smartstore",
          "functions": [
            {"name": "registerSoup", "action": "pgRegisterSoup", "args": ["soupName", "indexes"], "storeConfig": true},
            {"name": "removeSoup", "action": "pgRemoveSoup", "args": ["soupName"], "storeConfig": true},
            {"name": "soupExists", "action": "pgSoupExists", "args": ["soupName"], "storeConfig": true},
            {"name": "getSoupIndexSpecs", "action": "pgGetSoupIndexSpecs", "args": ["soupName"], "storeConfig": true},
            {"name": "alterSoup", "action": "pgAlterSoup", "args": ["soupName", "indexes", "reIndexData"], "storeConfig": true},
            {"name": "reIndexSoup", "action": "pgReIndexSoup", "args": ["soupName", "paths"], "storeConfig": true},
            {"name": "clearSoup", "action": "pgClearSoup", "args": ["soupName"], "storeConfig": true},
            {"name": "querySoup", "action": "pgQuerySoup", "args": ["soupName", "querySpec"], "storeConfig": true},
            {"name": "runSmartQuery", "action": "pgRunSmartQuery", "args": ["querySpec"], "storeConfig": true},
            {"name": "retrieveSoupEntries", "action": "pgRetrieveSoupEntries", "args": ["soupName", "entryIds"], "storeConfig": true},
            {"name": "upsertSoupEntries", "action": "pgUpsertSoupEntries", "args": ["soupName", "entries"],
             "fixed": {"externalIdPath": "_soupEntryId"}, "storeConfig": true},
            {"name": "upsertSoupEntriesWithExternalId", "action": "pgUpsertSoupEntries", "args": ["soupName", "entries", "externalIdPath"],
             "storeConfig": true},
            {"name": "removeFromSoup", "action": "pgRemoveFromSoup", "args": ["soupName", {"name": "entryIdsOrQuerySpec", "field": "entryIds"}],
             "storeConfig": true},
            {"name": "moveCursorToPageIndex", "action": "pgMoveCursorToPageIndex",
             "args": [{"name": "cursor", "field": "cursorId", "member": "cursorId"}, "index"], "storeConfig": true},
            {"name": "closeCursor", "action": "pgCloseCursor", "args": [{"name": "cursor", "field": "cursorId", "member": "cursorId"}],
             "storeConfig": true},
            {"name": "getDatabaseSize", "action": "pgGetDatabaseSize", "args": [], "storeConfig": true},
            {"name": "showInspector", "action": "pgShowInspector", "args": [], "storeConfig": true},
            {"name": "loadStoreConfig", "action": "loadStoreConfig", "args": ["path"], "storeConfig": true},
            {"name": "getAllStores", "action": "pgGetAllStores", "args": [], "storeConfig": false},
            {"name": "getAllGlobalStores", "action": "pgGetAllGlobalStores", "args": [], "storeConfig": false},
            {"name": "removeStore", "action": "pgRemoveStore", "args": [], "storeConfig": true, "removes": "named"},
            {"name": "removeAllStores", "action": "pgRemoveAllStores", "args": [], "storeConfig": false, "removes": "user"},
            {"name": "removeAllGlobalStores", "action": "pgRemoveAllGlobalStores", "args": [], "storeConfig": false, "removes": "global"},
            {"name": "addSoupListener", "action": "pgAddSoupListener",
             "args": [{"name": "soupName", "optional": true, "default": null},
                      {"name": "options", "field": "minIntervalMs", "member": "minIntervalMs", "optional": true, "default": null}],
             "storeConfig": true},
            {"name": "addQueryListener", "action": "pgAddQueryListener",
             "args": ["soupName", "querySpec", {"name": "options", "field": "minIntervalMs", "member": "minIntervalMs", "optional": true, "default": null}],
             "storeConfig": true},
            {"name": "removeListener", "action": "pgRemoveListener", "args": ["listenerId"], "storeConfig": true}
          ],
          "cursorSteps": [
            {"name": "moveCursorToNextPage", "via": "moveCursorToPageIndex", "step": 1,
             "error": "moveCursorToNextPage called while on last page"},
            {"name": "moveCursorToPreviousPage", "via": "moveCursorToPageIndex", "step": -1,
             "error": "moveCursorToPreviousPage called while on first page"}
          ]
        },
        "mobilesync": {
          "service": "com.salesforce.mobilesync",
          "functions": [
            {"name": "syncDown", "action": "syncDown", "storeConfig": true, "run": true,
             "args": ["target", "soupName", "options", {"name": "syncName", "optional": true, "default": null}]},
            {"name": "syncUp", "action": "syncUp", "storeConfig": true, "run": true,
             "args": [{"name": "target", "omittedWhen": "string", "default": {}}, "soupName", "options",
                      {"name": "syncName", "optional": true, "default": null}]},
            {"name": "reSync", "action": "reSync", "args": [{"name": "syncIdOrName", "field": "syncId"}], "storeConfig": true, "run": true},
            {"name": "cleanResyncGhosts", "action": "cleanResyncGhosts", "args": [{"name": "syncIdOrName", "field": "syncId"}],
             "storeConfig": true, "later": true},
            {"name": "getSyncStatus", "action": "getSyncStatus", "args": [{"name": "syncIdOrName", "field": "syncId"}],
             "storeConfig": true, "nullUnless": "_soupEntryId"},
            {"name": "deleteSync", "action": "deleteSync", "args": [{"name": "syncIdOrName", "field": "syncId"}], "storeConfig": true},
            {"name": "loadSyncConfig", "action": "loadSyncConfig", "args": ["path"], "storeConfig": true},
            {"name": "resetSyncManager", "action": "resetSyncManager", "args": [], "storeConfig": true},
            {"name": "startLiveSync", "action": "startLiveSync", "args": [{"name": "options", "optional": true, "default": null}],
             "storeConfig": true},
            {"name": "stopLiveSync", "action": "stopLiveSync", "args": [], "storeConfig": true},
            {"name": "getLiveSyncState", "action": "getLiveSyncState", "args": [], "storeConfig": true}
          ]
        }
      },
      "querySpec": {
        "fields": {"queryType": "exact", "indexPath": null, "matchKey": null, "beginKey": null, "endKey": null, "likeKey": null,
                   "smartSql": null, "orderPath": null, "order": "ascending", "pageSize": 10, "selectPaths": null},
        "falsyKeepsDefault": ["order", "pageSize", "orderPath", "selectPaths"],
        "orderPathFrom": "indexPath",
        "builders": [
          {"name": "buildAllQuerySpec", "queryType": "range",
           "params": [{"name": "path", "field": "indexPath"}, "order", "pageSize", "selectPaths"]},
          {"name": "buildExactQuerySpec", "queryType": "exact",
           "params": [{"name": "path", "field": "indexPath"}, "matchKey", "pageSize", "order", "orderPath", "selectPaths"]},
          {"name": "buildRangeQuerySpec", "queryType": "range",
           "params": [{"name": "path", "field": "indexPath"}, "beginKey", "endKey", "order", "pageSize", "orderPath", "selectPaths"]},
          {"name": "buildLikeQuerySpec", "queryType": "like",
           "params": [{"name": "path", "field": "indexPath"}, "likeKey", "order", "pageSize", "orderPath", "selectPaths"]},
          {"name": "buildMatchQuerySpec", "queryType": "match",
           "params": [{"name": "path", "field": "indexPath"}, "matchKey", "order", "pageSize", "orderPath", "selectPaths"]},
          {"name": "buildSmartQuerySpec", "queryType": "smart", "params": ["smartSql", "pageSize"]}
        ]
      },
      "syncStatuses": {"terminal": ["DONE", "FAILED", "STOPPED"]}
    }
    """#
}
