import ArgumentParser
import Foundation
import SyncStoreCore

/// `watch`: a store's changes as they happen, from the library's change listeners.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a query's result, a soup's changes or every soup's changes as they happen.",
        discussion: """
        With a Smart SQL query (or --spec and --soup) it prints the query's result at once, \
        then each time a commit changes it: what entered, left or changed, and the first \
        page. With --soup alone (or --all) it prints what each commit did to that soup \
        (every soup): entries inserted, updated and deleted, and who wrote (this process, \
        a sync, or another process: `upsert`, an app, a sync elsewhere). A listener \
        never falls behind: commits made while a notice waits are told in it, merged.

        --json prints each notice as one JSON line on stdout (the library's notice, as \
        syncstore.h describes it), after a line {"watching": ...} on stderr once the \
        listener is in place. It runs until Ctrl-C or SIGTERM (exit 0), or until --count \
        notices were printed. A store this user cannot write is read as it is.

        Examples:
          syncstore-cli watch --soup contacts
          syncstore-cli watch --all --json
          syncstore-cli watch "select {contacts:LastName}, count(*) from {contacts} \\
              group by {contacts:LastName}"
          syncstore-cli watch --soup contacts --json --spec \\
              '{"queryType":"exact","indexPath":"LastName","matchKey":"Ng"}'
          syncstore-cli watch --soup contacts --count 1 --json   # the next change
        """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "A Smart SQL query to watch (or use --spec with --soup, or --soup alone).") var smartSql: String?
    @Option(help: "A query spec (JSON) on --soup to watch, as `query --spec` takes it.") var spec: String?
    @Option(help: "The soup to watch (with --spec: the soup the spec queries).") var soup: String?
    @Flag(help: "Watch every soup of the store.") var all = false
    @Option(help: ArgumentHelp("Exit after printing this many notices.", valueName: "n")) var count: Int?
    @Option(help: ArgumentHelp("Least time between two notices, in ms (commits meanwhile are merged; default 0).",
                               valueName: "ms")) var minInterval: Int64 = 0
    @Option(help: ArgumentHelp("Rows each notice of a query carries (its first page).", valueName: "n")) var pageSize = 20

    func validate() throws {
        if smartSql != nil {
            guard spec == nil, soup == nil, !all else {
                throw ValidationError("Give a Smart SQL query, --spec with --soup, --soup or --all: one of them")
            }
        } else if spec != nil {
            guard soup != nil else { throw ValidationError("--spec needs --soup") }
            guard !all else { throw ValidationError("Give --spec with --soup, or --all, not both") }
        } else if all == (soup != nil) {
            throw ValidationError("Say what to watch: a Smart SQL query, --spec with --soup, --soup or --all")
        }
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
        guard (0...3_600_000).contains(minInterval) else { throw ValidationError("--min-interval must be from 0 to 3600000") }
        guard (1...1000).contains(pageSize) else { throw ValidationError("--page-size must be from 1 to 1000") }
    }

    /// What is watched, for the first line.
    private var subject: String {
        if let smartSql { return "query \(smartSql)" }
        if let spec, let soup { return "query \(spec) on soup '\(soup)'" }
        if let soup { return "soup '\(soup)'" }
        return "every soup"
    }

    func run() throws {
        let opened = try storeOptions.open(mustExist: true, readOnly: true)
        defer { opened.close() }
        let store = opened.store
        let printer = WatchPrinter(json: output.json, smartSql: smartSql, limit: count)
        let stop = WatchStop()
        let listeners = try ChangeListeners.of(store)
        let token: Int64
        if smartSql != nil || spec != nil {
            token = try listeners.addQuery(store: store, specJSON: try querySpec(), owner: opened.handle) { printer.show($0, stop) }
        } else {
            token = try listeners.add(store: store, soup: soup, owner: opened.handle) { printer.show($0, stop) }
        }
        defer { try? listeners.remove(token) }
        if minInterval > 0 { try listeners.setInterval(token, milliseconds: minInterval) }
        if output.json {
            let doc = JSONDocument.object()
            let watching = JSONDocument.object()
            watching.root.set("store", owned: JSONMake.string(storeOptions.store))
            watching.root.set("path", owned: JSONMake.string(opened.path))
            if let smartSql { watching.root.set("smartSql", owned: JSONMake.string(smartSql)) }
            if let spec { watching.root.set("spec", owned: JSONMake.string(spec)) }
            if let soup { watching.root.set("soup", owned: JSONMake.string(soup)) }
            if all { watching.root.set("all", owned: JSONMake.bool(true)) }
            doc.root.set("watching", owned: watching.root.retained())
            Console.err(doc.root.dump())
        } else {
            Console.err("Watching \(subject). \(storeOptions.describe(opened)). Ctrl-C stops.")
        }
        stop.wait()
    }

    /// The listener's spec: the Smart SQL as a smart spec, or --spec with "soupName" set to --soup.
    private func querySpec() throws -> String {
        if let smartSql {
            let doc = JSONDocument.object()
            doc.root.set("queryType", owned: JSONMake.string("smart"))
            doc.root.set("smartSql", owned: JSONMake.string(smartSql))
            doc.root.set("pageSize", owned: JSONMake.int(Int64(pageSize)))
            return doc.root.dump()
        }
        let doc = try JSONDocument.parse(spec ?? "", what: "query spec")
        guard doc.root.isObject else { throw StoreError(.argument, "The query spec must be a JSON object") }
        doc.root.set("soupName", owned: JSONMake.string(soup ?? ""))
        if doc.root["pageSize"] == nil { doc.root.set("pageSize", owned: JSONMake.int(Int64(pageSize))) }
        return doc.root.dump()
    }
}

/// Ends the wait of `watch`: Ctrl-C or SIGTERM, or the last notice of --count.
final class WatchStop: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var sources: [DispatchSourceSignal] = []

    init() {
        sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [done] in done.signal() }
            source.resume()
            return source
        }
    }

    func finish() { done.signal() }

    /// Returns on a signal, `finish()`, or after `timeoutSeconds` (nil: no limit).
    func wait(timeoutSeconds: Double? = nil) {
        if let timeoutSeconds {
            _ = done.wait(timeout: .now() + .milliseconds(Int(timeoutSeconds * 1000)))
        } else {
            done.wait()
        }
        sources.forEach { $0.cancel() }
    }
}

/// Prints notices (on the store's notifier thread, one at a time): a line each, with the
/// query's first page as a table; one JSON line each with --json.
final class WatchPrinter: @unchecked Sendable {
    let json: Bool
    let smartSql: String?
    let limit: Int?
    private let lock = NSLock()
    private var printed = 0

    init(json: Bool, smartSql: String?, limit: Int?) {
        self.json = json
        self.smartSql = smartSql
        self.limit = limit
    }

    func show(_ notice: String, _ stop: WatchStop) {
        let last: Bool? = lock.withLock {
            if let limit, printed >= limit { return nil }  // told after the last one: not printed
            printed += 1
            return printed == limit
        }
        guard let last else { return }
        Console.out(json ? WatchPrinter.oneLine(notice) : text(notice))
        if last { stop.finish() }
    }

    /// The notice on one line (a JSON line), as the library wrote it when it is one already.
    static func oneLine(_ notice: String) -> String {
        guard notice.utf8.contains(UInt8(ascii: "\n")), let doc = try? JSONDocument.parse(notice) else { return notice }
        return doc.root.dump()
    }

    private func text(_ notice: String) -> String {
        guard let doc = try? JSONDocument.parse(notice) else { return notice }
        let root = doc.root
        // "sequence" counts this process's commits: not shown for another process's.
        let other = root["origin"]?["kind"]?.string == "otherProcess" || root["origin"]?["kind"]?.string == "initial"
        var head = WatchPrinter.clock() + (other ? "" : "  #\(root["sequence"]?.int64 ?? 0)")
        let commits = root["commits"]?.int64 ?? 1
        let origin = WatchPrinter.origin(root["origin"])
        if root["soups"] != nil {
            var lines: [String] = []
            for part in root["soups"]?.elements ?? [] {
                lines.append("\(head)  \(part["soup"]?.string ?? "?"): \(WatchPrinter.soupChange(part))  [\(origin)\(commits > 1 ? ", \(commits) commits" : "")]")
            }
            return lines.isEmpty ? "\(head)  (no soup of this listener)  [\(origin)]" : lines.joined(separator: "\n")
        }
        let total = root["totalEntries"]?.int64 ?? 0
        var parts: [String] = []
        for (key, word) in [("added", "added"), ("removed", "removed"), ("changed", "changed")] {
            let n = root[key]?["count"]?.int64 ?? 0
            if n > 0 { parts.append("\(n) \(word)") }
        }
        head += "  \(plural(total, "row", "rows"))" + (parts.isEmpty ? "" : ": " + parts.joined(separator: ", "))
            + "  [\(origin)\(commits > 1 ? ", \(commits) commits" : "")]"
        let rows = root["currentPageOrderedEntries"]?.elements ?? []
        guard !rows.isEmpty else { return head }
        let shown = Int64(rows.count) < total ? "\n(first \(rows.count) of \(total) rows)" : ""
        return head + "\n" + QueryCommand.table(rows, smartSql: smartSql).render() + shown
    }

    /// "2 inserted (1, 2), 1 deleted (7)"; cleared, removed, or unknown entries when so.
    static func soupChange(_ part: JSON) -> String {
        var parts: [String] = []
        if part["removed"]?.bool == true { parts.append("soup removed") }
        if part["cleared"]?.bool == true { parts.append("cleared") }
        for key in ["inserted", "updated", "deleted"] {
            guard let list = part[key], let n = list["count"]?.int64, n > 0 else { continue }
            let ids = (list["ids"]?.elements ?? []).prefix(10).map { String($0.int64 ?? 0) }
            let more = n > Int64(ids.count) ? ", …" : ""
            parts.append("\(n) \(key) (\(ids.joined(separator: ", "))\(more))")
        }
        if part["unknown"]?.bool == true { parts.append(parts.isEmpty ? "changed, which entries is not known" : "which entries else is not known") }
        return parts.isEmpty ? "changed" : parts.joined(separator: ", ")
    }

    /// "this handle", "another handle", "sync 'name'", "another process", "initial".
    static func origin(_ origin: JSON?) -> String {
        switch origin?["kind"]?.string {
        case "handle": return "this watch"
        case "otherHandle", "process": return "another handle of this process"
        case "otherProcess": return "another process"
        case "initial": return "current result"
        case "sync":
            if let name = origin?["syncName"]?.string { return "sync '\(name)'" }
            return origin?["syncId"]?.int64.map { "sync \($0)" } ?? "a sync"
        case let kind?: return kind
        case nil: return "?"
        }
    }

    static func clock() -> String {
        var now = timeval()
        gettimeofday(&now, nil)
        var seconds = time_t(now.tv_sec)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, Int(now.tv_usec) / 1000)
    }
}
