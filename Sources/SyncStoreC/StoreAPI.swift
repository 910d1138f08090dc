import CSyncStoreABI
import Glibc
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

public typealias CString = UnsafePointer<CChar>
public typealias OutString = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
public typealias ErrorOut = UnsafeMutablePointer<syncstore_error>

// MARK: stores

@_cdecl("syncstore_open")
public func syncstore_open(_ root: CString?, _ config: CString?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                           _ err: ErrorOut?) -> Int32 {
    out?.pointee = nil
    return guarded(err) {
        let out = try requireOut(out, "out")
        let root = try text(root, "root_dir")
        let config = try StoreConfig.parse(try optionalText(config, "store_config"))
        let id = try StoreRegistry.shared.open(root: root, config: config)
        out.pointee = OpaquePointer(bitPattern: id)
    }
}

@_cdecl("syncstore_close")
public func syncstore_close(_ store: OpaquePointer?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        guard store != nil else { return }
        try StoreRegistry.shared.close(handle(store))
    }
}

@_cdecl("syncstore_change_key")
public func syncstore_change_key(_ s: OpaquePointer?, _ newKey: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let store = try store(s)
        // The new key takes the store's KDF iterations (the default for a plaintext store).
        let key = try optionalText(newKey, "new_key").map { try StoreKey($0, kdfIter: store.kdfIter) }
        try StoreRegistry.shared.changeKey(handle(s), to: key)
    }
}

@_cdecl("syncstore_list_stores")
public func syncstore_list_stores(_ root: CString?, _ global: Int32, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_json")
        let names = try StoreRegistry.shared.listStores(root: try text(root, "root_dir"), global: global != 0)
        let array = JSONDocument.array()
        for name in names { array.root.append(owned: JSONMake.string(name)) }
        try output(out, array.root.dump())
    }
}

@_cdecl("syncstore_remove_store")
public func syncstore_remove_store(_ root: CString?, _ config: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let config = try StoreConfig.parse(try optionalText(config, "store_config"))
        try StoreRegistry.shared.removeStore(root: try text(root, "root_dir"), config: config)
    }
}

@_cdecl("syncstore_remove_all_stores")
public func syncstore_remove_all_stores(_ root: CString?, _ global: Int32, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        try StoreRegistry.shared.removeAllStores(root: try text(root, "root_dir"), global: global != 0)
    }
}

@_cdecl("syncstore_database_size")
public func syncstore_database_size(_ s: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let out = try requireOut(out, "out_bytes")
        out.pointee = try store(s).databaseSize()
    }
}

@_cdecl("syncstore_load_store_config")
public func syncstore_load_store_config(_ s: OpaquePointer?, _ path: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let store = try store(s)
        try store.loadStoreConfig(path: try text(path, "path"))
    }
}

// MARK: soups

@_cdecl("syncstore_register_soup")
public func syncstore_register_soup(_ s: OpaquePointer?, _ soup: CString?, _ specs: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        try store(s).registerSoup(try text(soup, "soup"), specsJSON: try text(specs, "index_specs_json"))
    }
}

@_cdecl("syncstore_soup_exists")
public func syncstore_soup_exists(_ s: OpaquePointer?, _ soup: CString?, _ out: UnsafeMutablePointer<Int32>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let out = try requireOut(out, "out_exists")
        out.pointee = try store(s).soupExists(try text(soup, "soup")) ? 1 : 0
    }
}

@_cdecl("syncstore_remove_soup")
public func syncstore_remove_soup(_ s: OpaquePointer?, _ soup: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try store(s).removeSoup(try text(soup, "soup"), owner: handle(s)) }
}

@_cdecl("syncstore_clear_soup")
public func syncstore_clear_soup(_ s: OpaquePointer?, _ soup: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try store(s).clearSoup(try text(soup, "soup"), owner: handle(s)) }
}

@_cdecl("syncstore_get_soup_index_specs")
public func syncstore_get_soup_index_specs(_ s: OpaquePointer?, _ soup: CString?, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_json")
        try output(out, try store(s).indexSpecsJSON(try text(soup, "soup")))
    }
}

@_cdecl("syncstore_alter_soup")
public func syncstore_alter_soup(_ s: OpaquePointer?, _ soup: CString?, _ specs: CString?, _ reindex: Int32, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        try store(s).alterSoup(try text(soup, "soup"), specsJSON: try text(specs, "index_specs_json"), reIndexData: reindex != 0)
    }
}

@_cdecl("syncstore_reindex_soup")
public func syncstore_reindex_soup(_ s: OpaquePointer?, _ soup: CString?, _ paths: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        try store(s).reIndexSoup(try text(soup, "soup"), pathsJSON: try text(paths, "paths_json"))
    }
}

// MARK: entries

@_cdecl("syncstore_upsert")
public func syncstore_upsert(_ s: OpaquePointer?, _ soup: CString?, _ entries: CString?, _ externalIdPath: CString?,
                             _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let result = try store(s).upsert(soup: try text(soup, "soup"), entriesJSON: try text(entries, "entries_json"),
                                         externalIdPath: try optionalText(externalIdPath, "external_id_path"), owner: handle(s))
        try output(out, result)
    }
}

@_cdecl("syncstore_retrieve")
public func syncstore_retrieve(_ s: OpaquePointer?, _ soup: CString?, _ ids: CString?, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_json")
        try output(out, try store(s).retrieve(soup: try text(soup, "soup"), idsJSON: try text(ids, "ids_json")))
    }
}

@_cdecl("syncstore_remove_entries")
public func syncstore_remove_entries(_ s: OpaquePointer?, _ soup: CString?, _ ids: CString?, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try store(s).removeEntries(soup: try text(soup, "soup"), idsJSON: try text(ids, "ids_json"), owner: handle(s)) }
}

@_cdecl("syncstore_remove_by_query")
public func syncstore_remove_by_query(_ s: OpaquePointer?, _ soup: CString?, _ spec: CString?,
                                      _ count: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> Int32 {
    guarded(err) {
        let removed = try store(s).removeByQuery(soup: try text(soup, "soup"), specJSON: try text(spec, "query_spec_json"), owner: handle(s))
        count?.pointee = Int64(removed)
    }
}

// MARK: queries

@_cdecl("syncstore_query_soup")
public func syncstore_query_soup(_ s: OpaquePointer?, _ soup: CString?, _ spec: CString?, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_cursor_json")
        let cursor = try store(s).querySoup(try text(soup, "soup"), spec: try querySpec(spec), owner: handle(s))
        try output(out, cursor)
    }
}

@_cdecl("syncstore_run_smart_query")
public func syncstore_run_smart_query(_ s: OpaquePointer?, _ spec: CString?, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_cursor_json")
        try output(out, try store(s).runSmartQuery(specJSON: try text(spec, "query_spec_json"), owner: handle(s)))
    }
}

@_cdecl("syncstore_query_page")
public func syncstore_query_page(_ s: OpaquePointer?, _ soup: CString?, _ spec: CString?, _ page: Int64,
                                 _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_entries_json")
        let store = try store(s)
        let soup = try optionalText(soup, "soup")
        if let spec, let page = try store.queryPage(soup: soup, specUTF8: utf8Bytes(spec), page: page) {
            return try output(out, page)
        }
        try output(out, try store.queryPage(soup: soup, spec: try QuerySpec.parse(text: try text(spec, "query_spec_json")), page: page))
    }
}

/// A query spec argument, read straight from its bytes when it is a flat object (a lookup's
/// spec), else as text.
private func querySpec(_ p: CString?) throws -> QuerySpec {
    if let p, let spec = try QuerySpec.parse(flat: utf8Bytes(p)) { return spec }
    return try QuerySpec.parse(text: try text(p, "query_spec_json"))
}

/// A C string's bytes (not yet known to be UTF-8), valid while the caller's string is.
private func utf8Bytes(_ p: CString) -> UnsafeBufferPointer<UInt8> {
    UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p))
}

@_cdecl("syncstore_cursor_move_to_page")
public func syncstore_cursor_move_to_page(_ s: OpaquePointer?, _ cursor: Int64, _ page: Int64, _ out: OutString?, _ err: ErrorOut?) -> Int32 {
    clear(out)
    return guarded(err) {
        let out = try requireOut(out, "out_cursor_json")
        try output(out, try store(s).moveCursor(cursor, toPage: page))
    }
}

@_cdecl("syncstore_cursor_close")
public func syncstore_cursor_close(_ s: OpaquePointer?, _ cursor: Int64, _ err: ErrorOut?) -> Int32 {
    guarded(err) { try store(s).closeCursor(cursor) }
}
