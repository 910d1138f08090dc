import CSyncStoreABI
import Glibc
import SyncStoreCore

@_cdecl("syncstore_version")
public func syncstore_version() -> UnsafePointer<CChar> {
    UnsafeRawPointer(libraryVersion.utf8Start).assumingMemoryBound(to: CChar.self)
}

@_cdecl("syncstore_abi_version")
public func syncstore_abi_version() -> Int32 { SYNCSTORE_ABI_VERSION }

@_cdecl("syncstore_free")
public func syncstore_free(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }

private let statusNames: [StaticString] = [
    "SYNCSTORE_OK", "SYNCSTORE_ERR_ARGUMENT", "SYNCSTORE_ERR_NOT_FOUND", "SYNCSTORE_ERR_EXISTS",
    "SYNCSTORE_ERR_BUSY", "SYNCSTORE_ERR_NETWORK", "SYNCSTORE_ERR_AUTH", "SYNCSTORE_ERR_SERVER",
    "SYNCSTORE_ERR_CONFLICT", "SYNCSTORE_ERR_STORAGE", "SYNCSTORE_ERR_INTERNAL", "SYNCSTORE_ERR_STATE",
]
private let unknownStatus: StaticString = "SYNCSTORE_ERR_UNKNOWN"

@_cdecl("syncstore_status_name")
public func syncstore_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    let name = (status >= 0 && Int(status) < statusNames.count) ? statusNames[Int(status)] : unknownStatus
    return UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
}
