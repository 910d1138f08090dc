import SyncStoreCore
/// What one sync run needs from its surroundings.
package struct SyncContext {
    package let rest: RestClient
    package let cancel: CancelFlag
    package let store: SmartStore
    package let soupName: String
    package let syncId: Int64
}
