internal import CSyncStoreABI

/// The library version: include/syncstore.h's SYNCSTORE_VERSION, the one place it is written
/// (also what `syncstore_version()` returns).
package enum SyncStoreVersion {
    package static let string: String = SYNCSTORE_VERSION
}
