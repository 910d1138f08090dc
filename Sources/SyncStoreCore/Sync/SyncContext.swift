/// What one sync run needs from its surroundings.
struct SyncContext {
    let rest: RestClient
    let cancel: CancelFlag
    let store: SmartStore
    let soupName: String
    let syncId: Int64
}
