import CSyncStoreABI
import SyncStoreCore

// Listeners (the header's "Callbacks, threads and close"): a token is the listener's number,
// unique in the process, never a pointer, so a stale or foreign token is an error, not a crash.

public typealias CChangeCallback = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void

/// The host's context pointer, carried to the notifier thread untouched.
private struct ListenerContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

/// The shared part of the add functions: checks the out pointer and the callback, and hands
/// `add` the store, the handle and a deliver function calling `cb` with the host's context.
private func addListener(_ s: OpaquePointer?, _ cb: CChangeCallback?, _ context: UnsafeMutableRawPointer?,
                         _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?,
                         _ add: (SmartStore, Int, @escaping ChangeListeners.Deliver) throws -> Int64) -> Int32 {
    out?.pointee = nil
    return guarded(err) {
        let out = try requireOut(out, "out_token")
        guard let cb else { throw StoreError(.argument, "cb must not be NULL") }
        let host = ListenerContext(pointer: context)
        let token = try add(try store(s), handle(s)) { text in text.withCString { cb($0, host.pointer) } }
        out.pointee = OpaquePointer(bitPattern: Int(token))
    }
}

/// A token as the listener number it carries; ARGUMENT for NULL.
private func tokenNumber(_ token: OpaquePointer?) throws -> Int64 {
    guard let token else { throw StoreError(.argument, "token must not be NULL") }
    return Int64(Int(bitPattern: UnsafeRawPointer(token)))
}

@_cdecl("syncstore_add_soup_listener")
public func syncstore_add_soup_listener(_ s: OpaquePointer?, _ soup: CString?, _ cb: CChangeCallback?,
                                        _ context: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                        _ err: ErrorOut?) -> Int32 {
    addListener(s, cb, context, out, err) { store, owner, deliver in
        try ChangeListeners.of(store).add(store: store, soup: try optionalText(soup, "soup_or_NULL"), owner: owner, deliver)
    }
}

@_cdecl("syncstore_add_query_listener")
public func syncstore_add_query_listener(_ s: OpaquePointer?, _ spec: CString?, _ cb: CChangeCallback?,
                                         _ context: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                         _ err: ErrorOut?) -> Int32 {
    addListener(s, cb, context, out, err) { store, owner, deliver in
        try ChangeListeners.of(store).addQuery(store: store, specJSON: try text(spec, "query_spec_json"), owner: owner, deliver)
    }
}

@_cdecl("syncstore_remove_listener")
public func syncstore_remove_listener(_ s: OpaquePointer?, _ token: OpaquePointer?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let store = try store(s)
        try ChangeListeners.of(store).remove(try tokenNumber(token))
    }
}

@_cdecl("syncstore_set_listener_interval")
public func syncstore_set_listener_interval(_ s: OpaquePointer?, _ token: OpaquePointer?, _ ms: Int64, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let store = try store(s)
        try ChangeListeners.of(store).setInterval(try tokenNumber(token), milliseconds: ms)
    }
}

public typealias CNotificationsReady = @convention(c) (UnsafeMutableRawPointer?) -> Void

@_cdecl("syncstore_buffer_notifications")
public func syncstore_buffer_notifications(_ s: OpaquePointer?, _ ready: CNotificationsReady?, _ context: UnsafeMutableRawPointer?,
                                           _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let store = try store(s)
        let host = ListenerContext(pointer: context)
        var told: ChangeListeners.Ready? = nil
        if let ready { told = { ready(host.pointer) } }
        try ChangeListeners.of(store).buffer(owner: handle(s), ready: told)
    }
}

@_cdecl("syncstore_send_notifications")
public func syncstore_send_notifications(_ s: OpaquePointer?, _ outSent: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    outSent?.pointee = 0
    return guarded(err) {
        let store = try store(s)
        let sent = try ChangeListeners.of(store).send(owner: handle(s))
        outSent?.pointee = Int64(sent)
    }
}
