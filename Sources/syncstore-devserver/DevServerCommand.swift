import ArgumentParser
import Foundation
import SyncStoreDevServer

@main
struct DevServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncstore-devserver",
        abstract: "A local Salesforce REST API emulator (SQLite-backed) for developing, testing and benchmarking SyncStore.",
        discussion: DevServerOptions.discussion)

    @OptionGroup var options: DevServerOptions

    func run() async throws {
        do {
            try await DevServer.run(options) { url in
                print(url)
                fflush(nil)
            }
        } catch let error as DevServerError {
            // As syncstore-cli serve: the message, and an exit code that says what kind of failure.
            FileHandle.standardError.write(Data("syncstore-devserver: \(error.message)\n".utf8))
            throw ExitCode(error.exitCode)
        }
    }
}
