// docs/smartstore.md#stores — Stores: storeConfig, user vs global, list/remove stores, database size,
// shared handles, closed handles.
import XCTest
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

// docs/smartstore.md#stores
final class StoreConfigTests: XCTestCase {
    func testDefaultWhenOmittedEmptyOrNull() throws {
        for text in [nil, "", "null", " null "] as [String?] {
            let config = try StoreConfig.parse(text)
            XCTAssertFalse(config.isGlobal, "\(String(describing: text))")
            XCTAssertEqual(config.name, StoreConfig.defaultName, "\(String(describing: text))")
        }
    }

    func testBareBooleanMeansIsGlobalStore() throws {
        XCTAssertTrue(try StoreConfig.parse("true").isGlobal)
        XCTAssertEqual(try StoreConfig.parse("true").name, StoreConfig.defaultName)
        XCTAssertFalse(try StoreConfig.parse("false").isGlobal)
    }

    func testObjectForm() throws {
        let global = try StoreConfig.parse(#"{"isGlobalStore": true, "storeName": "MyStore"}"#)
        XCTAssertEqual(global, try StoreConfig(isGlobal: true, name: "MyStore"))
        let user = try StoreConfig.parse(#"{"isGlobalStore": false, "storeName": "MyStore"}"#)
        XCTAssertEqual(user, try StoreConfig(isGlobal: false, name: "MyStore"))
        // Missing or null members take their defaults.
        XCTAssertEqual(try StoreConfig.parse(#"{"storeName": "Other"}"#), try StoreConfig(isGlobal: false, name: "Other"))
        XCTAssertEqual(try StoreConfig.parse(#"{"isGlobalStore": true}"#), try StoreConfig(isGlobal: true))
        XCTAssertEqual(try StoreConfig.parse(#"{"isGlobalStore": null, "storeName": null}"#), try StoreConfig())
        XCTAssertEqual(try StoreConfig.parse("{}"), try StoreConfig())
    }

    func testBadConfigs() {
        for text in ["42", #""MyStore""#, "[true]", #"{"isGlobalStore": "yes"}"#, #"{"isGlobalStore": 1}"#,
                     #"{"storeName": 5}"#, #"{"storeName": ""}"#, #"{"storeName": "../escape"}"#,
                     #"{"storeName": "a/b"}"#, #"{"storeName": ".hidden"}"#, #"{"storeName": "sp ace"}"#,
                     "{", #"{"storeName": "x"} trailing"#, String(repeating: "a", count: 129).debugDescription] {
            assertStoreError(.argument, text) { try StoreConfig.parse(text) }
        }
        // 128 characters is still fine.
        XCTAssertNoThrow(try StoreConfig.parse(#"{"storeName": "\#(String(repeating: "a", count: 128))"}"#))
    }
}

// docs/smartstore.md#stores
final class StoreRegistryTests: StoreTestCase {
    var registry = StoreRegistry()

    override func setUpWithError() throws {
        try super.setUpWithError()
        registry = StoreRegistry()
    }

    private func open(_ config: String?) throws -> Int {
        try registry.open(root: root, config: try StoreConfig.parse(config))
    }

    // "readOnly": true: reads (also what another connection has in the WAL), refuses writes,
    // syncs and changes of key with STATE naming the file, never creates a store, and must
    // match how the store is already open in this process.
    func testReadOnlyStoreConfig() throws {
        XCTAssertTrue(try StoreConfig.parse(#"{"storeName": "ro", "readOnly": true}"#).readOnly)
        XCTAssertFalse(try StoreConfig.parse(#"{"storeName": "ro", "readOnly": null}"#).readOnly)
        assertStoreError(.argument) { try StoreConfig.parse(#"{"readOnly": "yes"}"#) }
        let missing = assertStoreError(.notFound) { try open(#"{"storeName": "ro", "readOnly": true}"#) }
        XCTAssertTrue(missing?.message.contains("ro.db") ?? false, missing?.message ?? "")
        XCTAssertNotEqual(access(root + "/user", F_OK), 0, "a read-only open created the store's folder")

        let writer = try open(#"{"storeName": "ro"}"#)
        let store = try registry.store(writer)
        try store.registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        _ = try store.upsert(soup: "s", entriesJSON: #"[{"k":"a"},{"k":"b"}]"#)
        assertStoreError(.state) { try open(#"{"storeName": "ro", "readOnly": true}"#) }

        // Another process's view: its own registry, while this one keeps the store open (the WAL
        // holds the last commits).
        let other = StoreRegistry()
        let handle = try other.open(root: root, config: try StoreConfig.parse(#"{"storeName": "ro", "readOnly": true}"#))
        let reading = try other.store(handle)
        _ = try store.upsert(soup: "s", entriesJSON: #"[{"k":"c"}]"#)
        XCTAssertEqual(try reading.entryCounts(soup: "s").entries, 3)
        XCTAssertEqual(try CursorPage(reading.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select {s:k} from {s} order by {s:k}","pageSize":10}"#)).rows.count, 3)
        for (what, call) in [("upsert", { _ = try reading.upsert(soup: "s", entriesJSON: #"{"k":"d"}"#) }),
                             ("register", { try reading.registerSoup("t", specsJSON: #"[{"path":"k","type":"string"}]"#) }),
                             ("remove", { try reading.removeSoup("s") }),
                             ("sync", { _ = try reading.syncManager() }),
                             ("rekey", { try reading.changeKey(to: try StoreKey("k")) })] as [(String, () throws -> Void)] {
            let error = assertStoreError(.state, what) { try call() }
            XCTAssertTrue(error?.message.contains(reading.path) ?? false, "\(what): \(error?.message ?? "")")
        }
        try other.close(handle)
        XCTAssertEqual(try store.entryCounts(soup: "s").entries, 3)
        try registry.close(writer)
    }

    func testUserAndGlobalStoresWithTheSameNameAreDifferentDatabases() throws {
        let user = try open(#"{"isGlobalStore": false, "storeName": "Same"}"#)
        let global = try open(#"{"isGlobalStore": true, "storeName": "Same"}"#)
        let u = try registry.store(user)
        let g = try registry.store(global)
        XCTAssertFalse(u === g)
        XCTAssertNotEqual(u.path, g.path)
        try u.registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        _ = try u.upsert(soup: "s", entriesJSON: #"{"k":"user only"}"#)
        XCTAssertTrue(u.soupExists("s"))
        XCTAssertFalse(g.soupExists("s"), "a soup of the user store must not appear in the global store")
        XCTAssertEqual(try registry.listStores(root: root, global: false), ["Same"])
        XCTAssertEqual(try registry.listStores(root: root, global: true), ["Same"])
        // The files really are separate: reopen the global store from disk.
        try registry.close(global)
        let again = try registry.store(try open(#"{"isGlobalStore": true, "storeName": "Same"}"#))
        XCTAssertFalse(again.soupExists("s"))
    }

    func testDefaultStoreIsTheUserStoreNamedSmartstore() throws {
        let h1 = try open(nil)
        let h2 = try open(#"{"isGlobalStore": false, "storeName": "smartstore"}"#)
        XCTAssertTrue(try registry.store(h1) === registry.store(h2))
        XCTAssertEqual(try registry.listStores(root: root, global: false), ["smartstore"])
        XCTAssertEqual(try registry.listStores(root: root, global: true), [])
    }

    func testListStores() throws {
        XCTAssertEqual(try registry.listStores(root: root, global: false), [], "no stores in a fresh root")
        XCTAssertEqual(try registry.listStores(root: "\(root)/does/not/exist", global: true), [])
        for name in ["b", "a", "c.d"] { try registry.close(try open(#"{"storeName": "\#(name)"}"#)) }
        try registry.close(try open(#"{"isGlobalStore": true, "storeName": "g1"}"#))
        XCTAssertEqual(try registry.listStores(root: root, global: false), ["a", "b", "c.d"])
        XCTAssertEqual(try registry.listStores(root: root, global: true), ["g1"])
    }

    func testRemoveStore() throws {
        let handle = try open(#"{"storeName": "victim"}"#)
        try registry.store(handle).registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        let config = try StoreConfig(name: "victim")
        assertStoreError(.busy) { try registry.removeStore(root: root, config: config) }
        do {
            try registry.removeStore(root: root, config: config)
        } catch let error as StoreError {
            XCTAssertTrue(error.retryable, "BUSY means retry once the store is closed")
        }
        XCTAssertEqual(try registry.listStores(root: root, global: false), ["victim"], "a busy removal removes nothing")
        let second = try open(#"{"storeName": "victim"}"#)
        try registry.close(handle)
        assertStoreError(.busy, "still open through the second handle") { try registry.removeStore(root: root, config: config) }
        XCTAssertTrue(try registry.store(second).soupExists("s"))
        try registry.close(second)
        try registry.removeStore(root: root, config: config)
        XCTAssertEqual(try registry.listStores(root: root, global: false), [])
        for suffix in ["", "-wal", "-shm"] {
            XCTAssertNotEqual(access(StoreRegistry.path(root: root, config: config) + suffix, F_OK), 0, "file\(suffix) left behind")
        }
        assertStoreError(.notFound) { try registry.removeStore(root: root, config: config) }
        assertStoreError(.notFound) { try registry.removeStore(root: root, config: try StoreConfig(isGlobal: true, name: "victim")) }
        // Reopening gives a new, empty store.
        let reopened = try open(#"{"storeName": "victim"}"#)
        XCTAssertEqual(try registry.store(reopened).soupNames, [])
    }

    func testRemoveAllStores() throws {
        for name in ["u1", "u2"] { try registry.close(try open(#"{"storeName": "\#(name)"}"#)) }
        let keep = try open(#"{"isGlobalStore": true, "storeName": "g1"}"#)
        let openUser = try open(#"{"storeName": "u3"}"#)
        assertStoreError(.busy) { try registry.removeAllStores(root: root, global: false) }
        XCTAssertEqual(try registry.listStores(root: root, global: false), ["u1", "u2", "u3"], "busy: nothing removed")
        try registry.close(openUser)
        try registry.removeAllStores(root: root, global: false)
        XCTAssertEqual(try registry.listStores(root: root, global: false), [])
        XCTAssertEqual(try registry.listStores(root: root, global: true), ["g1"], "removing user stores keeps global ones")
        try registry.close(keep)
        try registry.removeAllStores(root: root, global: true)
        XCTAssertEqual(try registry.listStores(root: root, global: true), [])
        // Removing all of nothing is fine.
        try registry.removeAllStores(root: root, global: true)
    }

    func testTwoHandlesShareOneStore() throws {
        let h1 = try open(#"{"storeName": "shared"}"#)
        let h2 = try open(#"{"storeName": "shared"}"#)
        XCTAssertNotEqual(h1, h2)
        let s1 = try registry.store(h1)
        let s2 = try registry.store(h2)
        XCTAssertTrue(s1 === s2)
        try s1.registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        _ = try s1.upsert(soup: "s", entriesJSON: #"[{"k":"a"},{"k":"b"}]"#)
        XCTAssertTrue(s2.soupExists("s"))
        XCTAssertEqual(try count("s", on: s2), 2)
        // Closing one handle keeps the other working, cursors of the closed handle go away.
        let cursor = try CursorPage(s1.querySoup("s", specJSON: #"{"queryType":"range","pageSize":1}"#, owner: h1))
        try registry.close(h1)
        assertStoreError(.notFound) { try s2.moveCursor(cursor.cursorId, toPage: 1) }
        XCTAssertEqual(try count("s", on: try registry.store(h2)), 2)
        try registry.close(h2)
        XCTAssertFalse(registry.isOpen(path: s1.path))
    }

    func testClosedHandleIsAStateError() throws {
        let handle = try open(nil)
        try registry.close(handle)
        assertStoreError(.state) { try registry.store(handle) }
        assertStoreError(.state) { try registry.close(handle) }
        assertStoreError(.state) { try registry.store(0) }
        assertStoreError(.state) { try registry.store(-1) }
        assertStoreError(.state) { try registry.store(Int.max) }
        // Handles are never reused: a new open does not revive the old number.
        let next = try open(nil)
        XCTAssertNotEqual(next, handle)
        assertStoreError(.state) { try registry.store(handle) }
    }

    func testOpenErrors() throws {
        assertStoreError(.argument) { try registry.open(root: "", config: try StoreConfig()) }
        // A root that cannot be created (a file is in the way).
        let file = "\(root)/plainfile"
        let fd = creat(file, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        close(fd)
        assertStoreError(.storage) { try registry.open(root: file, config: try StoreConfig()) }
    }

    func testForeignFilesInTheStoreFolderAreNotStores() throws {
        try registry.close(try open(#"{"storeName": "real"}"#))
        for name in ["bad name.db", ".hidden.db", "notes.txt", "real.db-wal"] {
            let fd = creat("\(root)/user/\(name)", 0o644)
            XCTAssertGreaterThanOrEqual(fd, 0)
            close(fd)
        }
        XCTAssertEqual(try registry.listStores(root: root, global: false), ["real"], "only valid store names are listed")
        try registry.removeAllStores(root: root, global: false)
        XCTAssertEqual(try registry.listStores(root: root, global: false), [])
        XCTAssertEqual(access("\(root)/user/notes.txt", F_OK), 0, "files that are not stores are left alone")
    }

    func testOpeningACorruptFileIsAStorageError() throws {
        XCTAssertEqual(mkdir("\(root)/user", 0o755), 0)
        let path = "\(root)/user/broken.db"
        let file = fopen(path, "wb")
        let junk = Array(repeating: UInt8(ascii: "z"), count: 8192)
        fwrite(junk, 1, junk.count, file)
        fclose(file)
        assertStoreError(.storage) { try open(#"{"storeName": "broken"}"#) }
        XCTAssertFalse(registry.isOpen(path: path))
    }

    func testOpeningAStoreWithDamagedMetadataIsAStorageError() throws {
        let handle = try open(#"{"storeName": "meta"}"#)
        try registry.store(handle).registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        try registry.close(handle)
        let path = StoreRegistry.path(root: root, config: try StoreConfig(name: "meta"))
        try rawExec(path, "UPDATE soup_index_map SET type = 'bogus'")
        let error = assertStoreError(.storage) { try open(#"{"storeName": "meta"}"#) }
        XCTAssertTrue(error?.message.contains("bogus") ?? false, error?.message ?? "")
    }

    func testClosingTheLastHandleReleasesTheStore() throws {
        weak var released: SmartStore?
        try {
            let h1 = try open(#"{"storeName": "gone"}"#)
            let h2 = try open(#"{"storeName": "gone"}"#)
            let s = try registry.store(h1)
            released = s
            try s.registerSoup("s", specsJSON: #"[{"path":"k","type":"string"},{"path":"t","type":"full_text"}]"#)
            _ = try s.upsert(soup: "s", entriesJSON: #"{"k":"a","t":"b"}"#)
            let page = try CursorPage(s.querySoup("s", specJSON: "{}", owner: h1))
            _ = try s.moveCursor(page.cursorId, toPage: 0)
            _ = try smart("select count(*) from {s}", on: s)
            try registry.close(h1)
            try registry.close(h2)
        }()
        XCTAssertNil(released, "the store object (and its SQLite connections) must go with its last handle")
        // Also once its sync manager was created (the manager refers to the store).
        weak var withSync: SmartStore?
        try {
            let h = try open(#"{"storeName": "synced"}"#)
            let s = try registry.store(h)
            withSync = s
            _ = try s.syncManager()
            try registry.close(h)
        }()
        XCTAssertNil(withSync, "a store whose sync manager was used must go with its last handle too")
        // The files can then be removed and the store reopened fresh.
        try registry.removeStore(root: root, config: try StoreConfig(name: "gone"))
        XCTAssertEqual(try registry.store(try open(#"{"storeName": "gone"}"#)).soupNames, [])
    }

    func testDataPersistsAcrossCloseAndReopen() throws {
        let h = try open(#"{"storeName": "persist"}"#)
        try registry.store(h).registerSoup("s", specsJSON: #"[{"path":"k","type":"string"}]"#)
        _ = try registry.store(h).upsert(soup: "s", entriesJSON: #"{"k":"kept"}"#)
        try registry.close(h)
        let h2 = try open(#"{"storeName": "persist"}"#)
        let page = try CursorPage(registry.store(h2).querySoup("s", specJSON: #"{"queryType":"exact","indexPath":"k","matchKey":"kept"}"#))
        XCTAssertEqual(page.totalEntries, 1)
    }
}

// docs/smartstore.md#stores
final class DatabaseSizeTests: StoreTestCase {
    func testDatabaseSizeGrowsAsDataIsAdded() throws {
        let s = try store
        let empty = try s.databaseSize()
        XCTAssertGreaterThan(empty, 0)
        try register("s", #"[{"path":"k","type":"string"}]"#)
        let registered = try s.databaseSize()
        XCTAssertGreaterThan(registered, empty)
        let filler = String(repeating: "x", count: 1000)
        let batch = "[" + (0..<500).map { #"{"k":"\#($0)","pad":"\#(filler)"}"# }.joined(separator: ",") + "]"
        try upsert("s", batch)
        let filled = try s.databaseSize()
        XCTAssertGreaterThan(filled, registered + 400_000, "500 KB of entries must show in the size")
        try upsert("s", batch)
        XCTAssertGreaterThan(try s.databaseSize(), filled)
    }
}
