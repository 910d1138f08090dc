import Foundation
import Hummingbird
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// What one run of `inspect` was started with.
struct InspectorSettings: Sendable {
    let root: String
    let key: StoreKey?
    let kdfIter: Int?
    /// Random per run; every request carries it (query `token`, or header X-Inspector-Token).
    let token: String
    let allowWrites: Bool
    let initialStore: String
    let initialGlobal: Bool
    /// The server live sync started from the page talks to (`inspect --url --token`); nil: the
    /// page cannot start it.
    var remote: RemoteConfig? = nil
}

/// The stores the page looked at, opened once each. They are opened directly (not through the
/// registry), read-only unless writes are allowed: no sync engine, no sync lock, and no
/// "stop the orphaned syncs" pass, which would write sync states an app's runs own.
final class InspectorStores: @unchecked Sendable {
    private let settings: InspectorSettings
    private let lock = NSLock()
    private var open: [String: SmartStore] = [:]
    private var handles: [String: Int] = [:]

    init(_ settings: InspectorSettings) { self.settings = settings }

    func store(global: Bool, name: String) throws -> SmartStore {
        let config = try StoreConfig(isGlobal: global, name: name, key: settings.key, kdfIter: settings.kdfIter, readOnly: !settings.allowWrites)
        let path = StoreRegistry.path(root: settings.root, config: config)
        return try lock.withLock {
            if let store = open[path] { return store }
            guard FileManager.default.fileExists(atPath: path) else {
                throw StoreError(.notFound, "No \(global ? "global" : "user") store '\(name)' under \(settings.root) (no file \(path)); check --root and --store")
            }
            let store: SmartStore
            do {
                // Through the library's registry, as hosts open stores: the inspector's handle
                // shares the one SmartStore of the file with every other handle of the process.
                let handle = try StoreRegistry.shared.open(root: settings.root, config: config)
                store = try StoreRegistry.shared.store(handle)
                handles[path] = handle
            } catch let error as StoreError where error.code == .auth {
                throw StoreError(.auth, error.message + "; " + KeySource.hint(keySource: config.key == nil ? nil : "--key-file or $SYNCSTORE_KEY",
                                                                               kdfIter: config.kdfIter, path: path))
            }
            open[path] = store
            return store
        }
    }

    /// The handle the inspector opened `store` with (live sync started from the page is its).
    func handle(of store: SmartStore) -> Int? { lock.withLock { handles[store.path] } }

    func names(global: Bool) -> [String] {
        (try? StoreRegistry.shared.listStores(root: settings.root, global: global)) ?? []
    }
}

/// An answer of the JSON API.
struct InspectorReply {
    var status: HTTPResponse.Status = .ok
    var json: String

    static func error(_ status: HTTPResponse.Status, code: String, _ message: String) -> InspectorReply {
        let error = JSONDocument.object()
        error.root.set("code", owned: JSONMake.string(code))
        error.root.set("message", owned: JSONMake.string(message))
        let doc = JSONDocument.object()
        doc.root.set("error", owned: error.root.retained())
        return InspectorReply(status: status, json: doc.root.dump())
    }
}

/// The JSON API behind the page. Every call is a read on the store's reader connections (a
/// write only with --allow-writes), run off Swift's cooperative pool by the responder.
struct InspectorAPI: Sendable {
    let settings: InspectorSettings
    let stores: InspectorStores
    /// Rows per page at most: a page of a huge result stays a bounded answer.
    static let maxPageSize = 1000
    /// How long one Smart SQL step (the count, or one page) may run.
    static let timeLimitMs: Int64 = 5000

    typealias Params = [String: String]

    func handle(_ method: String, _ path: String, _ params: Params, body: [UInt8]) -> InspectorReply {
        do {
            switch (method, path) {
            case ("GET", "/api/stores"): return InspectorReply(json: storesJSON())
            case ("GET", "/api/facts"): return InspectorReply(json: try facts(try store(params)))
            case ("GET", "/api/soups"): return InspectorReply(json: try soups(try store(params)))
            case ("GET", "/api/query"): return InspectorReply(json: try query(try store(params), params))
            case ("GET", "/api/entries"): return InspectorReply(json: try entries(try store(params), params))
            case ("GET", "/api/syncs"): return InspectorReply(json: try syncsJSON(try store(params)))
            case ("GET", "/api/live"): return InspectorReply(json: liveJSON(try store(params)))
            case ("POST", "/api/live/start"), ("POST", "/api/live/stop"):
                let doc = try JSONDocument.parse(String(decoding: body, as: UTF8.self), what: "request body")
                var fields: Params = [:]
                for (key, value) in doc.root.members { fields[key] = value.string ?? (value.isNull ? nil : value.dump()) }
                let store = try self.store(fields)
                if path == "/api/live/stop" {
                    InspectorLive.shared.stop(store)
                } else {
                    guard settings.allowWrites else {
                        return .error(.forbidden, code: "READ_ONLY", "Live sync writes the store: start the inspector with --allow-writes (and --url, --token)")
                    }
                    guard let remote = settings.remote else {
                        return .error(.badRequest, code: "ARGUMENT", "Live sync needs a server: start the inspector with --url and --token")
                    }
                    guard let handle = stores.handle(of: store) else { throw StoreError(.state, "The store is not open") }
                    try InspectorLive.shared.start(store, owner: handle, remote: remote, optionsJSON: fields["options"])
                }
                return InspectorReply(json: liveJSON(store))
            case ("POST", "/api/upsert"), ("POST", "/api/delete"):
                guard settings.allowWrites else {
                    return .error(.forbidden, code: "READ_ONLY", "The inspector is read-only: start it with --allow-writes to change entries")
                }
                let doc = try JSONDocument.parse(String(decoding: body, as: UTF8.self), what: "request body")
                var fields: Params = [:]
                for (key, value) in doc.root.members { fields[key] = value.string ?? (value.isNull ? nil : value.dump()) }
                let store = try self.store(fields)
                guard let soup = fields["soup"] else { throw StoreError(.argument, "Say which soup: \"soup\"") }
                if path == "/api/upsert" {
                    return InspectorReply(json: try store.upsert(soup: soup, entriesJSON: fields["entry"] ?? "").string)
                }
                try store.removeEntries(soup: soup, idsJSON: fields["ids"] ?? "")
                return InspectorReply(json: "{\"removed\":true}")
            default:
                return .error(.notFound, code: "NOT_FOUND", "No \(method) \(path) here")
            }
        } catch let error as StoreError {
            return .error(error.code == .notFound ? .notFound : .badRequest, code: error.code.name, error.message)
        } catch let error as CLIError {
            return .error(.badRequest, code: error.code, error.message)
        } catch {
            return .error(.internalServerError, code: "INTERNAL", "\(error)")
        }
    }

    func store(_ params: Params) throws -> SmartStore {
        try stores.store(global: params["global"] == "1" || params["global"] == "true", name: params["store"] ?? settings.initialStore)
    }

    private func storesJSON() -> String {
        let doc = JSONDocument.object()
        for global in [false, true] {
            let list = JSONDocument.array()
            for name in stores.names(global: global) { list.root.append(owned: JSONMake.string(name)) }
            doc.root.set(global ? "global" : "user", owned: list.root.retained())
        }
        doc.root.set("initialStore", owned: JSONMake.string(settings.initialStore))
        doc.root.set("initialGlobal", owned: JSONMake.bool(settings.initialGlobal))
        doc.root.set("allowWrites", owned: JSONMake.bool(settings.allowWrites))
        doc.root.set("liveSyncRemote", owned: settings.remote.map { _ in JSONMake.bool(true) } ?? JSONMake.bool(false))
        doc.root.set("root", owned: JSONMake.string(settings.root))
        return doc.root.dump()
    }

    /// File sizes, versions, encryption (never the key).
    private func facts(_ store: SmartStore) throws -> String {
        func size(_ path: String) -> Int64 {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        let version = try JSONDocument.parse(try store.queryPage(soup: nil, specJSON: smartSpec("select sqlite_version()", pageSize: 1), page: 0).string)
        let doc = JSONDocument.object()
        doc.root.set("path", owned: JSONMake.string(store.path))
        doc.root.set("dbBytes", owned: JSONMake.int(size(store.path)))
        doc.root.set("walBytes", owned: JSONMake.int(size(store.path + "-wal")))
        doc.root.set("usedBytes", owned: JSONMake.int(try store.databaseSize()))
        doc.root.set("sqliteVersion", owned: JSONMake.string(version.root[0]?[0]?.string ?? "?"))
        doc.root.set("libraryVersion", owned: JSONMake.string(SyncStoreVersion.string))
        doc.root.set("encrypted", owned: JSONMake.bool(store.isEncrypted))
        if store.isEncrypted { doc.root.set("kdfIter", owned: JSONMake.int(Int64(store.kdfIter))) }
        doc.root.set("readOnly", owned: JSONMake.bool(store.readOnly))
        doc.root.set("soups", owned: JSONMake.int(Int64(store.soupNames.count)))
        return doc.root.dump()
    }

    private func soups(_ store: SmartStore) throws -> String {
        let list = JSONDocument.array()
        for name in store.soupNames {
            let counts = try store.entryCounts(soup: name)
            list.root.append(owned: SoupListCommand.soupJSON(name, entries: counts.entries, dirty: counts.dirty,
                                                             specs: try store.indexSpecs(name)).root.retained())
        }
        return list.root.dump()
    }

    private func smartSpec(_ sql: String, pageSize: Int) -> String {
        let spec = JSONDocument.object()
        spec.root.set("queryType", owned: JSONMake.string("smart"))
        spec.root.set("smartSql", owned: JSONMake.string(sql))
        spec.root.set("pageSize", owned: JSONMake.int(Int64(pageSize)))
        spec.root.set("timeoutMs", owned: JSONMake.int(InspectorAPI.timeLimitMs))
        return spec.root.dump()
    }

    private static func pageSize(_ params: Params) throws -> Int {
        guard let text = params["pageSize"] else { return 50 }
        guard let n = Int(text), n >= 1, n <= maxPageSize else {
            throw StoreError(.argument, "Page size must be from 1 to \(maxPageSize) (got '\(text)')")
        }
        return n
    }

    private static func pageIndex(_ params: Params) throws -> Int64 {
        guard let text = params["pageIndex"] else { return 0 }
        guard let n = Int64(text), n >= 0 else { throw StoreError(.argument, "Page index must be 0 or more (got '\(text)')") }
        return n
    }

    /// Smart SQL through the library's own path (read-only authorizer, time limit, cursor).
    private func query(_ store: SmartStore, _ params: Params) throws -> String {
        guard let sql = params["sql"], !sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw StoreError(.argument, "Write a Smart SQL query, e.g. select {soup:_soup} from {soup}")
        }
        let page = try cursorPage(store, first: try store.runSmartQuery(specJSON: smartSpec(sql, pageSize: try InspectorAPI.pageSize(params))),
                                  index: try InspectorAPI.pageIndex(params))
        let columns = JSONDocument.array()
        for column in selectedColumns(sql) { columns.root.append(owned: JSONMake.string(column)) }
        page.root.set("columns", owned: columns.root.retained())
        return page.root.dump()
    }

    /// Entries of a soup, paged; `path` + `value`: only those whose indexed path equals the value
    /// (or is LIKE it when it holds %).
    private func entries(_ store: SmartStore, _ params: Params) throws -> String {
        guard let soup = params["soup"], !soup.isEmpty else { throw StoreError(.argument, "Say which soup: soup=NAME") }
        let spec = JSONDocument.object()
        spec.root.set("pageSize", owned: JSONMake.int(Int64(try InspectorAPI.pageSize(params))))
        if let path = params["path"], !path.isEmpty, let value = params["value"] {
            let type = path == "_soupEntryId" || path == "_soupLastModifiedDate" ? .integer
                : try store.indexSpecs(soup).first { $0.path == path }?.type
            guard let type else {
                throw StoreError(.argument, "'\(path)' is not an indexed path of soup '\(soup)'; filter by one of its index specs or _soupEntryId")
            }
            spec.root.set("indexPath", owned: JSONMake.string(path))
            spec.root.set("orderPath", owned: JSONMake.string("_soupEntryId"))
            if value.contains("%") && (type == .string || type == .json1) {
                spec.root.set("queryType", owned: JSONMake.string("like"))
                spec.root.set("likeKey", owned: JSONMake.string(value))
            } else {
                spec.root.set("queryType", owned: JSONMake.string("exact"))
                switch type {
                case .integer:
                    guard let n = Int64(value) else { throw StoreError(.argument, "'\(path)' is an integer index: give a whole number (got '\(value)')") }
                    spec.root.set("matchKey", owned: JSONMake.int(n))
                case .floating:
                    guard let d = Double(value) else { throw StoreError(.argument, "'\(path)' is a floating index: give a number (got '\(value)')") }
                    spec.root.set("matchKey", owned: JSONMake.real(d))
                default:
                    // true/false: the local flags (__local__ ...) as a sync writes them.
                    spec.root.set("matchKey", owned: value == "true" || value == "false" ? JSONMake.bool(value == "true") : JSONMake.string(value))
                }
            }
        } else {
            spec.root.set("queryType", owned: JSONMake.string("range"))
            spec.root.set("indexPath", owned: JSONMake.string("_soupEntryId"))
        }
        return try cursorPage(store, first: try store.querySoup(soup, specJSON: spec.root.dump()),
                              index: try InspectorAPI.pageIndex(params)).root.dump()
    }

    /// The cursor's page `index` (its first page is `first`); the cursor is closed.
    private func cursorPage(_ store: SmartStore, first: TextBuffer, index: Int64) throws -> JSONDocument {
        var page = try JSONDocument.parse(first.string, what: "cursor")
        guard let id = page.root["cursorId"]?.int64 else { return page }
        defer { store.closeCursor(id) }
        if index > 0 { page = try JSONDocument.parse(try store.moveCursor(id, toPage: index).string, what: "cursor") }
        page.root.remove("cursorId")
        return page
    }

    /// The live sync state of the store in this process, as syncstore_get_live_sync_state()
    /// gives it ("stopped" when the page did not start it), with "names": the syncs' names.
    func liveJSON(_ store: SmartStore) -> String {
        let doc = (try? JSONDocument.parse(InspectorLive.shared.stateJSON(store))) ?? JSONDocument.object()
        let ids = doc.root["syncs"]?.elements ?? []
        let states = ids.isEmpty ? [] : (try? store.syncStates()) ?? []
        let names = JSONDocument.array()
        for id in ids {
            let state = states.first { $0.id == id.int64 }
            names.root.append(owned: JSONMake.string(state?.name ?? "sync \(id.int64 ?? 0)"))
        }
        doc.root.set("names", owned: names.root.retained())
        return doc.root.dump()
    }

    /// Every sync state, read from the syncs soup with a query (no sync engine is made).
    func syncsJSON(_ store: SmartStore) throws -> String {
        "[" + (try store.syncStates()).map(\.jsonText).joined(separator: ",") + "]"
    }
}

/// Live sync started from the page, per store: the sync engine is made only then (reading the
/// state of a store the page never started it on makes none).
final class InspectorLive: @unchecked Sendable {
    static let shared = InspectorLive()
    private struct Running {
        let manager: SyncManager
    }
    private let lock = NSLock()
    private var running: [String: Running] = [:]

    func start(_ store: SmartStore, owner: Int, remote: RemoteConfig, optionsJSON: String?) throws {
        let options = try LiveSync.Options.parse(optionsJSON)
        let manager = try store.syncManager()
        manager.setRemote(remote)
        // As `sync --live`, other processes' writes (an app beside the inspector) are pushed too.
        try manager.live.start(options, owner: owner) { _ in }
        let previous = lock.withLock { () -> Running? in
            defer { running[store.path] = Running(manager: manager) }
            return running[store.path]
        }
        if let previous { InspectorLive.end(previous, live: false) }
    }

    /// Forgotten only once stopped: until then the page reads the live state, not "stopped" (a
    /// start meanwhile would be refused as BUSY; the stop can take a moment, its long poll's).
    func stop(_ store: SmartStore) {
        guard let ended = lock.withLock({ running[store.path] }) else { return }
        InspectorLive.end(ended, live: true)
        lock.withLock { if running[store.path]?.manager === ended.manager { running[store.path] = nil } }
    }

    func stopAll() {
        for ended in lock.withLock({ () -> [Running] in defer { running.removeAll() }; return Array(running.values) }) {
            InspectorLive.end(ended, live: true)
        }
    }

    private static func end(_ ended: Running, live: Bool) {
        if live { ended.manager.live.stop() }
    }

    func stateJSON(_ store: SmartStore) -> String {
        lock.withLock { running[store.path]?.manager }?.live.stateJSON ?? LiveSync.stoppedStateJSON
    }
}
