import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

@main
struct SyncStoreCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncstore-cli",
        abstract: "Look into SyncStore stores, run their syncs, serve the dev server, and see a demo of offline sync.",
        discussion: """
        Stores live under a root directory (--root, else $SYNCSTORE_ROOT, else \
        ~/.local/share/syncstore): <root>/user/<store>.db, or global/ with --global.

        An encrypted store opens with its key from --key-file PATH or $SYNCSTORE_KEY \
        (never a key on the command line), and --kdf-iter N if it was not encrypted with \
        256000 iterations; `rekey` encrypts a store, changes its key or decrypts it.

        A first sync on a fresh root (the Try: line of `serve` prints the URL and token):
          syncstore-cli serve --port 8080 --token dev --seed Contact=100 &
          syncstore-cli sync --url http://127.0.0.1:8080 --token dev \\
              --soql 'SELECT Id, LastName, LastModifiedDate FROM Contact' \\
              --soup contacts --create-soup --name contacts-down
          syncstore-cli query "select {contacts:LastName} from {contacts} limit 5"

        Examples:
          syncstore-cli demo
          syncstore-cli soup register contacts \\
              '[{"path":"Id","type":"string"},{"path":"__local__","type":"string"}]'
          syncstore-cli sync --url URL --token T \\
              --store-config userstore.json --sync-config usersyncs.json
          syncstore-cli status
          syncstore-cli soup list
          syncstore-cli ghosts contacts-down --url URL --token T
          syncstore-cli rekey --store main --new-key-file main.key
          syncstore-cli soup list --store main --key-file main.key

        `sync --help` shows a userstore.json and a usersyncs.json. Shell completions: \
        `syncstore-cli --generate-completion-script bash` (or zsh, fish) prints a script; \
        `man syncstore-cli` once installed (cmake --install).

        Exit codes: 0 success; 3 a sync finished with record conflicts or errors; \
        64 bad command line; 65 bad input (ARGUMENT); 66 not found; 69 network; \
        70 state or internal error; 73 exists; 74 storage; 75 busy (retry); \
        76 server error; 77 authentication; 130 stopped by Ctrl-C. With --json, \
        errors are one JSON object on stderr: {"error": {"code", "exitCode", "message"}}.
        """,
        version: SyncStoreVersion.string,
        subcommands: [DemoCommand.self, ServeCommand.self, SyncCommand.self, StatusCommand.self, SoupCommand.self,
                      SoupsCommand.self, QueryCommand.self, UpsertCommand.self, WatchCommand.self, GhostsCommand.self, RekeyCommand.self, InspectCommand.self])

    /// Errors of the engine become a message on stderr and an exit code by class.
    static func main() async {
        SyncCompanion.install()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as StoreError {
            fail(error.message + hint(forError: error.message), code: error.code.name, exitCode: ExitCodes.forError(error.code))
        } catch let error as CLIError {
            fail(error.message, code: error.code, exitCode: error.exitCode)
        } catch let error as ExitCode {
            // The command already reported (a sync's final states).
            exit(withError: error)
        } catch {
            let exitCode = exitCode(for: error).rawValue
            guard wantsJSON, exitCode != 0 else { exit(withError: error) }
            fail(fullMessage(for: error), code: exitCode == ExitCodes.usage ? "USAGE" : "EXIT", exitCode: exitCode)
        }
    }

    /// Whether --json was given (before a `--`): errors are then JSON too, whatever failed.
    static var wantsJSON: Bool {
        CommandLine.arguments.dropFirst().prefix { $0 != "--" }.contains("--json")
    }

    /// Prints an error (text, or one JSON object with --json) on stderr and exits.
    static func fail(_ message: String, code: String, exitCode: Int32) -> Never {
        if wantsJSON {
            let error = JSONDocument.object()
            error.root.set("code", owned: JSONMake.string(code))
            error.root.set("exitCode", owned: JSONMake.int(Int64(exitCode)))
            error.root.set("message", owned: JSONMake.string(message))
            let doc = JSONDocument.object()
            doc.root.set("error", owned: error.root.retained())
            Console.err(doc.root.dump())
        } else {
            Console.err("syncstore-cli: \(message)")
        }
        Foundation.exit(exitCode)
    }
}

/// A failure of the tool itself (not of the engine), with its exit code.
struct CLIError: Error {
    let message: String
    let exitCode: Int32

    init(_ message: String, exitCode: Int32 = ExitCodes.state) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The error class in JSON output, by exit code.
    var code: String {
        switch exitCode {
        case ExitCodes.usage: return "USAGE"
        case 65: return ErrorCode.argument.name
        case 66: return ErrorCode.notFound.name
        case 69: return ErrorCode.network.name
        case 73: return ErrorCode.exists.name
        case 74: return ErrorCode.storage.name
        case 75: return ErrorCode.busy.name
        case ExitCodes.interrupted: return "STOPPED"
        default: return ErrorCode.state.name
        }
    }
}

/// Exit codes by error class (sysexits.h numbers where one fits).
enum ExitCodes {
    static let partial: Int32 = 3
    static let usage: Int32 = 64
    static let state: Int32 = 70
    /// 128 + SIGINT, as shells report a command stopped by Ctrl-C.
    static let interrupted: Int32 = 130

    static func forError(_ code: ErrorCode) -> Int32 {
        switch code {
        case .argument: return 65
        case .notFound: return 66
        case .network: return 69
        case .exists: return 73
        case .storage: return 74
        case .busy: return 75
        case .server: return 76
        case .auth: return 77
        case .conflict: return partial
        case .internal, .state: return state
        }
    }

    /// The exit code for a sync's final state.
    static func forState(_ state: SyncState) -> Int32 {
        switch state.status {
        case .done: return state.conflicts + state.errors > 0 ? partial : 0
        case .failed: return ErrorCode(rawValue: state.errorCode).map(forError) ?? self.state
        default: return self.state
        }
    }
}
