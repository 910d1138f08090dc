import ArgumentParser
import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync
import SyncStoreSupport

/// `status`: the sync states of a store.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the syncs of a store and their last state.",
        discussion: """
        The first line names the store's file and says whether it is encrypted (--json: \
        the sync states only). An encrypted store needs its key: --key-file or \
        $SYNCSTORE_KEY. A store this user cannot write is read as it is.

        Examples:
          syncstore-cli status --store main
          syncstore-cli status contacts-down --json
          syncstore-cli status --store main --key-file main.key
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Only these syncs (names).") var names: [String] = []

    func run() throws {
        let opened = try storeOptions.open(mustExist: true, readOnly: true)
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
            let problems = [s.conflicts > 0 ? plural(s.conflicts, "conflict") : nil, s.errors > 0 ? plural(s.errors, "error") : nil,
                            s.error.isEmpty ? nil : String(s.error.prefix(60))].compactMap { $0 }.joined(separator: "; ")
            table.add([String(s.id), s.name ?? "", s.kind == .syncDown ? "down" : "up", s.soupName, s.status.rawValue,
                       "\(s.progress)%", s.totalSize >= 0 ? String(s.totalSize) : "",
                       s.maxTimeStamp > 0 ? Timestamp.format(s.maxTimeStamp) : "", problems])
        }
        Console.out(table.render())
    }
}

/// `soup`: register, remove and list soups.
struct SoupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soup",
        abstract: "Register, remove or list the soups of a store.",
        discussion: """
        A soup holds JSON entries; its index specs name the paths queries and syncs \
        look up (types: string, integer, floating, full_text, json1). A soup a sync \
        fills needs at least its id field (Id) and __local__ indexed.

        Examples:
          syncstore-cli soup register contacts \\
              '[{"path":"Id","type":"string"},{"path":"__local__","type":"string"}]'
          syncstore-cli soup register --store-config userstore.json
          syncstore-cli soup list --json
          syncstore-cli soup remove contacts
        """,
        subcommands: [SoupListCommand.self, SoupRegisterCommand.self, SoupRemoveCommand.self])
}

/// `soup list` (and `soups`): soups, their index specs and entry counts.
struct SoupListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the soups of a store: index specs, entries, entries with local changes.",
        discussion: SoupListCommand.discussion)

    static let discussion = """
        The first line names the store's file and says whether it is encrypted (--json: \
        the soups only). An encrypted store needs its key: --key-file or \
        $SYNCSTORE_KEY. A store this user cannot write is read as it is.

        Examples:
          syncstore-cli soup list --root ./stores --store main
          syncstore-cli soup list --json
          SYNCSTORE_KEY="$(cat main.key)" syncstore-cli soup list --store main
        """

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        try SoupListCommand.list(storeOptions, output)
    }

    static func list(_ storeOptions: StoreOptions, _ output: OutputOptions) throws {
        let opened = try storeOptions.open(mustExist: true, readOnly: true)
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
                list.root.append(owned: soupJSON(row.name, entries: row.entries, dirty: row.dirty, specs: row.specs).root.retained())
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
            table.add([row.name, String(row.entries), String(row.dirty), specsText(row.specs)])
        }
        Console.out(table.render())
    }

    /// {"soupName", "entries", "dirty", "indexes"}: one soup in --json output.
    static func soupJSON(_ name: String, entries: Int64, dirty: Int64, specs: [IndexSpec]) -> JSONDocument {
        let item = JSONDocument.object()
        item.root.set("soupName", owned: JSONMake.string(name))
        item.root.set("entries", owned: JSONMake.int(entries))
        item.root.set("dirty", owned: JSONMake.int(dirty))
        if let list = try? JSONDocument.parse(IndexSpec.listJSON(specs)) { item.root.set("indexes", owned: list.root.retained()) }
        return item
    }

    static func specsText(_ specs: [IndexSpec]) -> String {
        specs.map { "\($0.path):\($0.type.rawValue)" }.joined(separator: ", ")
    }
}

/// `soups`: the same as `soup list` (kept for scripts written against it).
struct SoupsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soups",
        abstract: "The same as `soup list`.",
        discussion: SoupListCommand.discussion.replacingOccurrences(of: "soup list", with: "soups"))

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        try SoupListCommand.list(storeOptions, output)
    }
}

/// `soup register`: a soup from a name and index specs, or the soups of a userstore.json.
struct SoupRegisterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a soup with its index specs, or the soups of a userstore.json.",
        discussion: """
        The store is created when it does not exist yet. A soup that exists is kept as \
        it is (its entries and indexes); a different index spec for it is an error.

        Examples:
          syncstore-cli soup register contacts \\
              '[{"path":"Id","type":"string"},{"path":"__local__","type":"string"}]'
          syncstore-cli soup register --store-config userstore.json --store main
        """ + "\n\n" + SyncCommand.userStoreHelp)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions
    @Option(help: ArgumentHelp("A userstore.json: register each of its soups.", valueName: "path")) var storeConfig: String?
    @Argument(help: "The soup's name.") var soup: String?
    @Argument(help: ArgumentHelp("Its index specs: a JSON array of {\"path\", \"type\"}.", valueName: "index-specs")) var specs: String?

    func validate() throws {
        if storeConfig != nil {
            guard soup == nil else { throw ValidationError("Give a soup name and its index specs, or --store-config, not both") }
        } else if soup == nil || specs == nil {
            throw ValidationError("Give a soup name and its index specs (a JSON array), or --store-config userstore.json")
        }
    }

    func run() throws {
        let opened = try storeOptions.open(mustExist: false)
        defer { opened.close() }
        let store = opened.store
        if let storeConfig {
            let before = Set(store.soupNames)
            try store.loadStoreConfig(path: storeConfig)
            report(store, registered: store.soupNames.filter { !before.contains($0) }, kept: (try ConfigFile.names(in: storeConfig, list: "soups", key: "soupName", what: "store config") ?? []).filter(before.contains))
            return
        }
        guard let soup, let specs else { return }
        let specsDoc = try JSONDocument.parse(specs, what: "index specs")
        let parsed = try withExtendedLifetime(specsDoc) { try IndexSpec.parseList(specsDoc.root) }
        if store.soupExists(soup) {
            let existing = try store.indexSpecs(soup)
            guard existing == parsed else {
                throw StoreError(.exists, "Soup '\(soup)' exists with other indexes (\(SoupListCommand.specsText(existing))); remove it first (`syncstore-cli soup remove \(soup)`) or keep its indexes")
            }
            report(store, registered: [], kept: [soup])
            return
        }
        try store.registerSoup(soup, specs: parsed)
        report(store, registered: [soup], kept: [])
    }

    private func report(_ store: SmartStore, registered: [String], kept: [String]) {
        if output.json {
            let list = JSONDocument.array()
            for name in registered + kept {
                let counts = (try? store.entryCounts(soup: name)) ?? (entries: 0, dirty: 0)
                let item = SoupListCommand.soupJSON(name, entries: counts.entries, dirty: counts.dirty, specs: (try? store.indexSpecs(name)) ?? [])
                item.root.set("registered", owned: JSONMake.bool(registered.contains(name)))
                list.root.append(owned: item.root.retained())
            }
            Console.out(list.root.dump())
            return
        }
        for name in registered {
            Console.out("Registered soup '\(name)' (\(SoupListCommand.specsText((try? store.indexSpecs(name)) ?? []))) in \(store.path)")
        }
        for name in kept {
            Console.out("Soup '\(name)' already exists in \(store.path); kept as it is")
        }
    }

}

/// `soup remove`: drop a soup and its entries.
struct SoupRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a soup and every entry in it.",
        discussion: """
        A soup with local changes a sync up has not sent yet is kept unless --force is \
        given: those changes exist nowhere else.

        Examples:
          syncstore-cli soup remove contacts
          syncstore-cli soup remove contacts --force --store main
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "Remove it even when it holds local changes not synced up.") var force = false
    @Argument(help: "The soup's name.") var soup: String

    func run() throws {
        let opened = try storeOptions.open(mustExist: true)
        defer { opened.close() }
        let store = opened.store
        guard store.soupExists(soup) else {
            let names = store.soupNames.filter { $0 != "syncs_soup" }
            throw StoreError(.notFound, "Soup '\(soup)' does not exist in \(opened.path)" + (names.isEmpty ? " (it has no soups)" : "; its soups: " + names.joined(separator: ", ")))
        }
        let counts = try store.entryCounts(soup: soup)
        if counts.dirty > 0 && !force {
            throw CLIError("Soup '\(soup)' has \(plural(counts.dirty, "entry", "entries")) with local changes not synced up; sync them up first, or give --force to lose them", exitCode: ExitCodes.state)
        }
        try store.removeSoup(soup)
        if output.json {
            let doc = JSONDocument.object()
            doc.root.set("soupName", owned: JSONMake.string(soup))
            doc.root.set("removedEntries", owned: JSONMake.int(counts.entries))
            Console.out(doc.root.dump())
        } else {
            Console.out("Removed soup '\(soup)' and its \(plural(counts.entries, "entry", "entries")) from \(opened.path)")
        }
    }
}

/// `query`: Smart SQL or a query spec, printed as a table or JSON.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run Smart SQL or a query spec against a store.",
        discussion: """
        Smart SQL names soups and paths in braces: {soup} and {soup:path}; \
        {soup:_soup} is the whole entry. A table's columns are headed by the selected \
        expressions (or their AS names). A query spec is the JSON the Cordova plugin's \
        build*QuerySpec helpers make. A store this user cannot write is read as it is.

        Examples:
          syncstore-cli query "select {contacts:LastName}, count(*) \\
              from {contacts} group by {contacts:LastName}"
          syncstore-cli query --soup contacts --spec \\
              '{"queryType":"exact","indexPath":"LastName","matchKey":"Ng"}'
          syncstore-cli query --soup contacts --json --spec \\
              '{"queryType":"range","indexPath":"LastName","pageSize":20}'
          syncstore-cli query --key-file main.key --store main \\
              "select count(*) from {contacts}"
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
        let opened = try storeOptions.open(mustExist: true, readOnly: true)
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
        Console.out(QueryCommand.table(rows.map(\.root), smartSql: smartSql).render())
        Console.out(rows.count < total ? "(\(rows.count) of \(total) rows; --max-rows for more)" : "(\(total) rows)")
    }

    /// Smart SQL rows are arrays (columns by position, headed by the selected expressions);
    /// soup entries are objects (columns by key).
    static func table(_ rows: [JSON], smartSql: String? = nil) -> Table {
        if rows.allSatisfy(\.isArray) {
            let headings = smartSql.map(selectedColumns) ?? []
            let width = max(rows.map(\.count).max() ?? 0, rows.isEmpty ? headings.count : 0)
            var table = Table((0..<width).map { $0 < headings.count ? headings[$0] : "col\($0 + 1)" })
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

/// The headings of a Smart SQL query's columns: each selected expression, or its alias, with
/// {soup:path} shown as path; [] when the select list cannot be split (the table then says colN).
func selectedColumns(_ sql: String) -> [String] {
    let chars = Array(sql)
    func word(at i: Int, _ w: String) -> Bool {
        let letters = Array(w)
        guard i + letters.count <= chars.count else { return false }
        for (k, c) in letters.enumerated() where chars[i + k].lowercased() != String(c) { return false }
        let before = i == 0 || !(chars[i - 1].isLetter || chars[i - 1].isNumber || chars[i - 1] == "_")
        let end = i + letters.count
        let after = end == chars.count || !(chars[end].isLetter || chars[end].isNumber || chars[end] == "_")
        return before && after
    }
    var i = 0
    while i < chars.count && chars[i].isWhitespace { i += 1 }
    guard word(at: i, "select") else { return [] }
    i += 6
    var columns: [String] = []
    var current = ""
    var depth = 0
    var quote: Character? = nil
    while i < chars.count {
        let c = chars[i]
        if let q = quote {
            if c == q { quote = nil }
        } else if c == "'" || c == "\"" {
            quote = c
        } else if c == "(" || c == "{" || c == "[" {
            depth += 1
        } else if c == ")" || c == "}" || c == "]" {
            depth -= 1
        } else if depth == 0 && c == "," {
            columns.append(current)
            current = ""
            i += 1
            continue
        } else if depth == 0 && word(at: i, "from") {
            break
        }
        current.append(c)
        i += 1
    }
    columns.append(current)
    return columns.map(columnHeading)
}

/// `expr AS alias` -> alias; `{soup:path}` -> path; `{soup}` -> soup.
private func columnHeading(_ expression: String) -> String {
    let text = expression.trimmingCharacters(in: .whitespacesAndNewlines)
    let parts = text.split(whereSeparator: \.isWhitespace)
    if parts.count >= 3, parts[parts.count - 2].lowercased() == "as" {
        return String(parts[parts.count - 1]).trimmingCharacters(in: CharacterSet(charactersIn: "\"'`"))
    }
    var out = ""
    var inBraces = false
    var braced = ""
    for c in text {
        if c == "{" { inBraces = true; braced = ""; continue }
        if c == "}" && inBraces {
            inBraces = false
            out += braced.split(separator: ":", maxSplits: 1).last.map(String.init) ?? braced
            continue
        }
        if inBraces { braced.append(c) } else { out.append(c) }
    }
    return out.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}

/// `upsert`: write entries into a soup (as a host would, local-change flags included).
struct UpsertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upsert",
        abstract: "Insert or update soup entries from JSON (an object or an array), printing them as stored.",
        discussion: """
        An entry with _soupEntryId replaces that entry; with --external-id-path, an \
        entry whose value at that path matches an existing one replaces it. Mark \
        offline edits with the flags a sync up looks for (__local__, \
        __locally_created__, __locally_updated__, __locally_deleted__).

        Examples:
          syncstore-cli upsert --soup contacts \\
              '{"LastName":"Ng","attributes":{"type":"Contact"},
                "__local__":true,"__locally_created__":true}'
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
