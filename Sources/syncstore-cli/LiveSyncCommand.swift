import Foundation
import SyncStoreCore
import SyncStoreSupport
import SyncStoreSync

/// `sync --live`: the library's live sync (docs/sync.md#live-sync) on the store's syncs until
/// Ctrl-C, SIGTERM or --for; its state on one status line (a terminal), a line per event (not a
/// terminal) or the engine's events as JSON lines (--json), all on stdout.
struct LiveSyncSession {
    let opened: OpenedStore
    let manager: SyncManager
    /// The syncs by name; nil: every named sync of the store.
    let names: [String]?
    let debounceMs: Int64?
    let retryMinMs: Int64?
    let retryMaxMs: Int64?
    let pullIntervalMs: Int64?
    /// false: --no-change-events.
    let changeEvents: Bool
    let forSeconds: Double?
    let json: Bool
    let storeName: String

    /// The options JSON of syncstore_start_live_sync.
    var optionsJSON: String {
        let doc = JSONDocument.object()
        if let names {
            let list = JSONDocument.array()
            for name in names { list.root.append(owned: JSONMake.string(name)) }
            doc.root.set("syncs", owned: list.root.retained())
        }
        for (key, value) in [("debounceMs", debounceMs), ("retryMinMs", retryMinMs), ("retryMaxMs", retryMaxMs),
                             ("pullIntervalMs", pullIntervalMs)] {
            if let value { doc.root.set(key, owned: JSONMake.int(value)) }
        }
        if !changeEvents { doc.root.set("changeEvents", owned: JSONMake.bool(false)) }
        return doc.root.dump()
    }

    func run() throws {
        let options = try LiveSync.Options.parse(optionsJSON)
        let states = try opened.store.syncStates()
        if let names {
            for name in names where !states.contains(where: { $0.name == name }) {
                throw StoreError(.notFound, "No sync named '\(name)' in store '\(storeName)'; define it in a usersyncs.json given with --sync-config")
            }
        }
        let chosen = states.filter { state in
            guard let name = state.name, !name.isEmpty else { return false }
            return names?.contains(name) ?? true
        }
        let mode: LivePrinter.Mode = json ? .json : isatty(1) == 1 ? .terminal : .lines
        let printer = LivePrinter(mode: mode, syncs: chosen)
        // Signals are caught before the start: a Ctrl-C right after it still stops cleanly.
        let stop = WatchStop()
        // Live sync pushes other processes' writes (an app, `upsert`) as this process's.
        try manager.live.start(options, owner: opened.handle) { printer.event($0) }
        if mode == .json {
            let doc = JSONDocument.object()
            let live = JSONDocument.object()
            live.root.set("store", owned: JSONMake.string(storeName))
            live.root.set("path", owned: JSONMake.string(opened.path))
            let list = JSONDocument.array()
            for state in chosen { list.root.append(owned: JSONMake.string(state.name ?? "")) }
            live.root.set("syncs", owned: list.root.retained())
            live.root.set("options", owned: (try JSONDocument.parse(optionsJSON)).root.retained())
            doc.root.set("live", owned: live.root.retained())
            Console.err(doc.root.dump())
        } else {
            Console.err("Live sync of store '\(storeName)': " + chosen.map { "\($0.name ?? "") (\($0.kind == .syncUp ? "up" : "down"))" }.joined(separator: ", ")
                        + (forSeconds.map { "; for \(LivePrinter.seconds($0)) s" } ?? "") + "; Ctrl-C stops.")
        }
        printer.startTicking()
        stop.wait(timeoutSeconds: forSeconds)
        // Returns once the live sync thread has ended (its "stopped" event is held back); the
        // runs in progress are stopped as Ctrl-C stops `sync` (saved STOPPED, resumed by the next
        // run) and their last states printed, so "stopped" is the last event.
        manager.live.stop()
        try? manager.close(owner: opened.handle)
        printer.finish()
    }
}

/// Prints live sync's events (on the live sync thread and the sync worker thread, one at a time).
final class LivePrinter: @unchecked Sendable {
    enum Mode { case json, lines, terminal }
    let mode: Mode
    private let lock = NSLock()
    private var syncs: [Int64: (name: String, up: Bool)] = [:]
    private var phase = "connecting"
    private var count = 0
    private var nextRetryAt: Int64?
    private var error: String?
    /// The change stream's state and the events it received, when it streams.
    private var changeEvents: (state: String, events: Int64)?
    /// Runs going on: sync id to percent.
    private var running: [Int64: Int] = [:]
    private var lastRun: String?
    private var drawn = ""
    private var timer: DispatchSourceTimer?
    /// The "stopped" event, printed by `finish` after the last runs' states.
    private var stoppedEvent: String?

    init(mode: Mode, syncs: [SyncState]) {
        self.mode = mode
        for state in syncs { self.syncs[state.id] = (state.name ?? "sync \(state.id)", state.kind == .syncUp) }
        count = syncs.count
    }

    func event(_ text: String) {
        lock.withLock {
            guard let doc = try? JSONDocument.parse(text, what: "live sync event") else { return }
            let root = doc.root
            let stopped = root["event"]?.string == "state" && root["state"]?.string == "stopped"
            if stopped { stoppedEvent = text }
            if mode == .json && !stopped { Console.out(WatchPrinter.oneLine(text)) }
            switch root["event"]?.string {
            case "state":
                phase = root["state"]?.string ?? "?"
                nextRetryAt = root["nextRetryAt"]?.int64
                error = root["error"]?.string
                changeEvents = root["changeEvents"].map { ($0["state"]?.string ?? "?", $0["events"]?.int64 ?? 0) }
                if let ids = root["syncs"]?.elements, !ids.isEmpty { count = ids.count }
                if phase == "stopped" { running.removeAll() }
                if mode == .lines && !stopped { Console.out(WatchPrinter.clock() + "  " + statusText(now: Clock.nowMillis(), withRun: false)) }
            case "run":
                guard let sync = root["sync"] else { return }
                let id = sync["_soupEntryId"]?.int64 ?? sync["id"]?.int64 ?? 0
                let name = sync["name"]?.string ?? syncs[id]?.name ?? "sync \(id)"
                let status = sync["status"]?.string ?? "?"
                let percent = Int(sync["progress"]?.int64 ?? 0)
                if status == "RUNNING" || status == "NEW" {
                    let started = running[id] == nil
                    running[id] = percent
                    if mode == .lines && started { Console.out(WatchPrinter.clock() + "  run \(name): \(status)") }
                } else {
                    running[id] = nil
                    var summary = "\(name) \(status)"
                    if status == "DONE", let total = sync["totalSize"]?.int64, total >= 0 { summary += " (" + plural(total, "record") + ")" }
                    let conflicts = sync["conflicts"]?.int64 ?? 0, errors = sync["errors"]?.int64 ?? 0
                    if conflicts > 0 { summary += ", " + plural(conflicts, "conflict") }
                    if errors > 0 { summary += ", " + plural(errors, "record error") }
                    lastRun = summary + " " + LivePrinter.clockSeconds()
                    if mode == .lines {
                        let message = sync["error"]?.string ?? ""
                        Console.out(WatchPrinter.clock() + "  run " + summary + (message.isEmpty ? "" : ": " + message))
                    }
                }
            default:
                return
            }
            if mode == .terminal { draw() }
        }
    }

    /// "live · 2 syncs · last run contacts-up DONE (3 records) 12:03:04",
    /// "offline · retry in 3.2 s · <error>".
    func statusText(now: Int64, withRun: Bool = true) -> String {
        var parts = [phase == "catchingUp" ? "catching up" : phase, plural(count, "sync")]
        if phase == "offline", let nextRetryAt {
            parts.append("retry in " + LivePrinter.seconds(Double(max(0, nextRetryAt - now)) / 1000) + " s")
        }
        if let changeEvents { parts.append("change events \(changeEvents.state) (\(changeEvents.events))") }
        if withRun {
            let going = running.sorted { $0.key < $1.key }.map { "\(syncs[$0.key]?.name ?? "sync \($0.key)") \($0.value)%" }
            if !going.isEmpty { parts.append("running " + going.joined(separator: ", ")) }
            // Offline: the error says more than the run that failed with it.
            if let lastRun, phase != "offline" { parts.append("last run " + lastRun) }
        }
        if let error, !error.isEmpty { parts.append(error) }
        return parts.joined(separator: " · ")
    }

    /// Rewrites the status line (cut to the terminal's width: a wrapped line could not be rewritten).
    private func draw() {
        var text = statusText(now: Clock.nowMillis()).replacingOccurrences(of: "\n", with: " ")
        let width = LivePrinter.columns()
        if text.count > width - 1 { text = String(text.prefix(max(1, width - 2))) + "…" }
        guard text != drawn else { return }
        drawn = text
        FileHandle.standardOutput.write(Data(("\r" + text + "\u{1B}[K").utf8))
    }

    /// On a terminal, the countdown of "offline" moves on between events.
    func startTicking() {
        guard mode == .terminal else { return }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(200), repeating: .milliseconds(200))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            self.lock.withLock { self.draw() }
        }
        timer.resume()
        lock.withLock { self.timer = timer }
    }

    /// After the last event: the status line ends with a newline.
    func finish() {
        lock.withLock {
            timer?.cancel()
            timer = nil
            if let stoppedEvent {
                phase = "stopped"
                running.removeAll()
                switch mode {
                case .json: Console.out(WatchPrinter.oneLine(stoppedEvent))
                case .lines: Console.out(WatchPrinter.clock() + "  " + statusText(now: Clock.nowMillis(), withRun: false))
                case .terminal: break
                }
            }
            if mode == .terminal {
                draw()
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        }
    }

    static func columns() -> Int {
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 100
    }

    /// "3.2", "12".
    static func seconds(_ value: Double) -> String {
        value < 10 ? String(format: "%.1f", value) : String(Int(value.rounded()))
    }

    static func clockSeconds() -> String { String(WatchPrinter.clock().prefix(8)) }
}

