/// The library version (also `syncstore_version()`; keep the two in step).
public enum SyncStoreVersion {
    public static let string = "0.1.0"
}
