import SyncStoreCore

// TEMPORARY: until ChangeListeners.addQuery / setInterval land from main (then this file goes).
extension ChangeListeners {
    func addQuery(store: SmartStore, specJSON: String, owner: Int, _ deliver: @escaping Deliver) throws -> Int64 {
        throw StoreError(.state, "query listeners are not in this build yet")
    }

    func setInterval(_ token: Int64, milliseconds: Int64) throws {
        throw StoreError(.state, "listener intervals are not in this build yet")
    }
}
