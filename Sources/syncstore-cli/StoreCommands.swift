import ArgumentParser
import Foundation
import SyncStoreCore

/// `status`: the sync states of a store.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the syncs of a store and their last state.",
        discussion: """
        The first line names the store's file and says whether it is encrypted (--json: \
        the sync states only). An encrypted store needs its key: --key-file or $SYNCSTORE_KEY.

        Examples:
          syncstore-cli status --store main
          syncstore-cli status contacts-down --json
          syncstore-cli status --store main --key-file main.key     # an encrypted store
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Only these syncs (names).") var names: [String] = []

    func run() throws {
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        var states = try opened.store.syncStates()
        if !names.isEmpty {
            for name in names where !states.contains(where: { $0.name == name }) {
                throw StoreError(.notFound, "No sync named '\(name)' in store '\(storeOptions.store)'")
            }
            states = states.filter { names.contains($0.name ?? "") }
        }
        if output.json {
            Console.out("[" + states.map(\.jsonText).joined(separator: ",") + "]")
            return
        }
        Console.out(storeOptions.describe(opened))
        guard !states.isEmpty else {
            Console.out("No syncs in store '\(storeOptions.store)'.")
            return
        }
        var table = Table(["id", "name", "type", "soup", "status", "progress", "records", "last change", "problems"])
        for s in states {
            let problems = [s.conflicts > 0 ? "\(s.conflicts) conflicts" : nil, s.errors > 0 ? "\(s.errors) errors" : nil,
                            s.error.isEmpty ? nil : String(s.error.prefix(60))].compactMap { $0 }.joined(separator: "; ")
            table.add([String(s.id), s.name ?? "", s.kind == .syncDown ? "down" : "up", s.soupName, s.status.rawValue,
                       "\(s.progress)%", s.totalSize >= 0 ? String(s.totalSize) : "",
                       s.maxTimeStamp > 0 ? Timestamp.format(s.maxTimeStamp) : "", problems])
        }
        Console.out(table.render())
    }
}

/// `soups`: soups, their index specs and entry counts.
struct SoupsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soups",
        abstract: "List the soups of a store: index specs, entries, entries with local changes.",
        discussion: """
        The first line names the store's file and says whether it is encrypted (--json: \
        the soups only). An encrypted store needs its key: --key-file or $SYNCSTORE_KEY.

        Examples:
          syncstore-cli soups --root ./stores --store main
          syncstore-cli soups --json
          SYNCSTORE_KEY="$(cat main.key)" syncstore-cli soups --store main
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        let store = opened.store
        var rows: [(name: String, entries: Int64, dirty: Int64, specs: [IndexSpec])] = []
        for name in store.soupNames.sorted() {
            let counts = try store.entryCounts(soup: name)
            rows.append((name, counts.entries, counts.dirty, try store.indexSpecs(name)))
        }
        if output.json {
            let list = JSONDocument.array()
            for row in rows {
                let item = JSONDocument.object()
                item.root.set("soupName", owned: JSONMake.string(row.name))
                item.root.set("entries", owned: JSONMake.int(row.entries))
                item.root.set("dirty", owned: JSONMake.int(row.dirty))
                if let specs = try? JSONDocument.parse(IndexSpec.listJSON(row.specs)) { item.root.set("indexes", owned: specs.root.retained()) }
                list.root.append(owned: item.root.retained())
            }
            Console.out(list.root.dump())
            return
        }
        Console.out(storeOptions.describe(opened))
        guard !rows.isEmpty else {
            Console.out("Store '\(storeOptions.store)' has no soups.")
            return
        }
        var table = Table(["soup", "entries", "dirty", "indexes"])
        for row in rows {
            table.add([row.name, String(row.entries), String(row.dirty),
                       row.specs.map { "\($0.path):\($0.type.rawValue)" }.joined(separator: ", ")])
        }
        Console.out(table.render())
    }
}

/// `query`: Smart SQL or a query spec, printed as a table or JSON.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run Smart SQL or a query spec against a store.",
        discussion: """
        Smart SQL names soups and paths in braces: {soup} and {soup:path}; {soup:_soup} is the
        whole entry. A query spec is the JSON the Cordova plugin's build*QuerySpec helpers make.

        Examples:
          syncstore-cli query "select {contacts:LastName}, count(*) from {contacts} group by {contacts:LastName}"
          syncstore-cli query --soup contacts --spec '{"queryType":"exact","indexPath":"LastName","matchKey":"Smith","pageSize":50}'
          syncstore-cli query --soup contacts --spec '{"queryType":"range","indexPath":"LastName","pageSize":20}' --json
          syncstore-cli query --key-file main.key --store main "select count(*) from {contacts}"
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "A Smart SQL query (or use --spec).") var smartSql: String?
    @Option(help: "A query spec (JSON) for --soup.") var spec: String?
    @Option(help: "The soup a --spec queries.") var soup: String?
    @Option(help: "Most rows to print (the cursor is paged until then).") var maxRows = 1000

    func validate() throws {
        guard (smartSql == nil) != (spec == nil) else { throw ValidationError("Give a Smart SQL query or --spec, not both or neither") }
        if spec != nil && soup == nil { throw ValidationError("--spec needs --soup") }
        guard maxRows > 0 else { throw ValidationError("--max-rows must be positive") }
    }

    func run() throws {
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        let store = opened.store
        var page: JSONDocument
        if let smartSql {
            let specDoc = JSONDocument.object()
            specDoc.root.set("queryType", owned: JSONMake.string("smart"))
            specDoc.root.set("smartSql", owned: JSONMake.string(smartSql))
            specDoc.root.set("pageSize", owned: JSONMake.int(Int64(min(maxRows, 1000))))
            page = try JSONDocument.parse(try store.runSmartQuery(specJSON: specDoc.root.dump()).string, what: "cursor")
        } else {
            page = try JSONDocument.parse(try store.querySoup(soup ?? "", specJSON: spec ?? "").string, what: "cursor")
        }
        var rows: [JSONDocument] = []
        var total = Int(page.root["totalEntries"]?.int64 ?? 0)
        while true {
            for entry in page.root["currentPageOrderedEntries"]?.elements ?? [] where rows.count < maxRows {
                if let copy = entry.retained() { rows.append(JSONDocument(owning: copy)) }
            }
            let index = page.root["currentPageIndex"]?.int64 ?? 0
            let pages = page.root["totalPages"]?.int64 ?? 0
            guard let cursorId = page.root["cursorId"]?.int64 else { break }
            if rows.count >= maxRows || index + 1 >= pages {
                store.closeCursor(cursorId)
                break
            }
            page = try JSONDocument.parse(try store.moveCursor(cursorId, toPage: index + 1).string, what: "cursor")
        }
        total = max(total, rows.count)
        if output.json {
            let list = JSONDocument.array()
            for row in rows { list.root.append(owned: row.root.retained()) }
            Console.out(list.root.dump())
            return
        }
        Console.out(QueryCommand.table(rows.map(\.root)).render())
        Console.out(rows.count < total ? "(\(rows.count) of \(total) rows; --max-rows for more)" : "(\(total) rows)")
    }

    /// Smart SQL rows are arrays (columns by position); soup entries are objects (columns by key).
    static func table(_ rows: [JSON]) -> Table {
        if rows.allSatisfy(\.isArray) {
            let width = rows.map(\.count).max() ?? 0
            var table = Table((0..<width).map { "col\($0 + 1)" })
            for row in rows { table.add((0..<width).map { cellText(row[$0]) }) }
            return table
        }
        var keys: [String] = []
        for row in rows.prefix(50) {
            for (key, _) in row.members where key != "attributes" && !keys.contains(key) { keys.append(key) }
        }
        // Data first, then the store's and the sync's own keys.
        let own = keys.filter { $0.hasPrefix("_") }
        keys = Array((keys.filter { !$0.hasPrefix("_") } + own).prefix(10))
        var table = Table(keys)
        for row in rows { table.add(keys.map { cellText(row[$0], limit: 30) }) }
        return table
    }
}

/// `upsert`: write entries into a soup (as a host would, local-change flags included).
struct UpsertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upsert",
        abstract: "Insert or update soup entries from JSON (an object or an array), printing them as stored.",
        discussion: """
        An entry with _soupEntryId replaces that entry; with --external-id-path, an entry whose
        value at that path matches an existing one replaces it. Mark offline edits with the
        flags a sync up looks for (__local__, __locally_created__, __locally_updated__,
        __locally_deleted__).

        Examples:
          syncstore-cli upsert --soup contacts '{"LastName":"Ng","attributes":{"type":"Contact"},"__local__":true,"__locally_created__":true}'
          cat entries.json | syncstore-cli upsert --soup contacts -
        """)

    @OptionGroup var storeOptions: StoreOptions
    @Option(help: "The soup to write to.") var soup: String
    @Option(help: "Match existing entries by this path instead of _soupEntryId.") var externalIdPath: String?
    @Argument(help: "The entries as JSON, or - to read them from stdin.") var entries: String

    func run() throws {
        let text = entries == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : entries
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        Console.out(try opened.store.upsert(soup: soup, entriesJSON: text, externalIdPath: externalIdPath).string)
    }
}
