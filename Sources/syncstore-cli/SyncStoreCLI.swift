import ArgumentParser

@main
struct SyncStoreCLI: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "syncstore-cli", abstract: "SyncStore from a shell.")
}
