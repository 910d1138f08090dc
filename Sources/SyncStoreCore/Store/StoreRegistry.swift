import Glibc

/// The process-wide table of open stores and the handles hosts hold on them. One SmartStore per
/// database file, shared by every handle that opens it, so writes stay serialized and caches
/// agree. Handles are numbers, never pointers, so a stale handle is an error, not a crash.
package final class StoreRegistry: @unchecked Sendable {
    package static let shared = StoreRegistry()

    private struct OpenStore {
        let store: SmartStore
        var handles: Set<Int>
        /// Its last handle is closing: the store stays here (one object per file) until its
        /// syncs have stopped, its sync lock file is released and its WAL checkpointed.
        var closing = false
    }

    /// Guards the tables; signalled when a closing store leaves them.
    private let lock = ConditionLock()
    private var byPath: [String: OpenStore] = [:]
    /// Each handle's file and store (the store too, so a call finds it with one lookup).
    private var handles: [Int: (path: String, store: SmartStore)] = [:]
    private var nextHandle = 1

    /// The process has one (`shared`); tests make others to play several processes.
    init() {}

    package static func path(root: String, config: StoreConfig) -> String {
        "\(root)/\(config.folder)/\(config.name).db"
    }

    /// Opens the store and returns a new handle to it.
    package func open(root: String, config: StoreConfig) throws -> Int {
        guard !root.isEmpty else { throw StoreError.argument("The root directory must not be empty") }
        let path = StoreRegistry.path(root: root, config: config)
        return try lock.withLock {
            while let open = byPath[path], open.closing {
                // Opening waits for the close to end, but not inside a sync callback (of any
                // store): that close may be waiting for this very callback, directly or through
                // a close this callback's own store is waiting in.
                if SerialWorker.onAnyWorker {
                    throw StoreError(.busy, "Store '\(config.name)' is closing and a sync callback cannot wait for that; open it again after syncstore_close returns", retryable: true)
                }
                _ = lock.wait()
            }
            let store: SmartStore
            if let open = byPath[path] {
                store = open.store
                guard store.readOnly == config.readOnly else {
                    throw StoreError(.state, "Store '\(config.name)' is already open in this process \(store.readOnly ? "read-only" : "for writing"); open it the same way (\"readOnly\": \(store.readOnly)) or close its handles first")
                }
                guard store.isOpen(with: config.key) else {
                    throw StoreError(.auth, config.key == nil
                        ? "Store '\(config.name)' is encrypted: open it with its key (\"key\" in the store config)"
                        : store.isEncrypted
                            ? "The key does not open store '\(config.name)' (it is open in this process with another key or kdfIter)"
                            : "Store '\(config.name)' is not encrypted: open it without a key, or encrypt it with syncstore_change_key")
                }
            } else {
                if !config.readOnly { try FileSystem.makeDirectories("\(root)/\(config.folder)") }
                store = try SmartStore(path: path, key: config.key, kdfIter: config.kdfIter, readOnly: config.readOnly)
            }
            let handle = nextHandle
            nextHandle += 1
            var entry = byPath[path] ?? OpenStore(store: store, handles: [])
            entry.handles.insert(handle)
            byPath[path] = entry
            handles[handle] = (path, store)
            store.ownerOpened(handle)
            return handle
        }
    }

    package func store(_ handle: Int) throws -> SmartStore {
        try lock.withLock {
            guard let open = handles[handle] else {
                throw StoreError(.state, "The store handle is closed or invalid; open the store again")
            }
            return open.store
        }
    }

    /// Closes a handle: its syncs are stopped and waited for, its cursors closed; with the last
    /// handle the WAL is checkpointed into the database file (see `checkpointForClose`) and the
    /// store's connections close. Calls through the handle answer STATE from the start of the
    /// close; an open of the same file waits until the last close has ended (see `open`).
    package func close(_ handle: Int) throws {
        let store = try self.store(handle)
        if store.onCallbackThread {
            throw StoreError(.state, "A sync callback cannot close its own store (it would wait for itself)")
        }
        let (path, last): (String, Bool) = try lock.withLock {
            guard let path = handles.removeValue(forKey: handle)?.path, var open = byPath[path] else {
                throw StoreError(.state, "The store handle is already closed or invalid")
            }
            open.handles.remove(handle)
            open.closing = open.handles.isEmpty
            byPath[path] = open
            store.ownerClosed(handle)
            return (path, open.closing)
        }
        // Outside the registry lock: waiting for a sync must not block other stores.
        store.closeCompanions(owner: handle, last: last)
        store.closeCursors(owner: handle)
        guard last else { return }
        store.checkpointForClose()
        lock.withLock {
            byPath[path] = nil
            lock.broadcast()
        }
    }

    /// Changes the key of the store behind `handle` (nil: decrypts it); see SmartStore.changeKey.
    package func changeKey(_ handle: Int, to newKey: StoreKey?) throws {
        try store(handle).changeKey(to: newKey)
    }

    package func isOpen(path: String) -> Bool { lock.withLock { byPath[path] != nil } }

    package func listStores(root: String, global: Bool) throws -> [String] {
        let folder = "\(root)/\(global ? "global" : "user")"
        // Only files named like stores: other files in the folder are not ours to list or remove.
        return try FileSystem.list(folder).filter { $0.hasSuffix(".db") }.map { String($0.dropLast(3)) }
            .filter { (try? StoreConfig.validate(name: $0)) != nil }.sorted()
    }

    package func removeStore(root: String, config: StoreConfig) throws {
        let path = StoreRegistry.path(root: root, config: config)
        try lock.withLock {
            guard byPath[path] == nil else {
                throw StoreError(.busy, "Store '\(config.name)' is open; close every handle before removing it", retryable: true)
            }
            guard FileSystem.exists(path) else { throw StoreError.notFound("Store '\(config.name)' does not exist") }
            try FileSystem.removeDatabase(path)
        }
    }

    package func removeAllStores(root: String, global: Bool) throws {
        let names = try listStores(root: root, global: global)
        let paths = try names.map { StoreRegistry.path(root: root, config: try StoreConfig(isGlobal: global, name: $0)) }
        try lock.withLock {
            if let open = paths.first(where: { byPath[$0] != nil }) {
                throw StoreError(.busy, "Store file '\(open)' is open; close it before removing all stores", retryable: true)
            }
            for path in paths { try FileSystem.removeDatabase(path) }
        }
    }
}

/// The few file operations the store needs, on libc (no Foundation).
package enum FileSystem {
    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The directory holding `path` ("." for a bare file name).
    package static func directory(of path: String) -> String {
        let directory = String(path.reversed().drop(while: { $0 != "/" }).reversed())
        return directory.isEmpty ? "." : directory
    }

    /// Whether this process may create files in the directory holding `path`.
    package static func isWritableDirectory(of path: String) -> Bool { access(directory(of: path), W_OK) == 0 }

    package static func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            current += "/\(part)"
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw StoreError(.storage, "Cannot create directory '\(current)': \(String(cString: strerror(errno)))")
            }
        }
    }

    package static func list(_ folder: String) throws -> [String] {
        guard let dir = opendir(folder) else {
            if errno == ENOENT { return [] }
            throw StoreError(.storage, "Cannot list '\(folder)': \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    package static func removeDatabase(_ path: String) throws {
        for suffix in ["-wal", "-shm", "-journal", RekeyGate.suffix] + StoreCompanions.sideFileSuffixes { unlink(path + suffix) }
        StoreRekey.removeLeftovers(of: path)
        if unlink(path) != 0 && errno != ENOENT {
            throw StoreError(.storage, "Cannot delete '\(path)': \(String(cString: strerror(errno)))")
        }
    }

    /// Flushes a file's data to the disk.
    package static func syncFile(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError(.storage, "Cannot open '\(path)' to sync it: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw StoreError(.storage, "Cannot sync '\(path)' to disk: \(String(cString: strerror(errno)))") }
    }

    /// Flushes a directory entry change (a rename) to the disk; best effort.
    package static func syncDirectory(of path: String) {
        let fd = open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        Glibc.close(fd)
    }

    package static func readFile(_ path: String) throws -> String {
        guard let file = fopen(path, "rb") else {
            throw StoreError(errno == ENOENT ? .notFound : .storage, "Cannot read '\(path)': \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
            if n < chunk.count { break }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw StoreError.argument("File '\(path)' is not valid UTF-8")
        }
        return text
    }
}
