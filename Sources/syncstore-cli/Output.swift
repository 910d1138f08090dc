import Foundation
import SyncStoreCore

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
            Console.err(text + "   ", newline: false)
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
        let progress = SyncProgress(label: label, json: json)
        let id = try start { progress.update($0) }
        return try manager.wait(id: id, timeoutMs: timeoutMs)
    }
}

/// One line on a sync's end: status, counts, error.
func describe(_ state: SyncState) -> String {
    var text = "\(state.name ?? "sync \(state.id)") (\(state.kind == .syncDown ? "down" : "up"), soup \(state.soupName)): \(state.status.rawValue)"
    if state.totalSize >= 0 { text += ", \(state.totalSize) records" }
    if state.conflicts > 0 { text += ", \(state.conflicts) conflicts (entries \(state.conflictEntryIds.map(String.init).joined(separator: ", ")))" }
    if state.errors > 0 { text += ", \(state.errors) record errors (entries \(state.errorEntryIds.map(String.init).joined(separator: ", ")))" }
    if !state.error.isEmpty { text += "\n  \(state.error)" }
    return text
}
