// The one Swift fixture that runs a syncstore-devserver process on 127.0.0.1 (port 0) for a test:
// the binary is $SYNCSTORE_DEVSERVER, else the SwiftPM debug build (.build/debug/syncstore-devserver).
import XCTest
import Foundation
@testable import SyncStoreCore
@testable import SyncStorePlugin
@testable import SyncStoreSync

/// A syncstore-devserver process on 127.0.0.1 for one test.
final class DevServerProcess {
    let process = Process()
    let url: String
    static let token = "swift-test-token"

    /// `logPath`: where the server's stderr goes (default: the test's own).
    init(_ arguments: [String], logPath: String? = nil) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let binary = ProcessInfo.processInfo.environment["SYNCSTORE_DEVSERVER"] ?? root.appendingPathComponent(".build/debug/syncstore-devserver").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw XCTSkip("syncstore-devserver is not built at \(binary)")
        }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--host", "127.0.0.1", "--port", "0", "--token", DevServerProcess.token] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        if let logPath {
            FileManager.default.createFile(atPath: logPath, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: logPath)
        }
        try process.run()
        var line = Data()
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([10]) { break }
            line.append(byte)
        }
        url = String(decoding: line, as: UTF8.self)
        guard url.hasPrefix("http") else { throw TestFailure("devserver printed '\(url)'") }
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    var remote: RemoteConfig { RemoteConfig(instanceURL: url, accessToken: DevServerProcess.token) }

    /// A direct call to the server, outside any sync (the REST client alone).
    func call(_ method: String, _ path: String, body: String? = nil) throws -> Any? {
        let response = try RestClient(config: remote).send(method, path, body: body.map { Array($0.utf8) })
        guard !response.body.isEmpty else { return nil }
        return try JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed])
    }

    func count(_ soql: String) throws -> Int {
        ((try call("GET", "query?q=\(RemoteURL.encode(soql))") as? [String: Any])?["totalSize"] as? Int) ?? -1
    }
}
