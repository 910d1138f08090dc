import Foundation
import SyncStoreCore
import SyncStorePlugin
import SyncStoreSync

/// Writes text to stdout or stderr without buffering surprises between the two.
enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func err(_ text: String, newline: Bool = true) {
        FileHandle.standardError.write(Data((newline ? text + "\n" : text).utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// Plain-text tables with aligned columns.
struct Table {
    let headers: [String]
    var rows: [[String]] = []

    init(_ headers: [String]) { self.headers = headers }

    mutating func add(_ row: [String]) { rows.append(row) }

    func render() -> String {
        var widths = headers.map { $0.count }
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        var lines = [line(headers), widths.enumerated().map { i, w in String(repeating: "-", count: i == widths.count - 1 ? max(w, headers[i].count) : w) }.joined(separator: "  ")]
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}

/// A JSON value as a short table cell.
func cellText(_ value: JSON?, limit: Int = 40) -> String {
    guard let value else { return "" }
    let text: String
    switch value.kind {
    case .null: text = ""
    case .string: text = value.string ?? ""
    default: text = value.dump()
    }
    let flat = text.replacingOccurrences(of: "\n", with: " ")
    return flat.count > limit ? String(flat.prefix(limit - 1)) + "…" : flat
}

/// Runs one sync to its end, showing its progress: a bar on a terminal (records, records/s,
/// ETA), a line per step otherwise, JSON lines with --json (all on stderr).
final class SyncProgress: @unchecked Sendable {
    let label: String
    let json: Bool
    private let lock = NSLock()
    private let started = Date()
    private var lastLine = Date.distantPast
    private var lastPercent = -1
    private var drewBar = false
    /// Records this run has handled, as its updates said (-1: none said yet).
    private(set) var recordsDone: Int64 = -1

    init(label: String, json: Bool) {
        self.label = label
        self.json = json
    }

    /// The engine's status callback (called on the store's sync thread).
    func update(_ stateJSON: String) {
        lock.lock()
        defer { lock.unlock() }
        if json {
            // stdout carries only the result; machines read progress as JSON lines on stderr.
            let event = JSONDocument.object()
            event.root.set("event", owned: JSONMake.string("sync"))
            event.root.set("label", owned: JSONMake.string(label))
            if let state = try? JSONDocument.parse(stateJSON) { event.root.set("state", owned: state.root.retained()) }
            Console.err(event.root.dump())
            return
        }
        guard let doc = try? JSONDocument.parse(stateJSON) else { return }
        let status = doc.root["status"]?.string ?? ""
        let percent = Int(doc.root["progress"]?.int64 ?? 0)
        let total = doc.root["totalSize"]?.int64 ?? -1
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        // A run's first update still carries the previous run's total: counts start with progress.
        let done = total > 0 && (percent > 0 || status != "RUNNING") ? total * Int64(percent) / 100 : -1
        if status == "RUNNING" && done >= 0 { recordsDone = done }
        if Console.stderrIsTerminal {
            let width = 30
            let filled = width * percent / 100
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            var text = "\r\(label) [\(bar)] \(percent)%"
            if done >= 0 {
                let rate = Double(done) / elapsed
                text += "  \(done)/\(total) records  \(Int(rate)) rec/s"
                if rate > 0, percent < 100 { text += "  ETA \(Int(Double(total - done) / rate)) s" }
            }
            // Erase to the end of the line: a shorter line must not keep the end of a longer one.
            Console.err(text + "\u{1B}[K", newline: false)
            drewBar = true
            if status != "RUNNING" && status != "NEW" { Console.err(""); drewBar = false }
        } else if status != "RUNNING" || percent >= lastPercent + 25 || Date().timeIntervalSince(lastLine) > 2 {
            lastPercent = percent
            lastLine = Date()
            Console.err("\(label): \(status) \(percent)%" + (done >= 0 ? " (\(done)/\(total) records)" : ""))
        }
    }

    /// Starts a run with `start` (given the callback), waits for it and returns its final state.
    static func run(_ manager: SyncManager, label: String, json: Bool, timeoutMs: Int64 = -1,
                    _ start: (@escaping SyncCallback) throws -> Int64) throws -> SyncState {
        try runCounting(manager, label: label, json: json, timeoutMs: timeoutMs, start).state
    }

    /// `run`, with the records the run handled before it ended (-1: unknown): a state's
    /// totalSize is what the server announced, not what was stored before a failure.
    static func runCounting(_ manager: SyncManager, label: String, json: Bool, timeoutMs: Int64 = -1,
                            _ start: (@escaping SyncCallback) throws -> Int64) throws -> (state: SyncState, records: Int64) {
        let progress = SyncProgress(label: label, json: json)
        // Before the start: its first callback may come before `start` returns.
        Interrupt.running(manager, label: label)
        defer { Interrupt.running(nil, label: label) }
        let id = try start { progress.update($0) }
        let state = try manager.wait(id: id, timeoutMs: timeoutMs)
        return (state, progress.lock.withLock { progress.recordsDone })
    }
}

/// The write end of the pipe the signal handler writes to (a signal handler may only do that much).
nonisolated(unsafe) private var interruptWriteFD: Int32 = -1

/// Ctrl-C (SIGINT) or SIGTERM while a sync runs: the syncs are stopped (their state saved as
/// STOPPED), the command says so and how to resume, and exits 130. A second Ctrl-C exits at once.
enum Interrupt {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var manager: SyncManager?
    nonisolated(unsafe) private static var label = ""
    nonisolated(unsafe) private(set) static var stopped = false
    nonisolated(unsafe) private static var installed = false

    /// Handles the signals from now on (once per process): the handler writes a byte to a pipe,
    /// and a thread reading it stops the sync.
    static func install() {
        lock.withLock {
            guard !installed else { return }
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { return }
            installed = true
            interruptWriteFD = fds[1]
            let readFD = fds[0]
            Thread.detachNewThread {
                var byte: UInt8 = 0
                while read(readFD, &byte, 1) == 1 { received() }
            }
            for sig in [SIGINT, SIGTERM] {
                signal(sig) { _ in
                    var byte: UInt8 = 1
                    _ = write(interruptWriteFD, &byte, 1)
                }
            }
        }
    }

    static func running(_ manager: SyncManager?, label: String) {
        lock.withLock {
            self.manager = manager
            self.label = label
        }
    }

    private static func received() {
        let (manager, label, again): (SyncManager?, String, Bool) = lock.withLock {
            defer { stopped = true }
            return (self.manager, self.label, stopped)
        }
        if again || manager == nil {
            SyncStoreCLI.fail("Stopped by Ctrl-C before the sync's state was saved; run the same command again", code: "STOPPED", exitCode: ExitCodes.interrupted)
        }
        let text = "Interrupted: stopping \(label.trimmingCharacters(in: .whitespaces)) (its state is saved; Ctrl-C again to quit at once)"
        if SyncStoreCLI.wantsJSON {
            let event = JSONDocument.object()
            event.root.set("event", owned: JSONMake.string("interrupted"))
            event.root.set("message", owned: JSONMake.string(text))
            Console.err(event.root.dump())
        } else {
            Console.err("\nsyncstore-cli: " + text)
        }
        manager?.stop()
    }
}

/// "1 conflict", "2 conflicts".
func plural<N: BinaryInteger>(_ n: N, _ one: String, _ many: String? = nil) -> String {
    "\(n) \(n == 1 ? one : many ?? one + "s")"
}

/// One line on a sync's end: status, counts, error. `records`: what this run handled, when its
/// progress said (a run that did not end DONE still carries the previous run's total).
func describe(_ state: SyncState, records: Int64 = -1) -> String {
    var text = "\(state.name ?? "sync \(state.id)") (\(state.kind == .syncDown ? "down" : "up"), soup \(state.soupName)): \(state.status.rawValue)"
    if state.status == .done {
        if state.totalSize >= 0 { text += ", " + plural(state.totalSize, "record") }
    } else if records >= 0 {
        text += " after " + plural(records, "record")
    }
    if state.conflicts > 0 { text += ", " + plural(state.conflicts, "conflict") + " (entries \(state.conflictEntryIds.map(String.init).joined(separator: ", ")))" }
    if state.errors > 0 { text += ", " + plural(state.errors, "record error") + " (entries \(state.errorEntryIds.map(String.init).joined(separator: ", ")))" }
    if !state.error.isEmpty { text += "\n  \(state.error)" + hint(forError: state.error) }
    return text
}

/// What the CLI adds to an engine message: the option that fixes it.
func hint(forError message: String) -> String {
    message.contains("\"caBundle\"")
        ? "\n  syncstore-cli: trust the server's certificate authority with --ca-bundle PATH (a PEM file; `serve --tls self-signed` prints its own)"
        : ""
}
