import ArgumentParser
import Foundation
import SyncStoreCore

/// `sync`: run the named syncs of a usersyncs.json, or an ad-hoc SOQL sync down.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Run syncs of a store against a server.",
        discussion: """
        With --sync-config, the syncs of that usersyncs.json are created (existing names are
        kept) and run in file order; names on the command line run only those (also syncs
        created earlier). A sync that ran before runs again incrementally (reSync). With --soql,
        a sync down of that query into --soup runs instead. Soups come from --store-config (a
        userstore.json); a soup that already exists is kept.

        Examples:
          syncstore-cli sync --url http://127.0.0.1:8080 --token T \\
              --store-config userstore.json --sync-config usersyncs.json
          syncstore-cli sync --url URL --token T contacts-up contacts-down
          syncstore-cli sync --url URL --token T --soql 'SELECT Id, LastName FROM Contact' --soup contacts --name contacts-down
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var remote: RemoteOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "A userstore.json: soups to register.") var storeConfig: String?
    @Option(help: "A usersyncs.json: syncs to create and run.") var syncConfig: String?
    @Option(help: "An ad-hoc sync down of this SOQL query.") var soql: String?
    @Option(help: "The soup the --soql sync down fills.") var soup: String?
    @Option(help: "Name of the --soql sync (then a later run with the same name is incremental).") var name: String?
    @Option(help: "Merge mode of the --soql sync: OVERWRITE or LEAVE_IF_CHANGED.") var mergeMode = "OVERWRITE"
    @Argument(help: "Names of the syncs to run (default: every sync of --sync-config).") var names: [String] = []

    func validate() throws {
        if soql != nil {
            guard soup != nil else { throw ValidationError("--soql needs --soup") }
            guard names.isEmpty else { throw ValidationError("Give sync names or --soql, not both") }
        } else if names.isEmpty && syncConfig == nil {
            throw ValidationError("Nothing to run: give sync names, --sync-config or --soql")
        }
        guard ["OVERWRITE", "LEAVE_IF_CHANGED"].contains(mergeMode) else {
            throw ValidationError("--merge-mode must be OVERWRITE or LEAVE_IF_CHANGED")
        }
    }

    func run() throws {
        let config = try remote.require()
        let opened = try storeOptions.open(mustExist: false)
        defer { opened.close() }
        let store = opened.store
        if let storeConfig { try store.loadStoreConfig(path: storeConfig) }
        let manager = try store.syncManager()
        manager.setRemote(config)
        var toRun = names
        if let syncConfig {
            try manager.loadSyncConfig(path: syncConfig)
            if toRun.isEmpty { toRun = try SyncCommand.syncNames(inFile: syncConfig) }
        }
        var states: [SyncState] = []
        if let soql, let soup {
            let target = JSONDocument.object()
            target.root.set("type", owned: JSONMake.string("soql"))
            target.root.set("query", owned: JSONMake.string(soql))
            let options = #"{"mergeMode":"\#(mergeMode)"}"#
            let label = name ?? "sync down \(soup)"
            let state: SyncState
            if let name, try manager.status(name: name) != nil {
                state = try SyncProgress.run(manager, label: label, json: output.json) { try manager.reSync(name: name, callback: $0) }
            } else {
                state = try SyncProgress.run(manager, label: label, json: output.json) {
                    try manager.syncDown(targetJSON: target.root.dump(), soupName: soup, optionsJSON: options, name: name, callback: $0)
                }
            }
            states.append(state)
        }
        for name in toRun {
            guard try manager.status(name: name) != nil else {
                throw StoreError(.notFound, "No sync named '\(name)' in store '\(storeOptions.store)'; define it in a usersyncs.json given with --sync-config")
            }
            states.append(try SyncProgress.run(manager, label: name, json: output.json) { try manager.reSync(name: name, callback: $0) })
        }
        if output.json {
            Console.out("[" + states.map(\.jsonText).joined(separator: ",") + "]")
        } else {
            for state in states { Console.out(describe(state)) }
        }
        if let failing = states.map(ExitCodes.forState).first(where: { $0 != 0 }) { throw ExitCode(failing) }
    }

    /// The sync names of a usersyncs.json, in file order.
    static func syncNames(inFile path: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError(.notFound, "Cannot read the sync config \(path)")
        }
        let doc = try JSONDocument.parse(String(decoding: data, as: UTF8.self), what: "sync config")
        return (doc.root["syncs"]?.elements ?? []).compactMap { $0["syncName"]?.string }
    }
}

/// `ghosts`: cleanResyncGhosts for a sync down.
struct GhostsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ghosts",
        abstract: "Remove local records a sync down brought that the server no longer has (cleanResyncGhosts).",
        discussion: """
        Entries with local changes are kept. Examples:
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
        let report = try GhostsCommand.clean(manager, id: state.id)
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
