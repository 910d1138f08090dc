import CSyncStoreABI
import Glibc
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

// The hybrid plugins' dispatcher (include/syncstore.h, "The hybrid plugins").

public typealias CPluginAnswer = @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void
public typealias CPluginEvent = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void
public typealias CPluginKeyProvider = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?,
                                                      UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                                      UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<syncstore_error>?) -> Int32

/// A host pointer carried to whichever thread answers.
private struct HostPointer: @unchecked Sendable { let pointer: UnsafeMutableRawPointer? }

private func plugin(_ p: OpaquePointer?) throws -> HybridPlugin {
    guard p != nil else { throw StoreError(.argument, "The plugin handle must not be NULL") }
    return try PluginHandles.get(handle(p))
}

@_cdecl("syncstore_plugin_new")
public func syncstore_plugin_new(_ root: CString?, _ options: CString?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                 _ err: ErrorOut?) -> Int32 {
    out?.pointee = nil
    return guarded(err) {
        let out = try requireOut(out, "out")
        let created = try HybridPlugin(root: try text(root, "root_dir"), optionsJSON: try optionalText(options, "options_json"))
        out.pointee = OpaquePointer(bitPattern: PluginHandles.add(created))
    }
}

@_cdecl("syncstore_plugin_set_remote")
public func syncstore_plugin_set_remote(_ p: OpaquePointer?, _ store: CString?, _ remote: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        try plugin(p).setRemote(storeJSON: try optionalText(store, "store_json"), remoteJSON: try text(remote, "remote_json"))
    }
}

@_cdecl("syncstore_plugin_set_listener")
public func syncstore_plugin_set_listener(_ p: OpaquePointer?, _ fn: CPluginEvent?, _ context: UnsafeMutableRawPointer?,
                                          _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let host = HostPointer(pointer: context)
        var listener: HybridPlugin.Listener? = nil
        if let fn {
            listener = { event, detail in event.withCString { e in detail.withCString { d in fn(host.pointer, e, d) } } }
        }
        try plugin(p).setListener(listener)
    }
}

@_cdecl("syncstore_plugin_set_key_provider")
public func syncstore_plugin_set_key_provider(_ p: OpaquePointer?, _ fn: CPluginKeyProvider?, _ context: UnsafeMutableRawPointer?,
                                              _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let host = HostPointer(pointer: context)
        var provider: HybridPlugin.KeyProvider? = nil
        if let fn {
            provider = { (storeJSON: String) throws -> (key: String?, kdfIter: Int?) in
                var key: UnsafeMutablePointer<CChar>? = nil
                var kdfIter: Int32 = 0
                var error = syncstore_error()
                let status = storeJSON.withCString { fn(host.pointer, $0, &key, &kdfIter, &error) }
                defer {
                    if let key {
                        // The key's bytes do not outlive their use.
                        memset(key, 0, strlen(key))
                        free(key)
                    }
                }
                guard status == 0 else { throw hostFailure("The key provider", status: status, error) }
                guard kdfIter >= 0 else { throw StoreError(.argument, "The key provider gave a negative kdfIter") }
                let text = try key.map { k -> String in
                    guard let s = String(validatingCString: k) else { throw StoreError(.argument, "The key provider's key is not valid UTF-8") }
                    return s
                }
                return (text, kdfIter == 0 ? nil : Int(kdfIter))
            }
        }
        try plugin(p).setKeyProvider(provider)
    }
}

@_cdecl("syncstore_plugin_exec")
public func syncstore_plugin_exec(_ p: OpaquePointer?, _ service: CString?, _ action: CString?, _ args: CString?,
                                  _ answer: CPluginAnswer?, _ context: UnsafeMutableRawPointer?, _ err: ErrorOut?) -> Int32 {
    var target: HybridPlugin? = nil
    let status = guarded(err) {
        guard let _ = answer else { throw StoreError(.argument, "answer must not be NULL") }
        target = try plugin(p)
    }
    guard status == 0, let target, let answer else { return status }
    let host = HostPointer(pointer: context)
    let reply: HybridPlugin.Answer = { code, json in
        if let json { json.withCString { answer(host.pointer, code, $0) } } else { answer(host.pointer, code, nil) }
    }
    // Argument problems are the action's answer (the plugin's error callback), not the call's.
    do {
        let service = try text(service, "service")
        let action = try text(action, "action")
        let args = try optionalText(args, "args_json") ?? "[]"
        target.exec(service: service, action: action, argsJSON: args.isEmpty ? "[]" : args, answer: reply)
    } catch let error as StoreError {
        reply(error.code.rawValue, HybridPlugin.messageJSON(error.message))
    } catch {
        reply(ErrorCode.internal.rawValue, HybridPlugin.messageJSON("Unexpected error: \(error)"))
    }
    return 0
}

@_cdecl("syncstore_plugin_free")
public func syncstore_plugin_free(_ p: OpaquePointer?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        guard p != nil else { return }
        // Closed first and forgotten after: a refused free (from a callback) leaves the handle usable.
        let target = try PluginHandles.get(handle(p))
        defer { if target.isClosed { _ = PluginHandles.remove(handle(p)) } }
        try target.close()
    }
}

@_cdecl("syncstore_plugin_api")
public func syncstore_plugin_api(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: ErrorOut?) -> Int32 {
    out?.pointee = nil
    return guarded(err) {
        try output(try requireOut(out, "out_json"), CordovaAPI.json)
    }
}
