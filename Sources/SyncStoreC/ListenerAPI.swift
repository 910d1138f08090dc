import CSyncStoreABI
import SyncStoreCore

// Soup listeners (the header's "Callbacks, threads and close"): a token is the listener's number,
// unique in the process, never a pointer, so a stale or foreign token is an error, not a crash.

public typealias CChangeCallback = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void

/// The host's context pointer, carried to the notifier thread untouched.
private struct ListenerContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

@_cdecl("syncstore_add_soup_listener")
public func syncstore_add_soup_listener(_ s: OpaquePointer?, _ soup: CString?, _ cb: CChangeCallback?,
                                        _ context: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                        _ err: ErrorOut?) -> Int32 {
    out?.pointee = nil
    return guarded(err) {
        let out = try requireOut(out, "out_token")
        guard let cb else { throw StoreError(.argument, "cb must not be NULL") }
        let store = try store(s)
        let soup = try optionalText(soup, "soup_or_NULL")
        let host = ListenerContext(pointer: context)
        let token = try ChangeListeners.of(store).add(store: store, soup: soup, owner: handle(s)) { text in
            text.withCString { cb($0, host.pointer) }
        }
        out.pointee = OpaquePointer(bitPattern: Int(token))
    }
}

@_cdecl("syncstore_remove_listener")
public func syncstore_remove_listener(_ s: OpaquePointer?, _ token: OpaquePointer?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let store = try store(s)
        guard let token else { throw StoreError(.argument, "token must not be NULL") }
        try ChangeListeners.of(store).remove(Int64(Int(bitPattern: UnsafeRawPointer(token))))
    }
}
