import CSyncStoreABI
import Glibc
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

public typealias CSyncCallback = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void

/// The host's context pointer, carried to the worker thread untouched.
private struct HostContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

private func callback(_ fn: CSyncCallback?, _ context: UnsafeMutableRawPointer?) -> SyncCallback? {
    guard let fn else { return nil }
    let host = HostContext(pointer: context)
    return { text in text.withCString { fn($0, host.pointer) } }
}

private func manager(_ s: OpaquePointer?) throws -> SyncManager { try store(s).syncManager() }

@_cdecl("syncstore_set_remote")
public func syncstore_set_remote(_ s: OpaquePointer?, _ remote: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).setRemote(try RemoteConfig.parse(try text(remote, "remote_json"))) }
}

@_cdecl("syncstore_sync_down")
public func syncstore_sync_down(_ s: OpaquePointer?, _ target: CString?, _ soup: CString?, _ options: CString?, _ name: CString?,
                                _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                                _ outId: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let id = try manager(s).syncDown(targetJSON: try text(target, "target_json"), soupName: try text(soup, "soup"),
                                         optionsJSON: try optionalText(options, "options_json"),
                                         name: try optionalText(name, "sync_name"), owner: handle(s),
                                         callback: callback(cb, context))
        outId?.pointee = id
    }
}

@_cdecl("syncstore_sync_up")
public func syncstore_sync_up(_ s: OpaquePointer?, _ target: CString?, _ soup: CString?, _ options: CString?, _ name: CString?,
                              _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                              _ outId: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let id = try manager(s).syncUp(targetJSON: try optionalText(target, "target_json"), soupName: try text(soup, "soup"),
                                       optionsJSON: try optionalText(options, "options_json"),
                                       name: try optionalText(name, "sync_name"), owner: handle(s),
                                       callback: callback(cb, context))
        outId?.pointee = id
    }
}

@_cdecl("syncstore_create_sync_down")
public func syncstore_create_sync_down(_ s: OpaquePointer?, _ target: CString?, _ soup: CString?, _ options: CString?, _ name: CString?,
                                       _ outId: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let state = try manager(s).createSyncDown(targetJSON: try text(target, "target_json"), soupName: try text(soup, "soup"),
                                                  optionsJSON: try optionalText(options, "options_json"),
                                                  name: try optionalText(name, "sync_name"))
        outId?.pointee = state.id
    }
}

@_cdecl("syncstore_create_sync_up")
public func syncstore_create_sync_up(_ s: OpaquePointer?, _ target: CString?, _ soup: CString?, _ options: CString?, _ name: CString?,
                                     _ outId: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let state = try manager(s).createSyncUp(targetJSON: try optionalText(target, "target_json"), soupName: try text(soup, "soup"),
                                                optionsJSON: try optionalText(options, "options_json"),
                                                name: try optionalText(name, "sync_name"))
        outId?.pointee = state.id
    }
}

@_cdecl("syncstore_resync")
public func syncstore_resync(_ s: OpaquePointer?, _ id: Int64, _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                             _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).reSync(id: id, owner: handle(s), callback: callback(cb, context)) }
}

@_cdecl("syncstore_resync_by_name")
public func syncstore_resync_by_name(_ s: OpaquePointer?, _ name: CString?, _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                                     _ outId: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        // Not `outId?.pointee = try ...`: optional chaining would skip the whole right-hand side
        // (the run, and its errors) when the caller passes NULL.
        let id = try manager(s).reSync(name: try text(name, "sync_name"), owner: handle(s), callback: callback(cb, context))
        outId?.pointee = id
    }
}

@_cdecl("syncstore_clean_resync_ghosts")
public func syncstore_clean_resync_ghosts(_ s: OpaquePointer?, _ id: Int64, _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                                          _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).cleanResyncGhosts(id: id, owner: handle(s), callback: callback(cb, context)) }
}

@_cdecl("syncstore_get_sync_status")
public func syncstore_get_sync_status(_ s: OpaquePointer?, _ id: Int64, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_state_json")
        guard let state = try manager(s).status(id: id) else { throw StoreError(.notFound, "No sync with id \(id)") }
        try output(out, state.jsonText)
    }
}

@_cdecl("syncstore_get_sync_status_by_name")
public func syncstore_get_sync_status_by_name(_ s: OpaquePointer?, _ name: CString?, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_state_json")
        let name = try text(name, "sync_name")
        guard let state = try manager(s).status(name: name) else { throw StoreError(.notFound, "No sync named '\(name)'") }
        try output(out, state.jsonText)
    }
}

@_cdecl("syncstore_delete_sync")
public func syncstore_delete_sync(_ s: OpaquePointer?, _ id: Int64, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).delete(id: id) }
}

@_cdecl("syncstore_delete_sync_by_name")
public func syncstore_delete_sync_by_name(_ s: OpaquePointer?, _ name: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).delete(name: try text(name, "sync_name")) }
}

@_cdecl("syncstore_stop_syncs")
public func syncstore_stop_syncs(_ s: OpaquePointer?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).stop() }
}

@_cdecl("syncstore_restart_syncs")
public func syncstore_restart_syncs(_ s: OpaquePointer?, _ restartStopped: Int32, _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                                    _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).restart(restartStopped: restartStopped != 0, owner: handle(s), callback: callback(cb, context)) }
}

@_cdecl("syncstore_wait_sync")
public func syncstore_wait_sync(_ s: OpaquePointer?, _ id: Int64, _ timeoutMs: Int64, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let manager = try manager(s)
        if manager.isWorkerThread { throw StoreError(.state, "A sync callback cannot wait for a sync (it would wait for itself)") }
        let state = try manager.wait(id: id, timeoutMs: timeoutMs)
        try output(out, state.jsonText)
    }
}

@_cdecl("syncstore_load_sync_config")
public func syncstore_load_sync_config(_ s: OpaquePointer?, _ path: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try manager(s).loadSyncConfig(path: try text(path, "path")) }
}

// MARK: custom targets

/// Calls a host callback and turns its status, error and malloc'd output into Swift.
private func callHost(_ what: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, UnsafeMutablePointer<syncstore_error>) -> Int32) throws -> String {
    var out: UnsafeMutablePointer<CChar>? = nil
    var error = syncstore_error()
    let status = body(&out, &error)
    defer { free(out) }
    guard status == 0 else { throw hostFailure("Custom target \(what)", status: status, error) }
    guard let out else { return "" }
    // Refused, not repaired: a U+FFFD in place of the host's bytes would change its data.
    guard let text = String(validatingCString: out) else {
        throw StoreError(.argument, "Custom target \(what) returned text that is not valid UTF-8; its results must be UTF-8 JSON (nothing of it was stored)")
    }
    return text
}

private struct HostTarget: @unchecked Sendable {
    let target: syncstore_custom_target
}

@_cdecl("syncstore_register_custom_target")
public func syncstore_register_custom_target(_ s: OpaquePointer?, _ type: CString?, _ target: UnsafePointer<syncstore_custom_target>?,
                                             _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        guard let target else { throw StoreError(.argument, "target must not be NULL") }
        let host = HostTarget(target: target.pointee)
        var callbacks = CustomTargetCallbacks()
        if host.target.fetch_page != nil {
            callbacks.fetchPage = { json, since, continuation in
                try callHost("fetch_page") { out, error in
                    json.withCString { j in
                        if let continuation {
                            return continuation.withCString { c in host.target.fetch_page?(host.target.context, j, since, c, out, error) ?? 1 }
                        }
                        return host.target.fetch_page?(host.target.context, j, since, nil, out, error) ?? 1
                    }
                }
            }
        }
        if host.target.remote_ids != nil {
            callbacks.remoteIds = { json in
                try callHost("remote_ids") { out, error in
                    json.withCString { host.target.remote_ids?(host.target.context, $0, out, error) ?? 1 }
                }
            }
        }
        if host.target.push_record != nil {
            callbacks.pushRecord = { json, action, record in
                try callHost("push_record") { out, error in
                    json.withCString { j in action.withCString { a in record.withCString { r in
                        host.target.push_record?(host.target.context, j, a, r, out, error) ?? 1
                    } } }
                }
            }
        }
        try manager(s).registerCustomTarget(try text(type, "type"), callbacks)
    }
}

// MARK: live sync (docs/sync.md#live-sync)

@_cdecl("syncstore_start_live_sync")
public func syncstore_start_live_sync(_ s: OpaquePointer?, _ options: CString?, _ cb: CSyncCallback?, _ context: UnsafeMutableRawPointer?,
                                      _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let manager = try manager(s)
        let parsed = try LiveSync.Options.parse(try optionalText(options, "options_json"))
        try manager.live.start(parsed, owner: handle(s), callback: callback(cb, context))
    }
}

@_cdecl("syncstore_stop_live_sync")
public func syncstore_stop_live_sync(_ s: OpaquePointer?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try SyncCompanion.of(try store(s)).current?.liveIfMade?.stop() }
}

@_cdecl("syncstore_get_live_sync_state")
public func syncstore_get_live_sync_state(_ s: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                          _ err: ErrorOut?) -> Int32 {
    out?.pointee = nil
    return guarded(err) {
        let text = try SyncCompanion.of(try store(s)).current?.liveIfMade?.stateJSON ?? LiveSync.stoppedStateJSON
        var buffer = TextBuffer(capacity: text.utf8.count + 1)
        buffer.append(text)
        try output(out, buffer)
    }
}
