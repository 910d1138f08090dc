// docs/encryption.md — encrypted stores: the key in the store config, wrong and missing keys,
// change of key, damaged pages, no plaintext in any file.
import XCTest
import Foundation
import Glibc
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

final class EncryptionTests: StoreTestCase {
    private let canary = "CANARY-7f3e9a1c-plaintext-must-not-reach-disk"
    // A low iteration count keeps the tests fast; the format is the same.
    private func key(_ text: String) throws -> StoreKey { try StoreKey(text, kdfIter: 1000) }

    private func fill(_ store: SmartStore, count: Int = 500) throws {
        try store.registerSoup("contacts", specs: [IndexSpec(path: "Id", type: .string), IndexSpec(path: "Name", type: .fullText)])
        var entries: [String] = []
        for i in 0..<count { entries.append(#"{"Id": "\#(i)", "Name": "\#(canary) \#(i)"}"#) }
        _ = try store.upsert(soup: "contacts", entriesJSON: "[" + entries.joined(separator: ",") + "]")
    }

    private func smart(_ store: SmartStore, _ sql: String, pageSize: Int = 100) throws -> String {
        let spec = try jsonText(["queryType": "smart", "smartSql": sql, "pageSize": pageSize])
        return try store.queryPage(soup: nil, specJSON: spec, page: 0).string
    }

    private func count(_ store: SmartStore) throws -> Int {
        let text = try smart(store, "select count(*) from {contacts}")
        let rows = try parseJSON(text) as? [[Any]]
        return rows?.first?.first as? Int ?? -1
    }

    /// Every file under the root, and whether any holds `needle`.
    private func filesHolding(_ needle: String) throws -> [String] {
        var hits: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let name = enumerator?.nextObject() as? String {
            let path = "\(root)/\(name)"
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            if data.range(of: Data(needle.utf8)) != nil { hits.append(name) }
        }
        return hits
    }

    func testEncryptedStoreHoldsNoPlaintextAndReopensWithItsKey() throws {
        var store: SmartStore? = try SmartStore(path: dbPath, key: try key("s3cret"))
        try fill(store!)
        // Open with the WAL still holding pages: nothing readable in the db, -wal or -shm.
        XCTAssertEqual(try filesHolding(canary), [])
        XCTAssertEqual(try filesHolding("SQLite format 3"), [])
        store?.checkpointForClose()
        store = nil
        XCTAssertEqual(try filesHolding(canary), [])
        let again = try SmartStore(path: dbPath, key: try key("s3cret"))
        XCTAssertEqual(try count(again), 500)
        let found = try smart(again, "select {contacts:Id} from {contacts} where {contacts:Name} = '\(canary) 42'")
        XCTAssertTrue(found.contains("\"42\""), found)
    }

    func testWrongOrMissingKeyIsAuthAndLeavesTheFileAlone() throws {
        var store: SmartStore? = try SmartStore(path: dbPath, key: try key("right"))
        try fill(store!, count: 10)
        store?.checkpointForClose()
        store = nil
        let before = try Data(contentsOf: URL(fileURLWithPath: dbPath))
        for attempt in [try key("wrong"), try StoreKey("right", kdfIter: 999), nil] as [StoreKey?] {
            XCTAssertThrowsError(try SmartStore(path: dbPath, key: attempt)) { error in
                let e = error as? StoreError
                XCTAssertEqual(e?.code, .auth, "\(error)")
                XCTAssertFalse(e?.message.contains("right") ?? true, "the key must not appear in messages")
            }
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dbPath)), before)
        XCTAssertEqual(try count(try SmartStore(path: dbPath, key: try key("right"))), 10)
    }

    func testPlaintextStoreOpenedWithAKeyIsAuth() throws {
        var store: SmartStore? = try SmartStore(path: dbPath)
        try fill(store!, count: 3)
        store = nil
        XCTAssertThrowsError(try SmartStore(path: dbPath, key: try key("k"))) { error in
            XCTAssertEqual((error as? StoreError)?.code, .auth)
            XCTAssertTrue("\(error)".contains("not encrypted"), "\(error)")
        }
    }

    func testRawKeyOpensWithoutKdf() throws {
        let raw = "x'" + String(repeating: "0123456789abcdef", count: 4) + "'"
        var store: SmartStore? = try SmartStore(path: dbPath, key: try StoreKey(raw))
        try fill(store!, count: 5)
        store = nil
        XCTAssertEqual(try count(try SmartStore(path: dbPath, key: try StoreKey(raw))), 5)
    }

    func testChangeKeyEncryptsRekeysAndDecrypts() throws {
        let store = try SmartStore(path: dbPath)
        try fill(store, count: 300)
        XCTAssertFalse(try filesHolding(canary).isEmpty, "a plaintext store holds its text")
        try store.changeKey(to: try key("one"))
        XCTAssertTrue(store.isEncrypted)
        XCTAssertEqual(try count(store), 300)
        // The same object keeps writing, now to the encrypted file.
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"Id": "new", "Name": "\#(canary) new"}]"#)
        store.checkpointForClose()
        XCTAssertEqual(try filesHolding(canary), [])
        try store.changeKey(to: try key("two"))
        XCTAssertThrowsError(try SmartStore(path: dbPath, key: try key("one")))
        XCTAssertEqual(try count(try SmartStore(path: dbPath, key: try key("two"))), 301)
        try store.changeKey(to: nil)
        XCTAssertFalse(store.isEncrypted)
        XCTAssertEqual(try count(try SmartStore(path: dbPath)), 301)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dbPath + StoreRekey.suffix))
    }

    func testChangeKeyIsBusyWhileAnotherConnectionHasTheFile() throws {
        let store = try SmartStore(path: dbPath, key: try key("a"))
        try fill(store, count: 3)
        // A second SmartStore on the same file stands for another process.
        let other = try SmartStore(path: dbPath, key: try key("a"))
        XCTAssertEqual(try count(other), 3)
        XCTAssertThrowsError(try store.changeKey(to: try key("b"))) { error in
            XCTAssertEqual((error as? StoreError)?.code, .busy, "\(error)")
        }
        // Nothing changed and no lock is left behind: both still read and write with the old key,
        // and the file opens anew.
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"Id": "x"}]"#)
        XCTAssertEqual(try count(store), 4)
        XCTAssertEqual(try count(other), 4)
        XCTAssertEqual(try count(try SmartStore(path: dbPath, key: try key("a"))), 4)
        _ = try other.upsert(soup: "contacts", entriesJSON: #"[{"Id": "y"}]"#)
        XCTAssertEqual(try count(store), 5)
    }

    func testFlippedBitInAnyPageIsStorageNeverData() throws {
        var store: SmartStore? = try SmartStore(path: dbPath, key: try key("k"))
        try fill(store!, count: 2000)
        store?.checkpointForClose()
        store = nil
        let pristine = try Data(contentsOf: URL(fileURLWithPath: dbPath))
        let pages = pristine.count / 4096
        XCTAssertGreaterThan(pages, 10)
        for page in [0, 1, pages / 2, pages - 1] {
            var damaged = pristine
            damaged[page * 4096 + 1000] ^= 0x10
            try damaged.write(to: URL(fileURLWithPath: dbPath))
            do {
                let store = try SmartStore(path: dbPath, key: try key("k"))
                // Every page read: the whole b-tree of every table and index.
                try store.writer.execute("PRAGMA integrity_check")
                XCTFail("page \(page + 1): a flipped bit was read as data")
            } catch let error as StoreError {
                XCTAssertEqual(error.code, .storage, "page \(page + 1): \(error)")
                XCTAssertTrue(error.message.contains("integrity check"), "page \(page + 1): \(error)")
            }
        }
    }

    /// A crash between a WAL frame's header and its page leaves an image that fails the HMAC
    /// check at the end of the log: recovery must end the log there (the last transaction is
    /// lost, as without encryption), not fail. The same damage before other frames of the log is
    /// damage: STORAGE.
    func testTornLastWalFrameEndsTheLogButADamagedEarlierFrameIsStorage() throws {
        let store = try SmartStore(path: dbPath, key: try key("k"))
        try fill(store, count: 50)                       // first transactions
        _ = try store.upsert(soup: "contacts", entriesJSON: #"[{"Id": "last", "Name": "x"}]"#)
        XCTAssertEqual(try count(store), 51)
        // A crash now: the database file and its WAL as they are (the store stays open).
        let wal = try Data(contentsOf: URL(fileURLWithPath: dbPath + "-wal"))
        let db = try Data(contentsOf: URL(fileURLWithPath: dbPath))
        let frames = (wal.count - 32) / 4120
        XCTAssertGreaterThan(frames, 2)
        func crashCopy(_ name: String, damagingFrame frame: Int) throws -> String {
            let dir = "\(root)/\(name)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var damaged = wal
            damaged[32 + frame * 4120 + 24 + 500] ^= 0x01
            try db.write(to: URL(fileURLWithPath: "\(dir)/store.db"))
            try damaged.write(to: URL(fileURLWithPath: "\(dir)/store.db-wal"))
            return "\(dir)/store.db"
        }
        let torn = try SmartStore(path: try crashCopy("torn", damagingFrame: frames - 1), key: try key("k"))
        XCTAssertEqual(try count(torn), 50, "the last transaction (its commit frame torn) is gone, the rest is there")
        XCTAssertThrowsError(try SmartStore(path: try crashCopy("damaged", damagingFrame: 0), key: try key("k"))) { error in
            XCTAssertEqual((error as? StoreError)?.code, .storage, "\(error)")
        }
    }

    func testKeyNeverInDescriptions() throws {
        let config = try StoreConfig.parse(#"{"storeName": "s", "key": "hunter2-secret", "kdfIter": 4000}"#)
        XCTAssertEqual(config.key?.kdfIter, 4000)
        for text in ["\(config)", String(reflecting: config), "\(String(describing: config.key))"] {
            XCTAssertFalse(text.contains("hunter2"), text)
        }
        var dumped = ""
        dump(config, to: &dumped)
        XCTAssertFalse(dumped.contains("hunter2"), dumped)
        XCTAssertThrowsError(try StoreConfig.parse(#"{"key": ""}"#))
        XCTAssertThrowsError(try StoreConfig.parse(#"{"key": 12}"#))
        XCTAssertThrowsError(try StoreConfig.parse(#"{"key": "k", "kdfIter": 0}"#))
        XCTAssertNil(try StoreConfig.parse(#"{"key": null}"#).key)
        // A malformed raw key is a mistake, not a passphrase.
        for raw in ["x'abcd'", "x'" + String(repeating: "g", count: 64) + "'", "X'" + String(repeating: "0", count: 63) + "'"] {
            XCTAssertThrowsError(try StoreKey(raw)) { XCTAssertEqual(($0 as? StoreError)?.code, .argument) }
        }
        XCTAssertNoThrow(try StoreKey("X'" + String(repeating: "aB", count: 48) + "'"))
    }

    func testPlaintextStoreKeepsItsKdfIterForALaterChangeOfKey() throws {
        let registry = StoreRegistry()
        let handle = try registry.open(root: root, config: try StoreConfig.parse(#"{"storeName": "p", "kdfIter": 4000}"#))
        try fill(try registry.store(handle), count: 3)
        try registry.changeKey(handle, to: try StoreKey("pk", kdfIter: try registry.store(handle).kdfIter))
        try registry.close(handle)
        let path = StoreRegistry.path(root: root, config: try StoreConfig(name: "p"))
        XCTAssertThrowsError(try SmartStore(path: path, key: try StoreKey("pk")))
        XCTAssertEqual(try count(try SmartStore(path: path, key: try StoreKey("pk", kdfIter: 4000))), 3)
    }
}
