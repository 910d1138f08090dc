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
        try await DevServer.run(options) { url in
            print(url)
            fflush(nil)
        }
    }
}
