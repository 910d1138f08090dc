import SyncStoreCore
import SyncStoreSync
/// The actions of "com.salesforce.mobilesync" (the SDK's MobileSyncPlugin): runs answer with the
/// state at their start and report every change as a "sync" event; cleanResyncGhosts answers
/// the number of entries it removed when it ends, and fires no event; live sync (SyncStore's own)
/// fires "liveSync" events and the "sync" events of the runs it starts (docs/hybrid-plugin.md).
package enum MobileSyncActions {
    package static let table: [String: PluginAction] = [
        // Each answers the state as saved when its run was requested (RUNNING), as the plugins
        // do, however fast the run ends; the run's own states come as `sync` events.
        "syncDown": { plugin, call, _ in
            let (manager, _, handle) = try plugin.syncManager(call.store)
            let state = try manager.requestSyncDown(targetJSON: try call.jsonText("target"), soupName: try call.string("soupName"),
                                                    optionsJSON: call.optionalJSONText("options"), name: try call.optionalString("syncName"),
                                                    owner: handle, callback: plugin.syncEvents(call.store))
            return .json(state.jsonText)
        },
        "syncUp": { plugin, call, _ in
            let (manager, _, handle) = try plugin.syncManager(call.store)
            let state = try manager.requestSyncUp(targetJSON: call.optionalJSONText("target"), soupName: try call.string("soupName"),
                                                  optionsJSON: call.optionalJSONText("options"), name: try call.optionalString("syncName"),
                                                  owner: handle, callback: plugin.syncEvents(call.store))
            return .json(state.jsonText)
        },
        "reSync": { plugin, call, _ in
            let (manager, _, handle) = try plugin.syncManager(call.store)
            let state: SyncState
            switch try call.syncReference() {
            case .id(let given):
                state = try manager.requestReSync(id: given, owner: handle, callback: plugin.syncEvents(call.store))
            case .name(let name):
                state = try manager.requestReSync(name: name, owner: handle, callback: plugin.syncEvents(call.store))
            }
            return .json(state.jsonText)
        },
        "cleanResyncGhosts": { plugin, call, answer in
            let (manager, _, handle) = try plugin.syncManager(call.store)
            let id: Int64
            switch try call.syncReference() {
            case .id(let given): id = given
            case .name(let name):
                guard let state = try manager.status(name: name) else { throw StoreError.notFound("No sync named '\(name)'") }
                id = state.id
            }
            try manager.cleanResyncGhosts(id: id, owner: handle) { report in
                guard let doc = try? JSONDocument.parse(report, what: "cleanResyncGhosts report"),
                      let status = doc.root["status"]?.string, status != "RUNNING" else { return }
                if status == "DONE" {
                    answer(0, String(doc.root["removed"]?.int64 ?? 0))
                } else {
                    let code = doc.root["errorCode"]?.int64.map { Int32(truncatingIfNeeded: $0) } ?? ErrorCode.internal.rawValue
                    let message = doc.root["error"]?.string ?? ""
                    answer(code == 0 ? ErrorCode.state.rawValue : code,
                           HybridPlugin.messageJSON(message.isEmpty ? "cleanResyncGhosts \(status)" : message))
                }
            }
            return .later
        },
        "getSyncStatus": { plugin, call, _ in
            let manager = try plugin.syncManager(call.store).0
            let state: SyncState?
            switch try call.syncReference() {
            case .id(let id): state = try manager.status(id: id)
            case .name(let name): state = try manager.status(name: name)
            }
            // The plugin answers {} for an unknown sync (Cordova cannot pass null); its JS turns
            // that into null.
            return .json(state?.jsonText ?? "{}")
        },
        "deleteSync": { plugin, call, _ in
            let manager = try plugin.syncManager(call.store).0
            do {
                switch try call.syncReference() {
                case .id(let id): try manager.delete(id: id)
                case .name(let name): try manager.delete(name: name)
                }
            } catch let error as StoreError where error.code == .notFound {
                // The SDK deletes what is there: an unknown sync is nothing to do.
            }
            // "OK", as Android's success(); iOS's message-less result reaches JS as null.
            return .ok
        },
        // react-native-force's newer bridges: the store's running and queued syncs stop (they
        // end STOPPED) and the next sync action starts afresh, as the SDK's reset does.
        "resetSyncManager": { plugin, call, _ in
            let manager = try plugin.syncManager(call.store).0
            manager.stop()
            try manager.restart(restartStopped: false, callback: nil)
            return .ok
        },
        // SyncStore's own (docs/hybrid-plugin.md, "Live sync"): the store's syncs run by
        // themselves; each state is a "liveSync" event, each run's state a "sync" event.
        "startLiveSync": { plugin, call, _ in
            .json(try plugin.startLiveSync(call.store, optionsJSON: call.optionalJSONText("options")))
        },
        "stopLiveSync": { plugin, call, _ in
            try plugin.stopLiveSync(call.store)
            return .ok
        },
        "getLiveSyncState": { plugin, call, _ in
            .json(try plugin.liveSyncState(call.store))
        },
        // SyncStore's own: the SDK's sync config file (its native apps load it at start).
        "loadSyncConfig": { plugin, call, _ in
            try plugin.syncManager(call.store).0.loadSyncConfig(path: try call.string("path"))
            return .ok
        },
    ]
}
