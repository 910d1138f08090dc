// Storage faults (header: Atomicity, Runs): a disk that fills up, media
// that are read-only, a damaged page. Each failing call says STORAGE with a message that says
// what happened, commits nothing by halves, and the store works again once the cause is gone.
// Disk full and read-only media are real: a tmpfs of a few MB mounted in the test's directory
// (root with CAP_SYS_ADMIN; elsewhere those tests are skipped and say why).
import XCTest
import Foundation
import Glibc
import CSQLite
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

/// A small tmpfs: a real file system that runs out of space, or is remounted read-only.
final class SmallDisk: @unchecked Sendable {
    let path: String
    private let size: String
    private var filler: Int32 = -1

    init(under root: String, size: String = "8m") throws {
        path = root + "/disk"
        self.size = size
        guard mkdir(path, 0o755) == 0 else { throw TestFailure("mkdir \(path): \(String(cString: strerror(errno)))") }
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0755") == 0 else {
            let reason = String(cString: strerror(errno))
            rmdir(path)
            throw XCTSkip("Cannot mount a \(size) tmpfs (\(reason)): a real full or read-only disk needs root with CAP_SYS_ADMIN")
        }
    }

    deinit {
        if filler >= 0 { close(filler) }
        umount2(path, Int32(MNT_DETACH))
        rmdir(path)
    }

    /// Takes every free byte with a filler file: the next write that needs a new block gets ENOSPC.
    func fill() throws {
        if filler < 0 { filler = open(path + "/.filler", O_CREAT | O_WRONLY | O_APPEND, 0o600) }
        guard filler >= 0 else { throw TestFailure("cannot create the filler: \(String(cString: strerror(errno)))") }
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 16)
        for size in [1 << 16, 4096, 1] {
            while write(filler, chunk, size) == size {}
        }
        guard errno == ENOSPC else { throw TestFailure("filling the disk stopped with \(String(cString: strerror(errno)))") }
    }

    /// Space is back.
    func free() {
        if filler >= 0 { close(filler) }
        filler = -1
        unlink(path + "/.filler")
    }

    /// Remounts the file system read-only (nothing may be open for writing on it) or writable.
    func setReadOnly(_ readOnly: Bool) throws {
        let flags = UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0)
        guard mount("tmpfs", path, "tmpfs", flags, "size=\(size),mode=0755") == 0 else {
            throw TestFailure("remount \(readOnly ? "ro" : "rw"): \(String(cString: strerror(errno)))")
        }
    }
}

final class StorageFaultTests: StoreTestCase {
    let specs = #"[{"path":"Id","type":"string"},{"path":"LastName","type":"string"},{"path":"__local__","type":"string"}]"#
    let config = try! StoreConfig(name: "faulty")

    func count(_ store: SmartStore, _ soup: String, _ condition: String = "1 = 1") throws -> Int {
        let page = try CursorPage(try store.runSmartQuery(specJSON: #"{"queryType":"smart","pageSize":1,"smartSql":"select count(*) from {\#(soup)} where \#(condition)"}"#))
        return (page.rows.first?.first as? Int) ?? -1
    }

    func entriesJSON(_ names: [String], local: Bool) -> String {
        "[" + names.map { name in
            local ? #"{"attributes":{"type":"Contact"},"LastName":"\#(name)","__local__":true,"__locally_created__":true}"#
                  : #"{"Id":"\#(name)","LastName":"\#(name)","padding":"\#(String(repeating: "p", count: 2000))"}"#
        }.joined(separator: ",") + "]"
    }

    func assertStorage(_ error: StoreError?, mentions words: [String], file: StaticString = #filePath, line: UInt = #line) {
        guard let error else { return }
        for word in words {
            XCTAssertTrue(error.message.lowercased().contains(word), "the message should say '\(word)': \(error.message)", file: file, line: line)
        }
    }

    // MARK: disk full

    // Open, upsert and register on a full disk: STORAGE saying the disk is full, the store as it
    // was (every entry of a rejected batch or none), and the same calls succeed once space is back.
    func testDiskFullOpenAndUpsert() throws {
        let disk = try SmallDisk(under: root)
        let registry = StoreRegistry()
        var handle = try registry.open(root: disk.path, config: config)
        var store = try registry.store(handle)
        try store.registerSoup("contacts", specsJSON: specs)
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON((0..<20).map { "before\($0)" }, local: false))
        try disk.fill()

        let batch = entriesJSON((0..<200).map { "full\($0)" }, local: false)
        let before = try rawDump(store.path)
        assertStorage(assertStoreError(.storage) { try store.upsert(soup: "contacts", entriesJSON: batch) }, mentions: ["full", "free"])
        assertStorage(assertStoreError(.storage) { try store.registerSoup("other", specsJSON: specs) }, mentions: ["full"])
        XCTAssertEqual(try rawDump(store.path), before, "a rejected write changed the file")
        XCTAssertEqual(try count(store, "contacts"), 20)
        XCTAssertFalse(store.soupExists("other"))

        // A new store cannot be created on the full disk; nothing half made is left in its way.
        let other = try StoreConfig(name: "second")
        assertStorage(assertStoreError(.storage) { try registry.open(root: disk.path, config: other) }, mentions: ["full"])

        disk.free()
        _ = try store.upsert(soup: "contacts", entriesJSON: batch)
        XCTAssertEqual(try count(store, "contacts"), 220)
        try registry.close(handle)
        let second = try registry.open(root: disk.path, config: other)
        try registry.store(second).registerSoup("s", specsJSON: specs)
        try registry.close(second)

        // A closed store opened on a full disk: a working store, or STORAGE saying the disk is
        // full; never a damaged one.
        try disk.fill()
        do {
            try registry.close(try registry.open(root: disk.path, config: config))
        } catch let error as StoreError {
            XCTAssertEqual(error.code, .storage, error.message)
            assertStorage(error, mentions: ["full"])
        }
        disk.free()
        handle = try registry.open(root: disk.path, config: config)
        store = try registry.store(handle)
        XCTAssertEqual(try count(store, "contacts"), 220)
        XCTAssertEqual(try integrityCheck(store.path), "ok")
        try registry.close(handle)
    }

    // The same on an encrypted store (its codec sits between SQLite and the disk, and caches
    // pages): STORAGE saying the disk is full, nothing half written, every page still passes
    // its HMAC check once space is back and the store is opened again.
    func testDiskFullEncryptedStore() throws {
        let disk = try SmallDisk(under: root)
        let registry = StoreRegistry()
        let encrypted = try StoreConfig(name: "secret", key: StoreKey("x'\(String(repeating: "ab", count: 32))'"))
        var handle = try registry.open(root: disk.path, config: encrypted)
        var store = try registry.store(handle)
        try store.registerSoup("contacts", specsJSON: specs)
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON((0..<50).map { "kept\($0)" }, local: false))
        let all = #"{"queryType":"range","pageSize":1000}"#
        let before = try jsonText(try CursorPage(store.querySoup("contacts", specJSON: all)).items)
        try disk.fill()
        for _ in 0..<3 {
            let batch = entriesJSON((0..<300).map { "lost\($0)" }, local: false)
            assertStorage(assertStoreError(.storage) { try store.upsert(soup: "contacts", entriesJSON: batch) }, mentions: ["full"])
        }
        XCTAssertEqual(try jsonText(try CursorPage(store.querySoup("contacts", specJSON: all)).items), before)
        disk.free()
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON(["after"], local: false))
        try registry.close(handle)
        handle = try registry.open(root: disk.path, config: encrypted)
        store = try registry.store(handle)
        XCTAssertEqual(try count(store, "contacts"), 51)
        XCTAssertEqual(try count(store, "contacts", "{contacts:LastName} LIKE 'lost%'"), 0)
        try registry.close(handle)
    }

    // A sync down whose disk fills after its first page: the run ends FAILED (STORAGE) in the
    // callback, in wait and in the status alike; the first page is stored whole and the second
    // not at all; with space back the next run brings the rest, each record once.
    func testDiskFullDuringSyncDown() throws {
        let disk = try SmallDisk(under: root)
        let server = try DevServerProcess(["--seed", "Contact=600"])
        let registry = StoreRegistry()
        let handle = try registry.open(root: disk.path, config: config)
        let store = try registry.store(handle)
        try store.registerSoup("contacts", specsJSON: specs)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let log = StateLog()
        let filled = Flag()
        // The writer takes every page already fetched into one transaction, so the first one
        // reported may hold one page or two: what was stored when the disk filled.
        let storedAtFill = Counter()
        let id = try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact","maxBatchSize":200}"#,
                                      soupName: "contacts", optionsJSON: nil, name: "down", callback: { text in
            log.callback(text)
            // After the first pages are stored: fill the disk before the next ones are written.
            if text.contains(#""status":"RUNNING""#), !text.contains(#""progress":0,"#), filled.setOnce() {
                storedAtFill.set(Int((try? store.entryCounts(soup: "contacts").entries) ?? -1))
                try? disk.fill()
            }
        })
        let waited = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertTrue(filled.isSet, "the run never reported its first page")
        XCTAssertEqual(log.statuses.last, "FAILED")
        XCTAssertEqual(log.all.last?["errorCode"] as? Int, Int(ErrorCode.storage.rawValue))
        XCTAssertEqual(waited.status, .failed, "wait returned a state the run no longer has")
        XCTAssertEqual(waited.errorCode, ErrorCode.storage.rawValue, waited.error)
        XCTAssertTrue(waited.error.lowercased().contains("full"), waited.error)
        XCTAssertEqual(try manager.status(id: id)?.status, .failed)
        let stored = storedAtFill.value
        XCTAssertTrue([200, 400].contains(stored), "pages are stored whole or not at all: \(stored)")
        XCTAssertEqual(try count(store, "contacts"), stored, "nothing is stored once the disk is full")

        disk.free()
        try manager.reSync(id: id, callback: nil)
        let again = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(again.status, .done, again.error)
        XCTAssertEqual(try count(store, "contacts"), 600)
        try registry.close(handle)
    }

    // A sync up whose disk fills as it finishes. Its terminal callback said
    // FAILED (STORAGE) while wait and the status said RUNNING until the next run. Now all three
    // say FAILED; the state is saved at close once space is back, or, if the process ends
    // first, the next open makes it STOPPED and restart_syncs runs it again.
    func testDiskFullWhileASyncUpFinishes() throws {
        let disk = try SmallDisk(under: root)
        let server = try DevServerProcess([])
        let registry = StoreRegistry()
        var handle = try registry.open(root: disk.path, config: config)
        var store = try registry.store(handle)
        try store.registerSoup("contacts", specsJSON: specs)
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON((0..<5).map { "Up\($0)" }, local: true))
        var manager = try store.syncManager()
        manager.setRemote(server.remote)

        func runFillingTheDiskAtTheEnd(_ start: (@escaping SyncCallback) throws -> Int64) throws -> (Int64, [[String: Any]]) {
            let log = StateLog()
            let filled = Flag()
            let id = try start { text in
                log.callback(text)
                // Every record is pushed and stored clean: only the run's end is left to save.
                if text.contains(#""status":"RUNNING""#), text.contains(#""progress":100,"#), filled.setOnce() { try? disk.fill() }
            }
            _ = try manager.wait(id: id, timeoutMs: 60_000)
            XCTAssertTrue(filled.isSet, "the run never reported progress 100")
            return (id, log.all)
        }

        let (id, callbacks) = try runFillingTheDiskAtTheEnd { callback in
            try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: callback)
        }
        XCTAssertEqual(callbacks.last?["status"] as? String, "FAILED")
        XCTAssertEqual(callbacks.last?["errorCode"] as? Int, Int(ErrorCode.storage.rawValue))
        for state in [try manager.wait(id: id, timeoutMs: 1000), try manager.status(id: id), try manager.status(name: "up")] {
            XCTAssertEqual(state?.status, .failed, "a host polling the sync must learn that the run ended")
            XCTAssertEqual(state?.errorCode, ErrorCode.storage.rawValue)
            XCTAssertEqual(state?.error, callbacks.last?["error"] as? String)
        }
        XCTAssertEqual(try manager.restart(restartStopped: true, callback: nil), [], "a failed run is not a stopped one")
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Up%'"), 5)

        // Space back before the store closes: the close saves the terminal state.
        disk.free()
        try registry.close(handle)
        handle = try registry.open(root: disk.path, config: config)
        store = try registry.store(handle)
        XCTAssertEqual(try SyncStateStore.all(in: store).first?.status, .failed, "the saved state is the terminal one")

        // Space back only after the process is gone (simulated: closed on a full disk).
        manager = try store.syncManager()
        manager.setRemote(server.remote)
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON(["Up5"], local: true))
        _ = try runFillingTheDiskAtTheEnd { callback in try manager.reSync(id: id, callback: callback); return id }
        XCTAssertEqual(try manager.status(id: id)?.status, .failed)
        try registry.close(handle)
        disk.free()
        handle = try registry.open(root: disk.path, config: config)
        store = try registry.store(handle)
        manager = try store.syncManager()
        manager.setRemote(server.remote)
        XCTAssertEqual(try manager.status(id: id)?.status, .stopped, "a run whose end was never saved is resumable")
        XCTAssertEqual(try manager.restart(restartStopped: true, callback: nil), [id])
        let resumed = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(resumed.status, .done, resumed.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Up%'"), 6, "a record was sent twice")
        XCTAssertEqual(try count(store, "contacts", "{contacts:__local__} = 'true'"), 0)
        try registry.close(handle)
    }

    // A sync up on a full disk from its start: FAILED (STORAGE) everywhere, nothing sent (the
    // engine marks a create before it sends it, and that mark could not be written).
    func testDiskFullBeforeASyncUpSendsAnything() throws {
        let disk = try SmallDisk(under: root)
        let server = try DevServerProcess([])
        let registry = StoreRegistry()
        let handle = try registry.open(root: disk.path, config: config)
        let store = try registry.store(handle)
        try store.registerSoup("contacts", specsJSON: specs)
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON(["Early0", "Early1"], local: true))
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let id = try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: #"{"fieldlist":["LastName"]}"#, name: "up", callback: { text in
            if text.contains(#""status":"RUNNING""#) { try? disk.fill() }
        })
        let state = try manager.wait(id: id, timeoutMs: 60_000)
        XCTAssertEqual(state.status, .failed)
        XCTAssertEqual(state.errorCode, ErrorCode.storage.rawValue, state.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Early%'"), 0)
        XCTAssertEqual(try count(store, "contacts", "{contacts:__local__} = 'true'"), 2)
        // Starting a run needs its RUNNING state saved: on the full disk nothing is queued.
        assertStorage(assertStoreError(.storage) { try manager.reSync(id: id, callback: nil) }, mentions: ["full"])
        assertStorage(assertStoreError(.storage) {
            try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: nil, name: "second", callback: nil)
        }, mentions: ["full"])
        XCTAssertNil(try manager.status(name: "second"))

        disk.free()
        try manager.reSync(id: id, callback: nil)
        XCTAssertEqual(try manager.wait(id: id, timeoutMs: 60_000).status, .done)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName LIKE 'Early%'"), 2)
        try registry.close(handle)
    }

    // MARK: read-only media

    /// A small disk holding a closed store with 3 entries: the disk, the registry, the store's
    /// path and its bytes.
    func closedStoreOnSmallDisk() throws -> (SmallDisk, StoreRegistry, String, Data) {
        let disk = try SmallDisk(under: root)
        let registry = StoreRegistry()
        let handle = try registry.open(root: disk.path, config: config)
        let path = try registry.store(handle).path
        try registry.store(handle).registerSoup("contacts", specsJSON: specs)
        _ = try registry.store(handle).upsert(soup: "contacts", entriesJSON: entriesJSON(["a", "b", "c"], local: false))
        try registry.close(handle)
        return (disk, registry, path, try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    // A store on media mounted read-only: opening it is STORAGE saying so, and the file is not
    // touched; writable again, it opens with every entry. A new store under a read-only root
    // cannot be created either. (Root ignores directory permissions, so a read-only mount is
    // the way to make a directory read-only for this test; and Linux refuses to remount a file
    // system read-only while a file on it is open for writing, so media cannot turn read-only
    // under an open store: writes of an open store meet a full disk, not read-only media.)
    func testReadOnlyMedia() throws {
        let (disk, registry, path, bytes) = try closedStoreOnSmallDisk()

        try disk.setReadOnly(true)
        defer { try? disk.setReadOnly(false) }
        assertStorage(assertStoreError(.storage) { try registry.open(root: disk.path, config: config) }, mentions: ["read-only"])
        assertStorage(assertStoreError(.storage) { try registry.open(root: disk.path + "/new-root", config: config) }, mentions: ["read-only"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes)
        XCTAssertFalse(registry.isOpen(path: path))

        try disk.setReadOnly(false)
        let again = try registry.open(root: disk.path, config: config)
        XCTAssertEqual(try count(try registry.store(again), "contacts"), 3)
        try registry.close(again)
    }

    // "readOnly": true reads a store on read-only media (its directory cannot take a -wal or
    // -shm: SQLite's immutable open) and refuses every write with STATE naming the file; the
    // file is not touched.
    func testReadOnlyOpenReadsAStoreOnReadOnlyMedia() throws {
        let (disk, registry, path, bytes) = try closedStoreOnSmallDisk()

        try disk.setReadOnly(true)
        defer { try? disk.setReadOnly(false) }
        let readOnly = try StoreConfig(name: config.name, readOnly: true)
        let reader = try registry.open(root: disk.path, config: readOnly)
        let store = try registry.store(reader)
        XCTAssertEqual(try count(store, "contacts"), 3)
        XCTAssertEqual(store.soupNames, ["contacts"])
        XCTAssertEqual(try store.entryCounts(soup: "contacts").entries, 3)
        let refused = assertStoreError(.state) { try store.upsert(soup: "contacts", entriesJSON: entriesJSON(["d"], local: false)) }
        XCTAssertTrue(refused?.message.contains(path) ?? false, refused?.message ?? "")
        XCTAssertTrue(refused?.message.contains("read-only") ?? false, refused?.message ?? "")
        try registry.close(reader)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    func integrityCheck(_ path: String) throws -> String {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else { throw TestFailure("open \(path)") }
        defer { sqlite3_close_v2(db) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return "no answer" }
        return String(cString: text)
    }

    // MARK: damaged pages (plaintext; an encrypted store's damaged page is in EncryptionTests)

    /// Overwrites the b-tree page header of the soup's table root page in the closed store file.
    func damageSoupPage(_ path: String, table: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else { throw TestFailure("open \(path)") }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master WHERE name = ?", -1, &statement, nil)
        sqlite3_bind_text(statement, 1, table, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        guard sqlite3_step(statement) == SQLITE_ROW else { throw TestFailure("no table \(table)") }
        let page = Int(sqlite3_column_int64(statement, 0)), size = Int(sqlite3_column_int64(statement, 1))
        sqlite3_finalize(statement)
        sqlite3_close_v2(db)
        let fd = open(path, O_WRONLY)
        defer { close(fd) }
        let garbage = [UInt8](repeating: 0xEE, count: 64)
        guard pwrite(fd, garbage, garbage.count, off_t((page - 1) * size)) == garbage.count else { throw TestFailure("pwrite") }
    }

    // A damaged page of one soup: reads, writes, a sync down and a sync up of that soup are
    // STORAGE saying the file is damaged, nothing is committed, and the other soups work on.
    func testDamagedSoupPage() throws {
        let server = try DevServerProcess(["--seed", "Contact=50"])
        let registry = StoreRegistry()
        var handle = try registry.open(root: root, config: config)
        var store = try registry.store(handle)
        try store.registerSoup("contacts", specsJSON: specs)
        try store.registerSoup("healthy", specsJSON: specs)
        _ = try store.upsert(soup: "contacts", entriesJSON: entriesJSON(["Local0"], local: true))
        _ = try store.upsert(soup: "healthy", entriesJSON: entriesJSON(["h1", "h2"], local: false))
        let table = try XCTUnwrap(store.soup("contacts")?.table)
        let path = store.path
        try registry.close(handle)
        try damageSoupPage(path, table: table)

        handle = try registry.open(root: root, config: config)
        store = try registry.store(handle)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        XCTAssertEqual(try count(store, "healthy"), 2)
        let all = #"{"queryType":"range","pageSize":100}"#
        let healthy = try jsonText(try CursorPage(store.querySoup("healthy", specJSON: all)).items)
        assertStorage(assertStoreError(.storage) { try store.querySoup("contacts", specJSON: all) }, mentions: ["damaged"])
        assertStorage(assertStoreError(.storage) { try store.upsert(soup: "contacts", entriesJSON: entriesJSON(["x"], local: false)) }, mentions: ["damaged"])
        let down = try manager.wait(id: try manager.syncDown(targetJSON: #"{"type":"soql","query":"SELECT LastName FROM Contact"}"#,
                                                             soupName: "contacts", optionsJSON: nil, name: "down", callback: nil), timeoutMs: 60_000)
        XCTAssertEqual(down.status, .failed)
        XCTAssertEqual(down.errorCode, ErrorCode.storage.rawValue, down.error)
        let up = try manager.wait(id: try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: nil, name: "up", callback: nil), timeoutMs: 60_000)
        XCTAssertEqual(up.status, .failed)
        XCTAssertEqual(up.errorCode, ErrorCode.storage.rawValue, up.error)
        XCTAssertEqual(try server.count("SELECT Id FROM Contact WHERE LastName = 'Local0'"), 0)
        XCTAssertEqual(try jsonText(try CursorPage(store.querySoup("healthy", specJSON: all)).items), healthy, "a failed sync changed another soup")
        _ = try store.upsert(soup: "healthy", entriesJSON: entriesJSON(["h3"], local: false))
        XCTAssertEqual(try count(store, "healthy"), 3)
        try registry.close(handle)
    }

    // A damaged first page (the file header): opening is STORAGE saying the file is not a
    // store or is damaged, and the file is left as it was.
    func testDamagedHeaderPage() throws {
        let registry = StoreRegistry()
        let handle = try registry.open(root: root, config: config)
        let path = try registry.store(handle).path
        try registry.store(handle).registerSoup("contacts", specsJSON: specs)
        try registry.close(handle)
        let fd = open(path, O_WRONLY)
        let garbage = [UInt8](repeating: 0xEE, count: 100)
        XCTAssertEqual(pwrite(fd, garbage, 100, 0), 100)
        close(fd)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        assertStorage(assertStoreError(.storage) { try registry.open(root: root, config: config) }, mentions: ["not a database"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes)
    }
}

extension Flag {
    /// Sets the flag; true for the caller that set it.
    func setOnce() -> Bool {
        if isSet { return false }
        set()
        return true
    }
}

/// A number one thread sets and another reads.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = -1
    func set(_ value: Int) { lock.lock(); stored = value; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return stored }
}
