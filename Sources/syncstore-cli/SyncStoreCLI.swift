import ArgumentParser
import Foundation
import SyncStoreCore

@main
struct SyncStoreCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncstore-cli",
        abstract: "Look into SyncStore stores, run their syncs, serve the dev server, and see a demo of offline sync.",
        discussion: """
        Stores live under a root directory (--root, else $SYNCSTORE_ROOT, else
        ~/.local/share/syncstore): <root>/user/<store>.db, or global/ with --global.

        An encrypted store opens with its key from --key-file PATH or $SYNCSTORE_KEY \
        (never a key on the command line), and --kdf-iter N if it was not encrypted with \
        256000 iterations; `rekey` encrypts a store, changes its key or decrypts it.

        Examples:
          syncstore-cli demo
          syncstore-cli serve --seed Contact=1000
          syncstore-cli sync --url http://127.0.0.1:8080 --token T \\
              --store-config userstore.json --sync-config usersyncs.json
          syncstore-cli sync --url URL --token T --soql 'SELECT Id, LastName FROM Contact' --soup contacts
          syncstore-cli status
          syncstore-cli soups
          syncstore-cli query "select {contacts:LastName} from {contacts} limit 5"
          syncstore-cli ghosts contacts-down --url URL --token T
          syncstore-cli rekey --store main --new-key-file main.key
          syncstore-cli soups --store main --key-file main.key

        Exit codes: 0 success; 3 a sync finished with record conflicts or errors;
        64 bad command line; 65 bad input (ARGUMENT); 66 not found; 69 network;
        70 state or internal error; 73 exists; 74 storage; 75 busy (retry);
        76 server error; 77 authentication.
        """,
        subcommands: [DemoCommand.self, ServeCommand.self, SyncCommand.self, StatusCommand.self, SoupsCommand.self,
                      QueryCommand.self, UpsertCommand.self, GhostsCommand.self, RekeyCommand.self])

    /// Errors of the engine become a message on stderr and an exit code by class.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as StoreError {
            FileHandle.standardError.write(Data("syncstore-cli: \(error.message)\n".utf8))
            Foundation.exit(ExitCodes.forError(error.code))
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("syncstore-cli: \(error.message)\n".utf8))
            Foundation.exit(error.exitCode)
        } catch {
            exit(withError: error)
        }
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
}

/// Exit codes by error class (sysexits.h numbers where one fits).
enum ExitCodes {
    static let partial: Int32 = 3
    static let usage: Int32 = 64
    static let state: Int32 = 70

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
