import CSyncStoreABI
import Glibc
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

@_cdecl("syncstore_version")
public func syncstore_version() -> UnsafePointer<CChar> { libraryVersion.pointer }

@_cdecl("syncstore_abi_version")
public func syncstore_abi_version() -> Int32 { SYNCSTORE_ABI_VERSION }

@_cdecl("syncstore_free")
public func syncstore_free(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }

/// syncstore_status_name()'s answers by code: the header's macro names, "SYNCSTORE_ERR_" + ErrorCode.name.
private let statusNames: [Int32: StaticCString] = Dictionary(uniqueKeysWithValues:
    [(Int32(0), StaticCString("SYNCSTORE_OK"))] + ErrorCode.allCases.map { ($0.rawValue, StaticCString("SYNCSTORE_ERR_\($0.name)")) })
private let unknownStatus = StaticCString("SYNCSTORE_ERR_UNKNOWN")

@_cdecl("syncstore_status_name")
public func syncstore_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    (statusNames[status] ?? unknownStatus).pointer
}
