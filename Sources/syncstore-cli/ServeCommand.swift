import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync
import SyncStoreDevServer

/// `serve`: the dev server, announced with what a client needs to reach it.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the local Salesforce REST API emulator (the dev server) for development, tests and demos.",
        discussion: """
        Prints the base URL (first line), the access token, a remote config ready to \
        paste into syncstore_set_remote / setRemote, and a first sync to try (it works \
        on a fresh root). Without --token a random one is made. Stop it with Ctrl-C. \
        Exit codes: 64 bad command line, 65 a bad file (schema, import, certificate), \
        66 a file not found, 74 the --db file cannot be written, 75 the port is in use.

        Examples:
          syncstore-cli serve --seed Contact=1000,Account=100
          syncstore-cli serve --port 8080 --token dev --db server.db
          syncstore-cli serve --tls self-signed      # HTTPS; prints its CA file
          syncstore-cli serve --twophase --twophase-seed 20   # also two-phase
          syncstore-cli serve --datasync --datasync-seed todo=300   # also Datasync
        """ + "\n\n" + DevServerOptions.discussion)

    @OptionGroup var server: DevServerOptions
    @Option(help: "TLS: 'self-signed' makes a certificate for 127.0.0.1, ::1 and localhost (needs openssl) and prints its CA file.")
    var tls: String?
    @Option(help: "Where --tls self-signed writes its files (default: a new temporary directory).")
    var tlsDir: String?
    @Flag(help: "Announce as one JSON line instead of text.") var json = false

    func validate() throws {
        if let tls, tls != "self-signed" { throw ValidationError("--tls takes 'self-signed' (or use --tls-cert and --tls-key)") }
        if tls != nil && server.tlsCert != nil { throw ValidationError("--tls self-signed and --tls-cert exclude each other") }
    }

    func run() async throws {
        var options = server
        let token = options.token ?? ServeCommand.randomToken()
        options.token = token
        var caFile: String? = nil
        if tls != nil {
            let files = try SelfSignedCertificate.make(in: tlsDir)
            options.tlsCert = files.cert
            options.tlsKey = files.key
            caFile = files.cert
        }
        let json = self.json
        let ca = caFile
        do {
            try await serve(options, token: token, ca: ca, json: json)
        } catch let error as DevServerError {
            throw CLIError(error.message, exitCode: error.exitCode)
        }
    }

    private func serve(_ options: DevServerOptions, token: String, ca: String?, json: Bool) async throws {
        let twophase = options.twophase
        try await DevServer.run(options) { url in
            let remote = JSONDocument.object()
            remote.root.set("instanceUrl", owned: JSONMake.string(url))
            remote.root.set("accessToken", owned: JSONMake.string(token))
            if let ca { remote.root.set("caBundle", owned: JSONMake.string(ca)) }
            if json {
                let doc = JSONDocument.object()
                doc.root.set("url", owned: JSONMake.string(url))
                doc.root.set("token", owned: JSONMake.string(token))
                if let ca { doc.root.set("caBundle", owned: JSONMake.string(ca)) }
                doc.root.set("remote", owned: remote.root.retained())
                Console.out(doc.root.dump())
            } else {
                Console.out(url)
                Console.out("token:  \(token)")
                if let ca { Console.out("CA:     \(ca)  (trust it: --ca-bundle, or \"caBundle\" in the remote config)") }
                Console.out("remote: \(remote.root.dump())")
                Console.out("Try:    syncstore-cli sync --url \(url) --token \(token)\(ca.map { " --ca-bundle \($0)" } ?? "") --soql 'SELECT Id, LastName, LastModifiedDate FROM Contact' --soup contacts --create-soup --name contacts-down")
                if twophase {
                    Console.out("Two-phase: GET \(url)/twophase/fetch, POST \(url)/twophase/synchronise (target {\"type\": \"twophase\"}, docs/sync.md#two-phase)")
                }
            }
        }
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// A self-signed certificate for the loopback names, made with the openssl tool.
enum SelfSignedCertificate {
    static func make(in directory: String?) throws -> (cert: String, key: String) {
        let dir = directory ?? (NSTemporaryDirectory() + "syncstore-tls-" + ServeCommand.randomToken().prefix(8))
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let cert = dir + "/cert.pem", key = dir + "/key.pem"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "30",
                             "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1",
                             "-addext", "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw CLIError("--tls self-signed needs the openssl tool (apt-get install openssl): \(error)")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIError("openssl could not make a certificate in \(dir) (exit \(process.terminationStatus))")
        }
        return (cert, key)
    }
}
