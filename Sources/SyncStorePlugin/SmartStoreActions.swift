import SyncStoreCore
import SyncStoreSync
/// The actions of "com.salesforce.smartstore" (the SDK's SmartStorePlugin): one row per action,
/// the fields it reads and what it answers (docs/hybrid-plugin.md).
package enum SmartStoreActions {
    package static let table: [String: PluginAction] = [
        "pgRegisterSoup": { plugin, call, _ in
            let soup = try call.string("soupName")
            try plugin.store(call.store).0.registerSoup(soup, specsJSON: try call.jsonText("indexes"))
            return .json(quoted(soup))
        },
        "pgRemoveSoup": { plugin, call, _ in
            let (store, handle) = try plugin.store(call.store)
            try store.removeSoup(try call.string("soupName"), owner: handle)
            return .ok
        },
        "pgSoupExists": { plugin, call, _ in
            .json(try plugin.store(call.store).0.soupExists(try call.string("soupName")) ? "true" : "false")
        },
        "pgGetSoupIndexSpecs": { plugin, call, _ in
            .json(try plugin.store(call.store).0.indexSpecsJSON(try call.string("soupName")))
        },
        "pgAlterSoup": { plugin, call, _ in
            let soup = try call.string("soupName")
            try plugin.store(call.store).0.alterSoup(soup, specsJSON: try call.jsonText("indexes"),
                                                     reIndexData: try call.bool("reIndexData", default: false))
            return .json(quoted(soup))
        },
        "pgReIndexSoup": { plugin, call, _ in
            let soup = try call.string("soupName")
            try plugin.store(call.store).0.reIndexSoup(soup, pathsJSON: try call.jsonText("paths"))
            return .json(quoted(soup))
        },
        // SyncStore's own: the SDK's store config file (its native apps load it at start).
        "loadStoreConfig": { plugin, call, _ in
            try plugin.store(call.store).0.loadStoreConfig(path: try call.string("path"))
            return .ok
        },
        "pgClearSoup": { plugin, call, _ in
            let (store, handle) = try plugin.store(call.store)
            try store.clearSoup(try call.string("soupName"), owner: handle)
            return .ok
        },
        "pgQuerySoup": { plugin, call, _ in
            let soup = try call.string("soupName")
            let given = try orderedSpec(try call.json("querySpec"))
            let spec = try withExtendedLifetime(given) { try QuerySpec.parse(given.root, dialect: .plugin) }
            let (store, handle) = try plugin.store(call.store)
            return .json(try store.querySoup(soup, spec: spec, owner: handle).string)
        },
        "pgRunSmartQuery": { plugin, call, _ in
            // Smart SQL text alone stands for buildSmartQuerySpec(text).
            let given = try call.json("querySpec")
            let text: String
            if let sql = given.string {
                let built = smartSpec(sql)
                text = withExtendedLifetime(built) { built.root.dump() }
            } else {
                guard given.isObject, given["queryType"]?.string == "smart" else {
                    throw StoreError.argument("pgRunSmartQuery runs smart query specs only ({\"queryType\": \"smart\", \"smartSql\": ...})")
                }
                text = given.dump()
            }
            let (store, handle) = try plugin.store(call.store)
            return .json(try store.runSmartQuery(specJSON: text, owner: handle).string)
        },
        "pgRetrieveSoupEntries": { plugin, call, _ in
            let soup = try call.string("soupName")
            return .json(try plugin.store(call.store).0.retrieve(soup: soup, idsJSON: try call.jsonText("entryIds")).string)
        },
        "pgUpsertSoupEntries": { plugin, call, _ in
            let soup = try call.string("soupName")
            // The JS sends "_soupEntryId" for a plain upsert: the library's default.
            let path = try call.optionalString("externalIdPath").flatMap { $0 == SoupPath.entryId ? nil : $0 }
            let entries = try call.json("entries")
            let (store, handle) = try plugin.store(call.store)
            return .json(try store.upsert(soup: soup, entries: entries, externalIdPath: path, owner: handle).string)
        },
        "pgRemoveFromSoup": { plugin, call, _ in
            let soup = try call.string("soupName")
            let (store, handle) = try plugin.store(call.store)
            // cordova.force.js sends an array as entryIds and anything else as querySpec; a host
            // that forwards the argument as entryIds whatever it is gets the same rule here.
            if call.has("querySpec") {
                _ = try store.removeByQuery(soup: soup, spec: try QuerySpec.parse(try call.json("querySpec"), dialect: .plugin), owner: handle)
            } else if let given = call.fields["entryIds"], given.isObject {
                _ = try store.removeByQuery(soup: soup, spec: try QuerySpec.parse(given, dialect: .plugin), owner: handle)
            } else {
                try store.removeEntries(soup: soup, idsJSON: try call.jsonText("entryIds"), owner: handle)
            }
            return .ok
        },
        "pgMoveCursorToPageIndex": { plugin, call, _ in
            let cursor = try call.int64("cursorId")
            let index = try call.int64("index")
            return .json(try plugin.store(call.store).0.moveCursor(cursor, toPage: index).string)
        },
        "pgCloseCursor": { plugin, call, _ in
            try plugin.store(call.store).0.closeCursor(try call.int64("cursorId"))
            return .ok
        },
        "pgGetDatabaseSize": { plugin, call, _ in
            .json(String(try plugin.store(call.store).0.databaseSize()))
        },
        "pgGetAllStores": { plugin, _, _ in .json(try storeList(plugin, global: false)) },
        "pgGetAllGlobalStores": { plugin, _, _ in .json(try storeList(plugin, global: true)) },
        "pgRemoveStore": { plugin, call, _ in
            try plugin.closeStores { $0 == call.store }
            do {
                try StoreRegistry.shared.removeStore(root: plugin.root,
                                                     config: try StoreConfig(isGlobal: call.store.isGlobal, name: call.store.name))
            } catch let error as StoreError where error.code == .notFound {
                // The SDK's removeStore of a store that is not there has nothing to do.
            }
            return .yes
        },
        "pgRemoveAllStores": { plugin, _, _ in
            try plugin.closeStores { !$0.isGlobal }
            try StoreRegistry.shared.removeAllStores(root: plugin.root, global: false)
            return .yes
        },
        "pgRemoveAllGlobalStores": { plugin, _, _ in
            try plugin.closeStores { $0.isGlobal }
            try StoreRegistry.shared.removeAllStores(root: plugin.root, global: true)
            return .yes
        },
        // SyncStore's own (the SDK's plugins have no store listeners): every notice of the
        // listener is a "smartstoreChanged" event; the answer is the listener's id.
        "pgAddSoupListener": { plugin, call, _ in
            .json(String(try plugin.addSoupListener(call.store, soup: try call.optionalString("soupName"),
                                                    minIntervalMs: try minInterval(call))))
        },
        // Its first event (the current result, origin "initial") may come before this answer.
        "pgAddQueryListener": { plugin, call, _ in
            .json(String(try plugin.addQueryListener(call.store, specJSON: try listenerSpec(call), minIntervalMs: try minInterval(call))))
        },
        "pgRemoveListener": { plugin, call, _ in
            try plugin.removeListener(id: try call.int64("listenerId"))
            return .ok
        },
        "pgShowInspector": { plugin, call, _ in
            // The inspector is a page served by `syncstore-cli inspect`: the plugin answers where
            // the one running for this root is, for the host to open.
            guard let running = InspectorRecord.running(root: plugin.root) else {
                let global = call.store.isGlobal ? " --global" : ""
                throw StoreError(.state, "No store inspector is running for this root: start one with `syncstore-cli inspect --root '\(plugin.root)' --store \(call.store.name)\(global) --open` (add --key-file for an encrypted store)")
            }
            let doc = JSONDocument.object()
            doc.root.set("url", owned: JSONMake.string(running.url))
            return .json(doc.root.dump())
        },
    ]

    private static func quoted(_ text: String) -> String { HybridPlugin.messageJSON(text) }

    private static func minInterval(_ call: PluginCall) throws -> Int64? {
        call.has("minIntervalMs") ? try call.int64("minIntervalMs") : nil
    }

    /// pgAddQueryListener's spec as the store's query listeners take it: Smart SQL text or a smart
    /// spec as pgRunSmartQuery reads them; any other spec as pgQuerySoup reads it (the plugins'
    /// dialect: its queryType required, an order without orderPath ordering by indexPath), with
    /// the soupName field as its "soupName".
    private static func listenerSpec(_ call: PluginCall) throws -> String {
        let given = try call.json("querySpec")
        if let sql = given.string {
            let built = smartSpec(sql)
            return withExtendedLifetime(built) { built.root.dump() }
        }
        guard given.isObject else { throw StoreError.argument("pgAddQueryListener: \"querySpec\" must be a query spec object or Smart SQL text") }
        if given["queryType"]?.string == "smart" { return given.dump() }
        let spec = try orderedSpec(given)
        _ = try withExtendedLifetime(spec) { try QuerySpec.parse(spec.root, dialect: .plugin) }
        let soup = try call.string("soupName")
        spec.root.set("soupName", owned: JSONMake.string(soup))
        return spec.root.dump()
    }

    /// A querySoup spec as cordova.force.js sends it: pre-3.3 code names its order path by
    /// indexPath (an order without an orderPath orders by the indexPath).
    private static func orderedSpec(_ spec: JSON) throws -> JSONDocument {
        let copy = try JSONDocument.parse(spec.dump(), what: "query spec")
        if copy.root.isObject, let order = copy.root["order"], !order.isNull,
           copy.root["orderPath"].map({ $0.isNull }) ?? true, let indexPath = copy.root["indexPath"], !indexPath.isNull {
            copy.root.set("orderPath", owned: indexPath.retained())
        }
        return copy
    }

    /// {"queryType": "smart", "smartSql": text}: the spec buildSmartQuerySpec(text) builds.
    private static func smartSpec(_ text: String) -> JSONDocument {
        let doc = JSONDocument.object()
        doc.root.set("queryType", owned: JSONMake.string("smart"))
        doc.root.set("smartSql", owned: JSONMake.string(text))
        return doc
    }

    /// [{"storeName", "isGlobalStore"}] of the stores under the plugin's root.
    private static func storeList(_ plugin: HybridPlugin, global: Bool) throws -> String {
        let list = JSONDocument.array()
        for name in try StoreRegistry.shared.listStores(root: plugin.root, global: global) {
            let entry = JSONDocument.object()
            entry.root.set("storeName", owned: JSONMake.string(name))
            entry.root.set("isGlobalStore", owned: JSONMake.bool(global))
            list.root.append(owned: entry.root.retained())
        }
        return list.root.dump()
    }
}
