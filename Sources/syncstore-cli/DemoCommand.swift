import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// `demo`: offline sync end to end against a dev server it starts and stops itself.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Offline sync end to end: sync down, go offline, edit, come back, sync up with a conflict, sync down, clean ghosts, encrypt the store.",
        discussion: """
        Starts the dev server on a free loopback port with seeded Contacts, makes a store in a \
        temporary directory from the userstore.json and usersyncs.json it ships (written \
        there), and walks through what an offline app does; at the end it encrypts the store \
        with a random key (written to demo.key there, never printed) and shows the file holds \
        no plaintext and opens only with that key. Everything is removed at the end unless \
        --keep is given.

        Examples:
          syncstore-cli demo
          syncstore-cli demo --records 20000 --keep
        """)

    @Option(help: "Contacts the server starts with.") var records = 10000
    @Flag(help: "Keep the temporary directory (stores, configs, server database) and print its path.") var keep = false

    func validate() throws {
        guard (10...1_000_000).contains(records) else { throw ValidationError("--records must be 10...1000000") }
    }

    func run() throws {
        let started = Date()
        let dir = NSTemporaryDirectory() + "syncstore-demo-" + ServeCommand.randomToken().prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let server = DemoServer(database: dir + "/server.db", token: ServeCommand.randomToken())
        let keyFile = dir + "/demo.key"
        let storePath = StoreRegistry.path(root: dir, config: try StoreConfig(name: "demo"))
        defer {
            server.stop()
            if keep {
                Console.out("\nKept \(dir) (stores under user/, the server's database server.db).")
                let encrypted = FileManager.default.fileExists(atPath: storePath) && !KeySource.isPlainSQLite(storePath)
                if encrypted {
                    Console.out("The demo store is encrypted: syncstore-cli soups --root \(dir) --store demo --key-file \(keyFile)")
                }
                Console.out("Look into it in a browser: syncstore-cli inspect --root \(dir) --store demo\(encrypted ? " --key-file \(keyFile)" : "") --open")
            } else {
                try? FileManager.default.removeItem(atPath: dir)
            }
        }
        // A random 256-bit key (raw, so no PBKDF2 to wait for), in a file only this user can
        // read; the demo never prints it.
        let key = DemoTour.randomRawKey()
        guard FileManager.default.createFile(atPath: keyFile, contents: Data((key + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CLIError("Cannot write the demo key file \(keyFile)", exitCode: 74)
        }
        var tour = DemoTour(dir: dir, server: server, records: records, key: try StoreKey(key))
        try tour.run()
        tour.summary(seconds: Date().timeIntervalSince(started))
    }
}

/// The dev server as a child process (this executable's `serve`), so going offline really
/// closes the port.
final class DemoServer {
    let database: String
    let token: String
    private var process: Process?
    private(set) var url = ""

    init(database: String, token: String) {
        self.database = database
        self.token = token
    }

    func start(seed: String?) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        var arguments = ["serve", "--port", "0", "--token", token, "--db", database]
        if let seed { arguments += ["--seed", seed] }
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        // The first line is the URL.
        var line = [UInt8]()
        let handle = pipe.fileHandleForReading
        while true {
            let byte = handle.readData(ofLength: 1)
            guard let b = byte.first else { throw CLIError("The dev server exited before it listened") }
            if b == UInt8(ascii: "\n") { break }
            line.append(b)
        }
        url = String(decoding: line, as: UTF8.self)
        // Keep draining its announcement so it never blocks on a full pipe.
        DispatchQueue.global().async { _ = handle.readDataToEndOfFile() }
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    var remote: RemoteConfig { RemoteConfig(instanceURL: url, accessToken: token) }
}

/// The steps of the demo, and what they counted.
struct DemoTour {
    let dir: String
    let server: DemoServer
    let records: Int
    let key: StoreKey
    var down = 0
    var up = 0
    var conflicts = 0
    var ghosts = 0

    init(dir: String, server: DemoServer, records: Int, key: StoreKey) {
        self.dir = dir
        self.server = server
        self.records = records
        self.key = key
    }

    static let fields = ["FirstName", "LastName", "Email", "Title"]

    static let userStore = """
    {"soups": [{"soupName": "contacts", "indexes": [
      {"path": "Id", "type": "string"},
      {"path": "LastName", "type": "string"},
      {"path": "Email", "type": "string"},
      {"path": "__local__", "type": "string"}
    ]}]}
    """

    static let userSyncs = """
    {"syncs": [
      {"syncName": "contacts-down", "syncType": "syncDown", "soupName": "contacts",
       "target": {"type": "soql", "query": "SELECT Id, FirstName, LastName, Email, Title, LastModifiedDate FROM Contact"},
       "options": {"mergeMode": "LEAVE_IF_CHANGED"}},
      {"syncName": "contacts-up", "syncType": "syncUp", "soupName": "contacts",
       "target": {"createFieldlist": ["FirstName", "LastName", "Email", "Title"], "updateFieldlist": ["FirstName", "LastName", "Email", "Title"]},
       "options": {"fieldlist": ["FirstName", "LastName", "Email", "Title"], "mergeMode": "LEAVE_IF_CHANGED"}}
    ]}
    """

    private func step(_ n: Int, _ title: String) {
        Console.out("\n\(n). \(title)")
    }

    mutating func run() throws {
        Console.out("SyncStore demo: an offline app's store syncing with a Salesforce REST API (the local dev server)")

        step(1, "Server")
        try server.start(seed: "Contact=\(records)")
        Console.out("   dev server at \(server.url) with \(records) Contacts")

        step(2, "Store")
        try DemoTour.userStore.write(toFile: dir + "/userstore.json", atomically: true, encoding: .utf8)
        try DemoTour.userSyncs.write(toFile: dir + "/usersyncs.json", atomically: true, encoding: .utf8)
        let opened = try OpenedStore(root: dir, config: try StoreConfig(name: "demo"))
        defer { opened.close() }
        let store = opened.store
        try store.loadStoreConfig(path: dir + "/userstore.json")
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        try manager.loadSyncConfig(path: dir + "/usersyncs.json")
        Console.out("   \(StoreRegistry.path(root: dir, config: try StoreConfig(name: "demo")))")
        Console.out("   soup 'contacts' from userstore.json; syncs 'contacts-down' and 'contacts-up' from usersyncs.json")

        step(3, "Sync down (contacts-down)")
        let first = try SyncProgress.run(manager, label: "   contacts-down", json: false) { try manager.reSync(name: "contacts-down", callback: $0) }
        try expect(first, "the first sync down")
        down += Int(max(first.totalSize, 0))
        Console.out("   \(first.totalSize) records stored; \(try store.entryCounts(soup: "contacts").entries) entries in the soup")

        step(4, "Offline")
        server.stop()
        Console.out("   server stopped: from here on, every change is local")

        let picked = try pick(store, count: 4)
        guard picked.count == 4 else { throw CLIError("The demo needs at least 4 synced records") }
        let (conflicted, edited, deleted, ghost) = (picked[0], picked[1], picked[2], picked[3])
        step(5, "Local changes while offline")
        var changes: [JSONDocument] = []
        for (i, name) in ["Okafor", "Lindqvist", "Tanaka"].enumerated() {
            changes.append(try JSONDocument.parse(#"{"attributes":{"type":"Contact"},"FirstName":"New","LastName":"\#(name)","Email":"new\#(i + 1)@example.com","Title":"Created offline","__local__":true,"__locally_created__":true,"__locally_updated__":false,"__locally_deleted__":false}"#))
        }
        for (entry, title) in [(conflicted, "Edited offline (and by a colleague)"), (edited, "Edited offline")] {
            entry.root.set("Title", owned: JSONMake.string(title))
            entry.root.set("__local__", owned: JSONMake.bool(true))
            entry.root.set("__locally_updated__", owned: JSONMake.bool(true))
            changes.append(entry)
        }
        deleted.root.set("__local__", owned: JSONMake.bool(true))
        deleted.root.set("__locally_deleted__", owned: JSONMake.bool(true))
        changes.append(deleted)
        let list = JSONDocument.array()
        for change in changes { list.root.append(owned: change.root.retained()) }
        _ = try store.upsert(soup: "contacts", entriesJSON: list.root.dump())
        Console.out("   created 3, edited 2, deleted 1; the soup now has \(try store.entryCounts(soup: "contacts").dirty) dirty entries:")
        let dirty = try store.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select {contacts:_soup} from {contacts} where {contacts:__local__} in ('1', 'true') order by {contacts:_soupEntryId}","pageSize":20}"#)
        let dirtyRows = try JSONDocument.parse(dirty.string)
        var table = Table(["entry", "Id", "Name", "Title", "change"])
        for row in dirtyRows.root["currentPageOrderedEntries"]?.elements ?? [] {
            guard let e = row[0] else { continue }
            let change = isSet(e["__locally_deleted__"]) ? "deleted" : isSet(e["__locally_created__"]) ? "created" : "updated"
            table.add([cellText(e["_soupEntryId"]), cellText(e["Id"]), "\(cellText(e["FirstName"])) \(cellText(e["LastName"]))",
                       cellText(e["Title"]), change])
        }
        Console.out(indent(table.render()))

        step(6, "Back online")
        try server.start(seed: nil)
        manager.setRemote(server.remote)
        Console.out("   server restarted at \(server.url)")
        try colleague(edits: conflicted, deletes: ghost)
        Console.out("   meanwhile a colleague's device changed the server: edited \(name(conflicted)) and deleted \(name(ghost))")

        step(7, "Sync up (contacts-up, LEAVE_IF_CHANGED)")
        let dirtyBefore = try store.entryCounts(soup: "contacts").dirty
        let pushed = try SyncProgress.run(manager, label: "   contacts-up", json: false) { try manager.reSync(name: "contacts-up", callback: $0) }
        let dirtyAfter = try store.entryCounts(soup: "contacts").dirty
        up += Int(dirtyBefore - dirtyAfter)
        conflicts += pushed.conflicts
        Console.out("   \(pushed.status.rawValue): \(dirtyBefore - dirtyAfter) of \(dirtyBefore) changes sent, \(pushed.conflicts) conflict")
        for id in pushed.conflictEntryIds {
            let text = try store.retrieve(soup: "contacts", ids: [id])
            if let entry = try JSONDocument.parse(text.string).root[0] {
                Console.out("   conflict on entry \(id) (\(cellText(entry["FirstName"])) \(cellText(entry["LastName"]))): kept locally, still dirty; __last_error__:")
                Console.out("     \(cellText(entry["__last_error__"], limit: 160))")
            }
        }
        guard pushed.status == .done else { throw CLIError("The sync up ended \(pushed.status.rawValue): \(pushed.error)") }

        step(8, "Sync down again (contacts-down, incremental)")
        let second = try SyncProgress.run(manager, label: "   contacts-down", json: false) { try manager.reSync(name: "contacts-down", callback: $0) }
        try expect(second, "the incremental sync down")
        down += Int(max(second.totalSize, 0))
        Console.out("   \(second.totalSize) records changed since the last sync; the conflicting entry keeps its local change (LEAVE_IF_CHANGED)")

        step(9, "Clean ghosts (cleanResyncGhosts on contacts-down)")
        guard let downState = try manager.status(name: "contacts-down") else { throw CLIError("contacts-down is gone") }
        let report = try GhostsCommand.clean(manager, id: downState.id)
        ghosts = Int(report.root["removed"]?.int64 ?? 0)
        Console.out("   \(report.root["status"]?.string ?? ""): removed \(ghosts) local record\(ghosts == 1 ? "" : "s") the server no longer has (\(name(ghost)))")

        step(10, "Encryption at rest (syncstore-cli rekey)")
        try encrypt(store)
    }

    /// Encrypts the open store, then shows that its file holds no plaintext and that it opens
    /// only with the key (each open from its own registry, as another process would).
    private func encrypt(_ store: SmartStore) throws {
        let path = StoreRegistry.path(root: dir, config: try StoreConfig(name: "demo"))
        let marker = "Okafor"   // a contact created offline, synced up and down
        let before = DemoTour.occurrences(of: marker, inStore: path)
        let countsBefore = try store.entryCounts(soup: "contacts")
        let started = Date()
        try store.changeKey(to: key)
        let seconds = Date().timeIntervalSince(started)
        let after = DemoTour.occurrences(of: marker, inStore: path)
        Console.out("   encrypted demo.db with a random 256-bit key (in demo.key; SQLCipher 4 format) in \(String(format: "%.2f", seconds)) s")
        Console.out("   '\(marker)' in the bytes of demo.db and its WAL: \(before) times before, \(after) after")
        guard after == 0 else { throw CLIError("The encrypted store file still holds '\(marker)' in plaintext") }
        for (what, config) in [("without the key", try StoreConfig(name: "demo")),
                               ("with another key", try StoreConfig(name: "demo", key: try StoreKey(DemoTour.randomRawKey())))] {
            do {
                _ = try OpenedStore(root: dir, config: config)
                throw CLIError("The encrypted store opened \(what)")
            } catch let error as StoreError where error.code == .auth {
                let reason = error.message.replacingOccurrences(of: path, with: "demo.db").prefix { $0 != ":" }
                Console.out("   opened \(what): AUTH (the CLI exits 77), \(reason)")
            }
        }
        let reopened = try OpenedStore(root: dir, config: try StoreConfig(name: "demo", key: key))
        defer { reopened.close() }
        let counts = try reopened.store.entryCounts(soup: "contacts")
        guard counts.entries == countsBefore.entries && counts.dirty == countsBefore.dirty else {
            throw CLIError("The encrypted store has \(counts.entries) entries (\(counts.dirty) dirty), not \(countsBefore.entries) (\(countsBefore.dirty))")
        }
        Console.out("   opened with the key: \(counts.entries) entries, \(counts.dirty) dirty, the same as before")
    }

    /// x'<64 hex digits>': a key used as is, without a KDF.
    static func randomRawKey() -> String {
        "x'" + ServeCommand.randomToken() + ServeCommand.randomToken() + "'"
    }

    /// How often `text` occurs in the bytes of a store's file and its WAL or journal.
    static func occurrences(of text: String, inStore path: String) -> Int {
        let needle = Array(text.utf8)
        var count = 0
        for file in [path, path + "-wal", path + "-journal"] {
            guard let data = FileManager.default.contents(atPath: file), data.count >= needle.count else { continue }
            data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
                var i = 0
                let last = bytes.count - needle.count
                while i <= last {
                    if bytes[i] == needle[0] && (1..<needle.count).allSatisfy({ bytes[i + $0] == needle[$0] }) { count += 1 }
                    i += 1
                }
            }
        }
        return count
    }

    func summary(seconds: Double) {
        Console.out("\nSummary")
        var table = Table(["records down", "records up", "conflicts", "ghosts removed", "seconds"])
        table.add([String(down), String(up), String(conflicts), String(ghosts), String(format: "%.1f", seconds)])
        Console.out(indent(table.render()))
    }

    private func expect(_ state: SyncState, _ what: String) throws {
        guard state.status == .done else { throw CLIError("\(what) ended \(state.status.rawValue): \(state.error)") }
    }

    /// Entries of synced records, spread over the soup.
    private func pick(_ store: SmartStore, count: Int) throws -> [JSONDocument] {
        let total = try store.entryCounts(soup: "contacts").entries
        let step = max(total / Int64(count + 1), 1)
        var picked: [JSONDocument] = []
        for i in 1...count {
            let text = try store.retrieve(soup: "contacts", ids: [Int64(i) * step])
            if let entry = try JSONDocument.parse(text.string).root[0], entry["Id"]?.string != nil, let copy = entry.retained() {
                picked.append(JSONDocument(owning: copy))
            }
        }
        return picked
    }

    /// A second store (another device) edits one record and deletes another on the server.
    private func colleague(edits: JSONDocument, deletes: JSONDocument) throws {
        guard let editId = edits.root["Id"]?.string, let deleteId = deletes.root["Id"]?.string else { return }
        let opened = try OpenedStore(root: dir, config: try StoreConfig(name: "colleague"))
        defer { opened.close() }
        let store = opened.store
        try store.loadStoreConfig(json: DemoTour.userStore)
        let manager = try store.syncManager()
        manager.setRemote(server.remote)
        let target = #"{"type":"soql","query":"SELECT Id, FirstName, LastName, Email, Title, LastModifiedDate FROM Contact WHERE Id IN ('\#(editId)', '\#(deleteId)')"}"#
        let fetched = try manager.wait(id: try manager.syncDown(targetJSON: target, soupName: "contacts", optionsJSON: nil, name: nil, callback: nil), timeoutMs: 60_000)
        try expect(fetched, "the colleague's sync down")
        let rows = try JSONDocument.parse(try store.runSmartQuery(specJSON: #"{"queryType":"smart","smartSql":"select {contacts:_soup} from {contacts}","pageSize":10}"#).string)
        let list = JSONDocument.array()
        for row in rows.root["currentPageOrderedEntries"]?.elements ?? [] {
            guard let e = row[0], let id = e["Id"]?.string else { continue }
            e.set("__local__", owned: JSONMake.bool(true))
            if id == editId {
                e.set("Title", owned: JSONMake.string("Edited by a colleague"))
                e.set("__locally_updated__", owned: JSONMake.bool(true))
            } else {
                e.set("__locally_deleted__", owned: JSONMake.bool(true))
            }
            list.root.append(owned: e.retained())
        }
        _ = try store.upsert(soup: "contacts", entriesJSON: list.root.dump())
        let options = #"{"fieldlist":["Title"],"mergeMode":"OVERWRITE"}"#
        let pushed = try manager.wait(id: try manager.syncUp(targetJSON: nil, soupName: "contacts", optionsJSON: options, name: nil, callback: nil), timeoutMs: 60_000)
        try expect(pushed, "the colleague's sync up")
    }

    private func name(_ entry: JSONDocument) -> String {
        "\(cellText(entry.root["FirstName"])) \(cellText(entry.root["LastName"]))"
    }

    private func isSet(_ value: JSON?) -> Bool {
        guard let value else { return false }
        return value.bool == true || value.string == "true" || value.string == "1" || value.int64 == 1
    }

    private func indent(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "   " + $0 }.joined(separator: "\n")
    }
}
