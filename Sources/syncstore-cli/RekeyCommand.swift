import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// `rekey`: encrypt a store, change its key, or decrypt it.
struct RekeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Encrypt a store, change its key, or decrypt it (atomically).",
        discussion: """
        The current key comes from --key-file or $SYNCSTORE_KEY (none for a store that is \
        not encrypted yet); the new key from --new-key-file or $SYNCSTORE_NEW_KEY, or \
        --decrypt removes the encryption. A key file holds a passphrase (one trailing \
        newline is ignored) or x'<64 hex digits>' (the raw 256-bit key). Keys are never \
        given on the command line: it shows in `ps` and in shell history.

        The whole store is written under the new key beside its file and renamed over \
        it: an interruption leaves a store that opens with exactly one of the two keys, \
        every entry in it. The store must not be open in another process and no sync of \
        it may run, else the exit code is 75 (BUSY) and nothing changed: retry once it is \
        closed. Keep the new key: the store cannot be opened without it. The new key's \
        PBKDF2 iterations are --new-kdf-iter, by default those of the current key \
        (\(StoreKey.defaultKdfIter) for a store not encrypted yet).

        Examples:
          # encrypt a store that is not encrypted yet
          syncstore-cli rekey --store main --new-key-file main.key
          # change the key
          syncstore-cli rekey --store main --key-file main.key --new-key-file new.key
          SYNCSTORE_KEY=$(cat main.key) SYNCSTORE_NEW_KEY=$(cat new.key) \\
              syncstore-cli rekey --store main
          # decrypt
          syncstore-cli rekey --store main --key-file new.key --decrypt
          # a Mobile SDK key (4000 iterations) to 256000 iterations
          syncstore-cli rekey --key-file sdk.key --kdf-iter 4000 \\
              --new-key-file sdk.key --new-kdf-iter 256000
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("File holding the new key (one trailing newline is ignored); default: $SYNCSTORE_NEW_KEY.",
                               valueName: "path"))
    var newKeyFile: String?

    @Option(help: ArgumentHelp("PBKDF2 iterations of the new key (default: those of the current key, else \(StoreKey.defaultKdfIter)).",
                               valueName: "n"))
    var newKdfIter: Int?

    @Flag(help: "Remove the encryption: the store becomes a plain SQLite file.")
    var decrypt = false

    /// Refused: a key on the command line shows in `ps` and in shell history.
    @Option(name: .customLong("new-key"), help: .hidden)
    var newKeyOnCommandLine: String?

    func validate() throws {
        try KeySource.refuse(newKeyOnCommandLine, option: "--new-key", instead: "--new-key-file PATH or $SYNCSTORE_NEW_KEY")
        if let newKdfIter, newKdfIter < 1 || newKdfIter > Int(Int32.max) {
            throw ValidationError("--new-kdf-iter must be from 1 to \(Int32.max)")
        }
        if decrypt {
            if newKeyFile != nil { throw ValidationError("Give --new-key-file or --decrypt, not both") }
            if newKdfIter != nil { throw ValidationError("--new-kdf-iter applies to a new key, not to --decrypt") }
            if let env = ProcessInfo.processInfo.environment["SYNCSTORE_NEW_KEY"], !env.isEmpty {
                throw ValidationError("$SYNCSTORE_NEW_KEY is set and --decrypt was given: unset it to decrypt, or leave --decrypt out to change the key")
            }
        }
    }

    func run() throws {
        let newText = decrypt ? nil : try KeySource.text(file: newKeyFile, fileOption: "--new-key-file", environment: "SYNCSTORE_NEW_KEY")
        if !decrypt && newText == nil {
            throw CLIError("No new key: give --new-key-file PATH or $SYNCSTORE_NEW_KEY, or --decrypt to remove the encryption", exitCode: ExitCodes.usage)
        }
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        let store = opened.store
        let wasEncrypted = store.isEncrypted
        let newKey = try newText.map { try StoreKey($0, kdfIter: newKdfIter ?? store.kdfIter) }
        var seconds = 0.0
        if newKey != nil || wasEncrypted {
            let started = Date()
            try opened.registry.changeKey(opened.handle, to: newKey)
            seconds = Date().timeIntervalSince(started)
        }
        let label = "Store '\(storeOptions.store)' (\(storeOptions.global ? "global" : "user"))"
        if output.json {
            let doc = JSONDocument.object()
            doc.root.set("store", owned: JSONMake.string(storeOptions.store))
            doc.root.set("global", owned: JSONMake.bool(storeOptions.global))
            doc.root.set("path", owned: JSONMake.string(opened.path))
            doc.root.set("wasEncrypted", owned: JSONMake.bool(wasEncrypted))
            doc.root.set("encrypted", owned: JSONMake.bool(store.isEncrypted))
            if store.isEncrypted, let newText, !KeySource.isRaw(newText) {
                doc.root.set("kdfIter", owned: JSONMake.int(Int64(store.kdfIter)))
            }
            doc.root.set("changed", owned: JSONMake.bool(newKey != nil || wasEncrypted))
            doc.root.set("seconds", owned: JSONMake.real((seconds * 1000).rounded() / 1000))
            Console.out(doc.root.dump())
            return
        }
        let time = String(format: "%.2f s", seconds)
        switch (wasEncrypted, newKey) {
        case (false, nil):
            Console.out("\(label) at \(opened.path): not encrypted, nothing to decrypt; encrypted: no")
        case (false, .some(let key)):
            Console.out("\(label) at \(opened.path): encrypted in \(time); encrypted: yes (\(KeySource.kind(newText ?? "", kdfIter: key.kdfIter)))")
        case (true, .some(let key)):
            Console.out("\(label) at \(opened.path): re-encrypted with the new key in \(time); encrypted: yes (\(KeySource.kind(newText ?? "", kdfIter: key.kdfIter)))")
        case (true, nil):
            Console.out("\(label) at \(opened.path): decrypted in \(time); encrypted: no")
        }
    }
}
