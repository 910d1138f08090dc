import ArgumentParser
import Foundation
import SyncStoreCore

/// Which store a command works on.
struct StoreOptions: ParsableArguments {
    @Option(help: "Directory holding the stores (default: $SYNCSTORE_ROOT, else ~/.local/share/syncstore).")
    var root: String?

    @Option(help: "Store name.")
    var store = StoreConfig.defaultName

    @Flag(help: "Use the global store of that name instead of the user store.")
    var global = false

    var resolvedRoot: String {
        if let root { return root }
        if let env = ProcessInfo.processInfo.environment["SYNCSTORE_ROOT"], !env.isEmpty { return env }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "."
        return home + "/.local/share/syncstore"
    }

    /// Opens the store; with `mustExist`, an unknown store is NOT_FOUND instead of a new empty one.
    func open(mustExist: Bool) throws -> OpenedStore {
        let config = try StoreConfig(isGlobal: global, name: store)
        let root = resolvedRoot
        let path = StoreRegistry.path(root: root, config: config)
        if mustExist && !FileManager.default.fileExists(atPath: path) {
            throw StoreError(.notFound, "No \(global ? "global" : "user") store '\(store)' under \(root) (no file \(path)); check --root and --store, or create it with `syncstore-cli sync --store-config userstore.json ...`")
        }
        return try OpenedStore(root: root, config: config)
    }
}

/// An open store, closed when the command ends.
final class OpenedStore {
    let registry = StoreRegistry()
    let handle: Int
    let store: SmartStore

    init(root: String, config: StoreConfig) throws {
        handle = try registry.open(root: root, config: config)
        store = try registry.store(handle)
    }

    func close() { try? registry.close(handle) }
    deinit { close() }
}

/// The server a sync talks to.
struct RemoteOptions: ParsableArguments {
    @Option(help: "Instance URL of the server, e.g. https://example.my.salesforce.com or the URL `syncstore-cli serve` prints.")
    var url: String?

    @Option(help: "OAuth access token (default: $SYNCSTORE_TOKEN).")
    var token: String?

    @Option(help: "OAuth refresh token: used to get a new access token when the server refuses the current one.")
    var refreshToken: String?

    @Option(help: "Token endpoint for the refresh (default: <url>/services/oauth2/token).")
    var tokenUrl: String?

    @Option(help: "OAuth client id (connected app consumer key) for the refresh.")
    var clientId: String?

    @Option(help: "REST API version.")
    var apiVersion = "v62.0"

    @Option(help: "PEM file of the certificate authorities to trust (e.g. the one `serve --tls self-signed` prints).")
    var caBundle: String?

    /// The remote config, or nil when no URL was given.
    func config() throws -> RemoteConfig? {
        guard let url else { return nil }
        guard let token = token ?? ProcessInfo.processInfo.environment["SYNCSTORE_TOKEN"], !token.isEmpty else {
            throw CLIError("--url needs an access token: --token or $SYNCSTORE_TOKEN", exitCode: ExitCodes.usage)
        }
        var fields: [String: String] = ["instanceUrl": url, "accessToken": token, "apiVersion": apiVersion]
        fields["refreshToken"] = refreshToken
        fields["tokenUrl"] = tokenUrl
        fields["clientId"] = clientId
        fields["caBundle"] = caBundle
        let doc = JSONDocument.object()
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { doc.root.set(key, owned: JSONMake.string(value)) }
        return try RemoteConfig.parse(doc.root.dump())
    }

    func require() throws -> RemoteConfig {
        guard let config = try config() else {
            throw CLIError("This command talks to a server: give --url and --token", exitCode: ExitCodes.usage)
        }
        return config
    }
}

/// How results are printed.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON for machines instead of tables and progress bars.")
    var json = false
}
