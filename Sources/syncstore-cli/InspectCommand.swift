import ArgumentParser
import Foundation
import Hummingbird
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync
import SyncStoreDevServer

/// `inspect`: a local web page to look into stores and watch their syncs (docs in the README).
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Open a local web page to look into stores: Smart SQL, soups, entries, syncs (live).",
        discussion: """
        Serves a page on 127.0.0.1 only and prints its URL (first line), which carries a \
        random token made for this run: a request without it gets 401, so other users and \
        web pages on this machine cannot read the stores. Stop it with Ctrl-C.

        It reads only (Smart SQL through the library's read-only path), never takes the \
        sync lock and never blocks writes, so it runs beside an app or a sync using the \
        same store. With --allow-writes the page can also upsert and delete entries, and \
        with --url and --token too start and stop live sync of the store's syncs in this \
        process (the Syncs tab shows its state: live, offline with the next retry, its \
        runs; `sync --live` in another process shows its own). An \
        encrypted store opens with --key-file or $SYNCSTORE_KEY (the key is never shown).

        Examples:
          syncstore-cli inspect --open
          syncstore-cli inspect --root ./stores --store main --port 8790
          syncstore-cli inspect --store main --key-file main.key
          syncstore-cli inspect --allow-writes --url http://127.0.0.1:8080 --token dev
        """)

    @OptionGroup var storeOptions: StoreOptions
    @Option(help: "Port on 127.0.0.1 (default 0: a free one).") var port = 0
    @Flag(help: "Open the page in the desktop's browser (xdg-open).") var open = false
    @Flag(help: "Let the page upsert and delete entries (off: the page only reads).") var allowWrites = false
    @OptionGroup(title: "Live sync from the page (with --allow-writes)") var remote: RemoteOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
    }

    func run() async throws {
        let settings = InspectorSettings(root: storeOptions.resolvedRoot, key: try storeOptions.key(), kdfIter: storeOptions.kdfIter,
                                         token: ServeCommand.randomToken(), allowWrites: allowWrites,
                                         initialStore: storeOptions.store, initialGlobal: storeOptions.global,
                                         remote: try remote.config())
        // The chosen store is opened now, so a wrong key or name fails here, not in the page.
        let stores = InspectorStores(settings)
        _ = try stores.store(global: settings.initialGlobal, name: settings.initialStore)
        let open = self.open
        let requested = port
        let app = Application(
            responder: InspectorResponder(api: InspectorAPI(settings: settings, stores: stores)),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: requested), serverName: "syncstore-inspector"),
            onServerRunning: { channel in
                let url = "http://127.0.0.1:\(channel.localAddress?.port ?? requested)/?token=\(settings.token)"
                // Where the hybrid plugins' showInspector finds it (removed when it stops); written
                // before the URL is printed, so whoever reads the URL finds the record too.
                InspectorRecord.write(root: settings.root, url: url, pid: getpid())
                Console.out(url)
                Console.out("Inspecting \(settings.initialGlobal ? "global" : "user") store '\(settings.initialStore)' under \(settings.root)"
                            + (settings.allowWrites ? " (writes allowed)" : " (read-only)") + "; Ctrl-C stops it.")
                if open { InspectCommand.openInBrowser(url) }
            })
        var quiet = app
        quiet.logger.logLevel = .warning
        // Ctrl-C: the server stops gracefully, waiting for open requests, so the event streams
        // of open pages must end first (they would run forever).
        let signals = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { InspectorShutdown.begin() }
            source.resume()
            return source
        }
        defer {
            InspectorLive.shared.stopAll()
            signals.forEach { $0.cancel() }
            InspectorRecord.remove(root: settings.root, pid: getpid())
        }
        do {
            try await quiet.runService()
        } catch {
            guard let failure = DevServer.listenFailure(error, host: "127.0.0.1", port: requested) else { throw error }
            throw CLIError(failure.message, exitCode: failure.exitCode)
        }
    }

    static func openInBrowser(_ url: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let failed = "syncstore-cli: xdg-open could not open a browser (no desktop, or xdg-utils not installed); open the URL above yourself"
        process.terminationHandler = { if $0.terminationStatus != 0 { Console.err(failed) } }
        do {
            try process.run()
        } catch {
            Console.err(failed)
        }
    }
}

/// Set once the process is asked to stop: event streams end at their next tick.
enum InspectorShutdown {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var begun = false
    static func begin() { lock.withLock { begun = true } }
    static var isBegun: Bool { lock.withLock { begun } }
}
