// swift-tools-version:6.0
import Foundation
import PackageDescription

// Absolute paths for linker flags: SwiftPM does not run the linker from the package root.
let packageRoot = String(#filePath.dropLast("/Package.swift".count))

/// ABI major version (the soname's suffix): include/syncstore.h's SYNCSTORE_ABI_VERSION, the one
/// place it is written. Bump it there only with an incompatible change to the header.
let abiMajor: String = {
    let header = (try? String(contentsOfFile: packageRoot + "/include/syncstore.h", encoding: .utf8)) ?? ""
    let prefix = "#define SYNCSTORE_ABI_VERSION "
    guard let line = header.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else {
        fatalError("include/syncstore.h defines no SYNCSTORE_ABI_VERSION")
    }
    return line.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
}()

/// The library targets' release flags. Exclusive access to class properties and globals is
/// proved at compile time where it can be and checked at run time elsewhere; the run-time check
/// (a few percent of a lookup or an upsert) stays in debug builds, where every test runs too.
let releaseSpeed: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "SyncStore",
    products: [
        // libsyncstore.so: the C ABI. The Swift runtime is linked statically so hosts need no toolchain.
        .library(name: "syncstore", type: .dynamic, targets: ["SyncStoreC"]),
        .executable(name: "syncstore-devserver", targets: ["syncstore-devserver"]),
        // The command line tool (SwiftPM cannot give an executable the library's name).
        .executable(name: "syncstore-cli", targets: ["syncstore-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // syncstore-devserver: a pipeline handler answering `Expect: 100-continue` (already in Hummingbird's graph).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CJansson", path: "Sources/CJansson"),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl"),
        .systemLibrary(name: "CSyncStoreABI", path: "Sources/CSyncStoreABI"),
        // Encryption at rest: the page codec as a VFS over the system SQLite, on OpenSSL's libcrypto.
        .target(
            name: "CSyncStoreCipher",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("crypto"), .linkedLibrary("sqlite3")]
        ),
        // What the core and the dev server share (SQLite statements, clock, dates), without Foundation.
        .target(
            name: "SyncStoreSupport",
            dependencies: ["CSQLite"],
            swiftSettings: releaseSpeed
        ),
        // The store: soups, entries, queries, cursors, transactions, encryption. It knows no sync
        // type; the layers above attach to each open store through `StoreCompanion`.
        .target(
            name: "SyncStoreCore",
            // CSyncStoreABI (the header, no code): SYNCSTORE_VERSION.
            dependencies: ["SyncStoreSupport", "CSQLite", "CJansson", "CSyncStoreCipher", "CSyncStoreABI"],
            swiftSettings: releaseSpeed
        ),
        // Sync on the store: HTTP and the REST clients (Remote/), targets, sync down / up runs.
        .target(
            name: "SyncStoreSync",
            dependencies: ["SyncStoreCore", "SyncStoreSupport", "CSQLite", "CJansson", "CCurl"],
            swiftSettings: releaseSpeed
        ),
        // The hybrid plugins' native half (docs/hybrid-plugin.md), on the store and sync.
        .target(
            name: "SyncStorePlugin",
            dependencies: ["SyncStoreSync", "SyncStoreCore", "SyncStoreSupport", "CJansson", "CSyncStoreABI"],
            swiftSettings: releaseSpeed
        ),
        .target(
            name: "SyncStoreC",
            dependencies: ["SyncStorePlugin", "SyncStoreSync", "SyncStoreCore", "CSyncStoreABI"],
            exclude: ["exports.map"],
            swiftSettings: releaseSpeed,
            linkerSettings: [
                .unsafeFlags([
                    "-static-stdlib",
                    // Identical functions folded where no address is taken (the static stdlib's
                    // specializations): about 100 KB off the stripped library, which CMakeLists.txt
                    // bounds at 8 MiB.
                    "-Xlinker", "--icf=safe",
                    "-Xlinker", "-soname=libsyncstore.so.\(abiMajor)",
                    "-Xlinker", "--version-script=\(packageRoot)/Sources/SyncStoreC/exports.map",
                ]),
            ]
        ),
        // The dev server as a library: `syncstore-devserver` and `syncstore-cli serve/demo` run it.
        .target(
            name: "SyncStoreDevServer",
            dependencies: [
                "SyncStoreSupport", "CSQLite", "CJansson",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
        .executableTarget(
            name: "syncstore-devserver",
            dependencies: [
                "SyncStoreDevServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "syncstore-cli",
            dependencies: [
                "SyncStoreCore", "SyncStoreSync", "SyncStorePlugin", "SyncStoreSupport", "SyncStoreDevServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `inspect`: the store inspector's web server.
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            // The release build (what `cmake --install` installs) runs without the toolchain. Also
            // a compile flag: the module then asks for static Foundation's own libraries.
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))],
            // Without DWARF (symbols stay, for backtraces): 77 MB instead of 143.
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xlinker", "--strip-debug"], .when(configuration: .release))]
        ),
        .testTarget(
            name: "SyncStoreCoreTests",
            dependencies: ["SyncStoreCore", "SyncStoreSync", "SyncStorePlugin", "SyncStoreSupport", "CJansson", "CSQLite"]
        ),
    ]
)
