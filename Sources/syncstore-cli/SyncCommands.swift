import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// `sync`: run the named syncs of a usersyncs.json, or an ad-hoc SOQL sync down.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Run syncs of a store against a server.",
        discussion: """
        With --sync-config, the syncs of that usersyncs.json are created (existing names \
        are kept) and run in file order; names on the command line run only those (also \
        syncs created earlier). A sync that ran before runs again incrementally (reSync). \
        With --soql, a sync down of that query into --soup runs instead; --create-soup \
        registers that soup when it does not exist (indexes: Id, LastModifiedDate and \
        the local-change flags). Soups come from --store-config (a userstore.json) or \
        `syncstore-cli soup register`; a soup that already exists is kept.

        Ctrl-C stops the running sync (saved as STOPPED) and exits 130; run the same \
        command again to resume (a named sync goes on from its last saved point).

        With --live, the syncs run by themselves until Ctrl-C or SIGTERM (exit 0) or \
        --for SECONDS: at once every sync up then every sync down ("catching up"), then \
        a sync up each time writes to its soup (by any process: an app, `upsert`) have \
        paused for --debounce ms, the sync downs every --pull-interval ms; when the server \
        is unreachable, "offline" until a retry from --retry-min ms doubling up to \
        --retry-max ms. The state is one status line rewritten in place on a terminal \
        ("live · 2 syncs · last run contacts-up DONE (3 records) 12:03:04", "offline · \
        retry in 3.2 s · <error>"), a line per event otherwise; --json prints the \
        library's events as JSON lines ({"event":"state","state":"live",...} and \
        {"event":"run","sync":{...}}, docs/sync.md#live-sync), the last one \
        {"event":"state","state":"stopped",...}.

        Examples:
          syncstore-cli sync --url http://127.0.0.1:8080 --token T \\
              --store-config userstore.json --sync-config usersyncs.json
          syncstore-cli sync --url URL --token T contacts-up contacts-down
          syncstore-cli sync --url URL --token T --soup contacts --create-soup \\
              --soql 'SELECT Id, LastName, LastModifiedDate FROM Contact' \\
              --name contacts-down
          syncstore-cli sync --live --url URL --token T --sync-config usersyncs.json
          syncstore-cli sync --live --url URL --token T --syncs contacts-up \\
              --debounce 500 --pull-interval 60000 --json
        """ + "\n\n" + userStoreHelp + "\n\n" + userSyncsHelp)

    /// A complete userstore.json, as `--store-config` and `soup register --store-config` read it.
    static let userStoreHelp = """
        A userstore.json lists soups and their index specs (types: string, integer, \
        floating, full_text, json1):
          {"soups": [
            {"soupName": "contacts", "indexes": [
              {"path": "Id", "type": "string"},
              {"path": "LastName", "type": "string"},
              {"path": "LastModifiedDate", "type": "string"},
              {"path": "__local__", "type": "string"}]}]}
        """

    /// A complete usersyncs.json, as `--sync-config` reads it.
    static let userSyncsHelp = """
        A usersyncs.json lists syncs: syncType syncDown (target types soql, sosl, mru, \
        refresh, parent_children, briefcase, layout, metadata, datasync, twophase; idFieldName \
        and modificationDateFieldName default to Id and LastModifiedDate) or syncUp \
        (target type collection, the default, single, datasync or twophase); options: mergeMode \
        OVERWRITE (default) or LEAVE_IF_CHANGED, fieldlist:
          {"syncs": [
            {"syncName": "contacts-down", "syncType": "syncDown",
             "soupName": "contacts",
             "target": {"type": "soql", "query":
               "SELECT Id, LastName, LastModifiedDate FROM Contact"},
             "options": {"mergeMode": "LEAVE_IF_CHANGED"}},
            {"syncName": "contacts-up", "syncType": "syncUp",
             "soupName": "contacts",
             "target": {"createFieldlist": ["LastName"],
                        "updateFieldlist": ["LastName"]},
             "options": {"fieldlist": ["LastName"],
                         "mergeMode": "LEAVE_IF_CHANGED"}}]}
        """

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var remote: RemoteOptions
    @OptionGroup var output: OutputOptions
    @Option(help: ArgumentHelp("A userstore.json: soups to register.", valueName: "path")) var storeConfig: String?
    @Option(help: ArgumentHelp("A usersyncs.json: syncs to create and run.", valueName: "path")) var syncConfig: String?
    @Option(help: "An ad-hoc sync down of this SOQL query.") var soql: String?
    @Option(help: "The soup the --soql sync down fills.") var soup: String?
    @Flag(help: "Register the --soup of --soql when it does not exist (indexes: Id, LastModifiedDate, __local__ and the other local-change flags).")
    var createSoup = false
    @Option(help: "Name of the --soql sync (then a later run with the same name is incremental).") var name: String?
    @Option(help: "Merge mode of the --soql sync: OVERWRITE or LEAVE_IF_CHANGED.") var mergeMode = "OVERWRITE"
    @Argument(help: "Names of the syncs to run (default: every sync of --sync-config).") var names: [String] = []
    @Flag(help: "Live sync: run the syncs by themselves (local writes pushed, retries when offline) until Ctrl-C, SIGTERM or --for.")
    var live = false
    @Option(help: ArgumentHelp("With --live: the syncs, comma-separated (default: the names given, else those of --sync-config, else every named sync of the store).",
                               valueName: "a,b")) var syncs: String?
    @Option(help: ArgumentHelp("With --live: how long writes must pause before a sync up runs, in ms (default 300).", valueName: "ms"))
    var debounce: Int64?
    @Option(help: ArgumentHelp("With --live: the first retry delay when the server is unreachable, in ms (default 1000; doubles each time).",
                               valueName: "ms")) var retryMin: Int64?
    @Option(help: ArgumentHelp("With --live: the longest retry delay, in ms (default 60000).", valueName: "ms")) var retryMax: Int64?
    @Option(help: ArgumentHelp("With --live: run the sync downs every this many ms (default 0: only when catching up).", valueName: "ms"))
    var pullInterval: Int64?
    @Flag(help: "With --live: do not follow Change Data Capture events (SOQL sync downs then come down only when catching up and every --pull-interval).")
    var noChangeEvents = false
    @Option(name: .customLong("for"), help: ArgumentHelp("With --live: stop after this many seconds (default: until Ctrl-C or SIGTERM).",
                                                       valueName: "seconds")) var forSeconds: Double?

    /// The indexes --create-soup gives a soup: what a sync down and up look up.
    static let defaultIndexSpecs = #"[{"path":"Id","type":"string"},{"path":"LastModifiedDate","type":"string"},"#
        + #"{"path":"__local__","type":"string"},{"path":"__locally_created__","type":"string"},"#
        + #"{"path":"__locally_updated__","type":"string"},{"path":"__locally_deleted__","type":"string"}]"#

    func validate() throws {
        if live {
            try validateLive()
            return
        }
        let liveOnly: [(String, Bool)] = [("--syncs", syncs != nil), ("--debounce", debounce != nil), ("--retry-min", retryMin != nil),
                                         ("--retry-max", retryMax != nil), ("--pull-interval", pullInterval != nil), ("--for", forSeconds != nil),
                                         ("--no-change-events", noChangeEvents)]
        if let option = liveOnly.first(where: { $0.1 })?.0 { throw ValidationError("\(option) goes with --live") }
        if soql != nil {
            guard soup != nil else { throw ValidationError("--soql needs --soup") }
            guard names.isEmpty else { throw ValidationError("Give sync names or --soql, not both") }
        } else if names.isEmpty && syncConfig == nil {
            throw ValidationError("Nothing to run: give sync names, --sync-config or --soql")
        }
        if createSoup && soql == nil { throw ValidationError("--create-soup goes with --soql and --soup") }
        guard ["OVERWRITE", "LEAVE_IF_CHANGED"].contains(mergeMode) else {
            throw ValidationError("--merge-mode must be OVERWRITE or LEAVE_IF_CHANGED")
        }
    }

    /// --live: the options' ranges are the library's (docs/sync.md#live-sync).
    private func validateLive() throws {
        guard soql == nil, soup == nil, !createSoup, name == nil else {
            throw ValidationError("--live runs named syncs: --soql, --soup, --create-soup and --name do not go with it")
        }
        if syncs != nil && !names.isEmpty { throw ValidationError("Give sync names or --syncs, not both") }
        if let syncs, liveNames(syncs).isEmpty { throw ValidationError("--syncs needs sync names, comma-separated") }
        for (option, value, range) in [("--debounce", debounce, 0...3_600_000), ("--retry-min", retryMin, 10...3_600_000),
                                       ("--retry-max", retryMax, 10...86_400_000), ("--pull-interval", pullInterval, 0...86_400_000)] as [(String, Int64?, ClosedRange<Int64>)] {
            if let value, !range.contains(value) {
                throw ValidationError("\(option) must be from \(range.lowerBound) to \(range.upperBound) (milliseconds)")
            }
        }
        if let retryMin, let retryMax, retryMax < retryMin { throw ValidationError("--retry-max must not be less than --retry-min") }
        if let forSeconds, !(forSeconds > 0 && forSeconds <= 31_536_000) {
            throw ValidationError("--for must be a number of seconds above 0")
        }
    }

    private func liveNames(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func run() throws {
        if live { return try runLive() }
        let config = try remote.require()
        let path = StoreRegistry.path(root: storeOptions.resolvedRoot, config: try storeOptions.config())
        let existed = FileManager.default.fileExists(atPath: path)
        let opened = try storeOptions.open(mustExist: false)
        defer { opened.close() }
        let store = opened.store
        do {
            if let storeConfig { try store.loadStoreConfig(path: storeConfig) }
            if let soup, soql != nil, !store.soupExists(soup) {
                guard createSoup else {
                    throw CLIError("Soup '\(soup)' does not exist in store '\(storeOptions.store)'; add --create-soup to register it with indexes on Id, LastModifiedDate and the local-change flags, or register it first: syncstore-cli soup register \(soup) '[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]'", exitCode: 66)
                }
                try store.registerSoup(soup, specsJSON: SyncCommand.defaultIndexSpecs)
            }
        } catch {
            // A refused first command leaves no empty store behind.
            if !existed {
                opened.close()
                try? StoreRegistry.shared.removeStore(root: storeOptions.resolvedRoot, config: try storeOptions.config())
            }
            throw error
        }
        let manager = try store.syncManager()
        manager.setRemote(config)
        var toRun = names
        if let syncConfig {
            try manager.loadSyncConfig(path: syncConfig)
            if toRun.isEmpty {
                guard let names = try ConfigFile.names(in: syncConfig, list: "syncs", key: "syncName", what: "sync config") else {
                    throw StoreError(.notFound, "Cannot read the sync config \(syncConfig)")
                }
                toRun = names
            }
        }
        Interrupt.install()
        var results: [(state: SyncState, records: Int64)] = []
        if let soql, let soup {
            let target = JSONDocument.object()
            target.root.set("type", owned: JSONMake.string("soql"))
            target.root.set("query", owned: JSONMake.string(soql))
            let options = #"{"mergeMode":"\#(mergeMode)"}"#
            let label = name ?? "sync down \(soup)"
            if let name, try manager.status(name: name) != nil {
                results.append(try SyncProgress.runCounting(manager, label: label, json: output.json) { try manager.reSync(name: name, callback: $0) })
            } else {
                results.append(try SyncProgress.runCounting(manager, label: label, json: output.json) {
                    try manager.syncDown(targetJSON: target.root.dump(), soupName: soup, optionsJSON: options, name: name, callback: $0)
                })
            }
        }
        for name in toRun where !Interrupt.stopped {
            guard try manager.status(name: name) != nil else {
                throw StoreError(.notFound, "No sync named '\(name)' in store '\(storeOptions.store)'; define it in a usersyncs.json given with --sync-config")
            }
            results.append(try SyncProgress.runCounting(manager, label: name, json: output.json) { try manager.reSync(name: name, callback: $0) })
        }
        let states = results.map(\.state)
        if output.json {
            Console.out("[" + states.map(\.jsonText).joined(separator: ",") + "]")
        } else {
            for result in results { Console.out(describe(result.state, records: result.records)) }
        }
        if Interrupt.stopped {
            let unnamed = results.contains { $0.state.name == nil }
            throw CLIError("The sync was stopped by Ctrl-C; run the same command again to resume"
                + (unnamed ? " (give --name NAME so that a stopped --soql sync goes on where it stopped instead of starting over)" : ""),
                exitCode: ExitCodes.interrupted)
        }
        if let failing = states.map(ExitCodes.forState).first(where: { $0 != 0 }) { throw ExitCode(failing) }
    }

}

extension SyncCommand {
    /// `sync --live`: creates what --store-config and --sync-config give, then live sync.
    func runLive() throws {
        let config = try remote.require()
        let mustExist = storeConfig == nil && syncConfig == nil
        let path = StoreRegistry.path(root: storeOptions.resolvedRoot, config: try storeOptions.config())
        let existed = FileManager.default.fileExists(atPath: path)
        let opened = try storeOptions.open(mustExist: mustExist)
        defer { opened.close() }
        let manager: SyncManager
        var chosen: [String]? = syncs.map(liveNames) ?? (names.isEmpty ? nil : names)
        do {
            if let storeConfig { try opened.store.loadStoreConfig(path: storeConfig) }
            manager = try opened.store.syncManager()
            manager.setRemote(config)
            if let syncConfig {
                try manager.loadSyncConfig(path: syncConfig)
                if chosen == nil {
                    guard let names = try ConfigFile.names(in: syncConfig, list: "syncs", key: "syncName", what: "sync config") else {
                        throw StoreError(.notFound, "Cannot read the sync config \(syncConfig)")
                    }
                    chosen = names
                }
            }
        } catch {
            if !existed {
                opened.close()
                try? StoreRegistry.shared.removeStore(root: storeOptions.resolvedRoot, config: try storeOptions.config())
            }
            throw error
        }
        try LiveSyncSession(opened: opened, manager: manager, names: chosen, debounceMs: debounce, retryMinMs: retryMin,
                            retryMaxMs: retryMax, pullIntervalMs: pullInterval, changeEvents: !noChangeEvents, forSeconds: forSeconds, json: output.json,
                            storeName: storeOptions.store).run()
    }
}

/// `ghosts`: cleanResyncGhosts for a sync down.
struct GhostsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ghosts",
        abstract: "Remove local records a sync down brought that the server no longer has (cleanResyncGhosts).",
        discussion: """
        Entries with local changes are kept.

        Examples:
          syncstore-cli ghosts contacts-down --url http://127.0.0.1:8080 --token T
          syncstore-cli ghosts 3 --url URL --token T --json
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var remote: RemoteOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The sync down: its name or id.") var sync: String

    func run() throws {
        let config = try remote.require()
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        let manager = try opened.store.syncManager()
        manager.setRemote(config)
        guard let state = try manager.status(name: sync) ?? Int64(sync).flatMap({ try? manager.status(id: $0) }) else {
            throw StoreError(.notFound, "No sync named (or with id) '\(sync)' in store '\(storeOptions.store)'")
        }
        Interrupt.install()
        let label = "cleaning ghosts of \(state.name ?? "sync \(state.id)")"
        Interrupt.running(manager, label: label)
        let report = try GhostsCommand.clean(manager, id: state.id)
        Interrupt.running(nil, label: label)
        if Interrupt.stopped {
            throw CLIError("Cleaning ghosts was stopped by Ctrl-C; nothing more was removed. Run the same command again to clean them",
                           exitCode: ExitCodes.interrupted)
        }
        if output.json {
            Console.out(report.root.dump())
        } else {
            let status = report.root["status"]?.string ?? ""
            let removed = report.root["removed"]?.int64 ?? 0
            Console.out("\(state.name ?? "sync \(state.id)"): \(status), \(removed) ghost\(removed == 1 ? "" : "s") removed")
            if let error = report.root["error"]?.string, !error.isEmpty { Console.out("  \(error)") }
        }
        if report.root["status"]?.string != "DONE" {
            throw ExitCode(ErrorCode(rawValue: Int32(report.root["errorCode"]?.int64 ?? 0)).map(ExitCodes.forError) ?? ExitCodes.state)
        }
    }

    /// Runs cleanResyncGhosts and returns its final report.
    static func clean(_ manager: SyncManager, id: Int64) throws -> JSONDocument {
        final class Last: @unchecked Sendable {
            let lock = NSLock()
            var text = ""
        }
        let last = Last()
        try manager.cleanResyncGhosts(id: id) { report in
            last.lock.lock()
            last.text = report
            last.lock.unlock()
        }
        _ = try manager.wait(id: id, timeoutMs: -1)
        last.lock.lock()
        defer { last.lock.unlock() }
        return try JSONDocument.parse(last.text, what: "ghost report")
    }
}

/// userstore.json / usersyncs.json as the CLI reads them for itself (the engine reads them too).
enum ConfigFile {
    /// The `key` of each object in the file's `list` array, in file order; nil when the file
    /// cannot be read.
    static func names(in path: String, list: String, key: String, what: String) throws -> [String]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let doc = try JSONDocument.parse(String(decoding: data, as: UTF8.self), what: what)
        return (doc.root[list]?.elements ?? []).compactMap { $0[key]?.string }
    }
}
