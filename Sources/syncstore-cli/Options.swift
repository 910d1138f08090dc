import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// Which store a command works on, and the key that opens it.
struct StoreOptions: ParsableArguments {
    @Option(help: "Directory holding the stores (default: $SYNCSTORE_ROOT, else ~/.local/share/syncstore).")
    var root: String?

    @Option(help: "Store name.")
    var store = StoreConfig.defaultName

    @Flag(help: "Use the global store of that name instead of the user store.")
    var global = false

    @Option(help: ArgumentHelp("File holding the key of an encrypted store (one trailing newline is ignored); default: $SYNCSTORE_KEY.",
                               valueName: "path"))
    var keyFile: String?

    @Option(help: ArgumentHelp("PBKDF2 iterations of the key (default: \(StoreKey.defaultKdfIter); the Mobile SDK uses 4000).",
                               valueName: "n"))
    var kdfIter: Int?

    /// Refused: a key on the command line shows in `ps` and in shell history.
    @Option(name: .customLong("key"), help: .hidden)
    var keyOnCommandLine: String?

    func validate() throws {
        try KeySource.refuse(keyOnCommandLine, option: "--key", instead: "--key-file PATH or $SYNCSTORE_KEY")
        if let kdfIter, kdfIter < 1 || kdfIter > Int(Int32.max) {
            throw ValidationError("--kdf-iter must be from 1 to \(Int32.max)")
        }
    }

    var resolvedRoot: String {
        if let root { return root }
        if let env = ProcessInfo.processInfo.environment["SYNCSTORE_ROOT"], !env.isEmpty { return env }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "."
        return home + "/.local/share/syncstore"
    }

    /// The key from --key-file or $SYNCSTORE_KEY, nil for a store that is not encrypted.
    func key() throws -> StoreKey? {
        try KeySource.read(file: keyFile, fileOption: "--key-file", environment: "SYNCSTORE_KEY",
                           kdfIter: kdfIter, kdfOption: "--kdf-iter")
    }

    /// The store's config: name, user or global, key.
    func config(readOnly: Bool = false) throws -> StoreConfig {
        try StoreConfig(isGlobal: global, name: store, key: try key(), readOnly: readOnly)
    }

    /// Opens the store; with `mustExist`, an unknown store is NOT_FOUND instead of a new empty
    /// one. `readOnly`: the command only reads, so a store this user cannot write is opened for
    /// reading only; a command that writes such a store fails first, naming the file.
    func open(mustExist: Bool, readOnly: Bool = false) throws -> OpenedStore {
        let root = resolvedRoot
        let path = StoreRegistry.path(root: root, config: try config())
        if mustExist && !FileManager.default.fileExists(atPath: path) {
            throw StoreError(.notFound, "No \(global ? "global" : "user") store '\(store)' under \(root) (no file \(path)); "
                + existingStores(root: root) + "check --root and --store, or create it with `syncstore-cli soup register` or `syncstore-cli sync`")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let writable = FileManager.default.fileExists(atPath: path)
            ? access(path, W_OK) == 0 && access(directory, W_OK) == 0 : true
        if !writable && !readOnly {
            throw CLIError("Cannot write store '\(store)': this user may not write its file \(path) or its directory \(directory) (\(String(cString: strerror(errno)))). "
                + "Make both writable (chmod/chown, or run as their owner), or copy the store under a --root of your own; query, soup list and status read it as it is.", exitCode: 74)
        }
        let config = try config(readOnly: !writable)
        do {
            return try OpenedStore(root: root, config: config)
        } catch let error as StoreError where error.code == .auth {
            throw StoreError(.auth, error.message + "\n  " + KeySource.hint(
                keySource: config.key == nil ? nil : keyFile.map { "--key-file \($0)" } ?? "$SYNCSTORE_KEY",
                kdfIter: config.key?.kdfIter ?? StoreKey.defaultKdfIter, path: path))
        }
    }

    /// "Stores there: a, b (global: c); " or "There are no stores under ROOT; ", for a store not found.
    private func existingStores(root: String) -> String {
        let registry = StoreRegistry.shared
        let user = (try? registry.listStores(root: root, global: false)) ?? []
        let globals = (try? registry.listStores(root: root, global: true)) ?? []
        if user.isEmpty && globals.isEmpty { return "there are no stores under \(root); " }
        var parts: [String] = []
        if !user.isEmpty { parts.append("user stores: " + user.joined(separator: ", ")) }
        if !globals.isEmpty { parts.append("global stores (--global): " + globals.joined(separator: ", ")) }
        return parts.joined(separator: "; ") + "; "
    }

    /// "Store 'main' (user) at PATH; encrypted: yes (kdfIter 256000)", for the text output.
    func describe(_ opened: OpenedStore) -> String {
        let text = (try? KeySource.text(file: keyFile, fileOption: "--key-file", environment: "SYNCSTORE_KEY")) ?? nil
        return "Store '\(store)' (\(global ? "global" : "user")) at \(opened.path); encrypted: "
            + (opened.store.isEncrypted ? "yes (\(KeySource.kind(text ?? "", kdfIter: opened.store.kdfIter)))" : "no")
    }
}

/// Where keys come from: a file or an environment variable, never the command line.
enum KeySource {
    /// A key read from `file` (one trailing newline removed), else from the environment variable;
    /// nil when neither gives one.
    static func read(file: String?, fileOption: String, environment variable: String,
                     kdfIter: Int?, kdfOption: String) throws -> StoreKey? {
        guard let text = try text(file: file, fileOption: fileOption, environment: variable) else {
            if kdfIter != nil {
                throw CLIError("\(kdfOption) applies to a key, and none was given (\(fileOption) PATH or $\(variable))", exitCode: ExitCodes.usage)
            }
            return nil
        }
        return try StoreKey(text, kdfIter: kdfIter ?? StoreKey.defaultKdfIter)
    }

    /// The key's text from `file`, else from the environment variable (unset or empty: nil).
    static func text(file: String?, fileOption: String, environment variable: String) throws -> String? {
        let text: String
        if let file {
            text = try contents(of: file, option: fileOption)
        } else if let env = ProcessInfo.processInfo.environment[variable], !env.isEmpty {
            text = env
        } else {
            return nil
        }
        guard !text.utf8.contains(0) else {
            throw CLIError("The key from \(file.map { "\(fileOption) \($0)" } ?? "$\(variable)") contains a NUL byte; use a text passphrase or x'<64 hex digits>'", exitCode: 65)
        }
        return text
    }

    /// The key file's text without one trailing newline ("\n" or "\r\n").
    static func contents(of path: String, option: String) throws -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIError("\(option) \(path): no such file", exitCode: 66)
        }
        guard !isDirectory.boolValue, var bytes = FileManager.default.contents(atPath: path).map(Array.init) else {
            throw CLIError("\(option) \(path): cannot read the file (\(isDirectory.boolValue ? "a directory" : "permission denied?"))", exitCode: 66)
        }
        if bytes.last == UInt8(ascii: "\n") {
            bytes.removeLast()
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        }
        guard !bytes.isEmpty else {
            throw CLIError("\(option) \(path): the key file is empty", exitCode: 65)
        }
        guard let text = String(bytes: bytes, encoding: .utf8) else {
            throw CLIError("\(option) \(path): the key file is not UTF-8 text; use a text passphrase or x'<64 hex digits>'", exitCode: 65)
        }
        return text
    }

    /// Whether the key is x'<64 hex>' or x'<96 hex>' (the raw key, and salt): used without a KDF.
    static func isRaw(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 67 || bytes.count == 99, bytes[0] == UInt8(ascii: "x") || bytes[0] == UInt8(ascii: "X"),
              bytes[1] == UInt8(ascii: "'"), bytes.last == UInt8(ascii: "'") else { return false }
        return bytes[2..<(bytes.count - 1)].allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 102) }
    }

    /// "kdfIter 256000", or "raw 256-bit key" for a key used without a KDF.
    static func kind(_ text: String, kdfIter: Int) -> String {
        isRaw(text) ? "raw 256-bit key" : "kdfIter \(kdfIter)"
    }

    /// Rejects a key given as an option's value, without repeating the value.
    static func refuse(_ value: String?, option: String, instead: String) throws {
        guard value != nil else { return }
        throw ValidationError("\(option) is not accepted: a key on the command line shows in `ps` and in shell history. Use \(instead).")
    }

    /// What to do when a key does not open a store. `keySource`: where the key came from (nil:
    /// no key was given).
    static func hint(keySource: String?, kdfIter: Int, path: String) -> String {
        guard let keySource else {
            return "syncstore-cli: give the store's key with --key-file PATH or $SYNCSTORE_KEY (and --kdf-iter N if it was not encrypted with \(StoreKey.defaultKdfIter) iterations)"
        }
        if isPlainSQLite(path) {
            return "syncstore-cli: the store is not encrypted, and a key came from \(keySource): open it without one, or encrypt it with `syncstore-cli rekey --new-key-file PATH`"
        }
        return "syncstore-cli: check the key from \(keySource) and the iterations (--kdf-iter, here \(kdfIter); the Mobile SDK uses 4000)"
    }

    /// Whether the file starts with SQLite's header (an encrypted store starts with its random salt).
    static func isPlainSQLite(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? nil
        return header == Data("SQLite format 3\u{0}".utf8)
    }
}

/// An open store, closed when the command ends. Opened through the library's one registry, as
/// every host's stores are (one SmartStore per file in the process).
final class OpenedStore {
    let registry = StoreRegistry.shared
    let handle: Int
    let store: SmartStore
    let path: String

    init(root: String, config: StoreConfig) throws {
        path = StoreRegistry.path(root: root, config: config)
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
