import CJansson
import SyncStoreSupport
import SyncStoreCore

/// The persisted state of one sync (docs/sync.md#sync-state). Stored as an entry of the soup `syncs_soup`,
/// whose `_soupEntryId` is the sync id, so syncs survive restarts.
package struct SyncState: Sendable {
    package enum Kind: String, Sendable { case syncDown, syncUp }
    package enum Status: String, Sendable { case new = "NEW", running = "RUNNING", done = "DONE", failed = "FAILED", stopped = "STOPPED" }

    package var id: Int64 = 0
    package var kind: Kind
    package var name: String?
    /// The target, parsed once (when the sync is created or its state read from the store).
    package let target: SyncTarget
    /// Options are kept as JSON text.
    package var optionsJSON: String
    package var soupName: String
    package var status: Status = .new
    package var progress = 0
    package var totalSize: Int64 = -1
    package var maxTimeStamp: Int64 = -1
    package var startTime: Int64 = 0
    package var endTime: Int64 = 0
    package var error = ""
    /// SYNCSTORE_ERR_* code of the failure, 0 when none: hosts decide on codes, not messages.
    package var errorCode: Int32 = 0
    /// Whether the failure may pass when the run is started again unchanged (the error's own
    /// `retryable`: a network failure, a 5xx, BUSY), false when none.
    package var errorRetryable = false
    /// Sync up: records left dirty because the server copy changed (LEAVE_IF_CHANGED).
    package var conflicts = 0
    /// Sync up: records left dirty because the server refused them (their `__last_error__` says why).
    package var errors = 0
    /// `_soupEntryId`s of those records (at most `maxListedIds` each).
    package var conflictEntryIds: [Int64] = []
    package var errorEntryIds: [Int64] = []
    package static let maxListedIds = 1000

    package var isTerminal: Bool { status == .done || status == .failed || status == .stopped }

    /// The target JSON, as the state JSON carries it.
    package var targetJSON: String { target.text }

    package init(kind: Kind, name: String?, target: SyncTarget, optionsJSON: String, soupName: String) {
        self.kind = kind
        self.name = name
        self.target = target
        self.optionsJSON = optionsJSON
        self.soupName = soupName
    }

    /// The state as one JSON object (what callbacks and getSyncStatus return).
    package func json() -> JSONDocument {
        let doc = JSONDocument.object()
        let o = doc.root
        o.set("_soupEntryId", owned: JSONMake.int(id))
        o.set("type", owned: JSONMake.string(kind.rawValue))
        o.set("name", owned: name.map { JSONMake.string($0) } ?? JSONMake.null())
        o.set("target", owned: target.retainedCopy())
        o.set("options", owned: (try? JSONDocument.parse(optionsJSON)).map { $0.root.retained() } ?? JSONMake.null())
        o.set("soupName", owned: JSONMake.string(soupName))
        o.set("status", owned: JSONMake.string(status.rawValue))
        o.set("progress", owned: JSONMake.int(Int64(progress)))
        o.set("totalSize", owned: JSONMake.int(totalSize))
        o.set("maxTimeStamp", owned: JSONMake.int(maxTimeStamp))
        o.set("startTime", owned: JSONMake.int(startTime))
        o.set("endTime", owned: JSONMake.int(endTime))
        o.set("error", owned: JSONMake.string(error))
        o.set("errorCode", owned: JSONMake.int(Int64(errorCode)))
        o.set("errorRetryable", owned: JSONMake.bool(errorRetryable))
        o.set("conflicts", owned: JSONMake.int(Int64(conflicts)))
        if kind == .syncUp {
            o.set("errors", owned: JSONMake.int(Int64(errors)))
            o.set("conflictEntryIds", owned: SyncState.idList(conflictEntryIds))
            o.set("errorEntryIds", owned: SyncState.idList(errorEntryIds))
        }
        return doc
    }

    package var jsonText: String { json().root.dump() }

    private static func idList(_ ids: [Int64]) -> UnsafeMutablePointer<json_t>? {
        let list = JSONDocument.array()
        for id in ids { list.root.append(owned: JSONMake.int(id)) }
        return list.root.retained()
    }

    /// Counts a sync up batch's per-record problems.
    package mutating func record(_ entryIds: [Int64], _ outcomes: [SyncUpTask.Outcome]) {
        for (id, outcome) in zip(entryIds, outcomes) {
            switch outcome {
            case .conflict:
                conflicts += 1
                if conflictEntryIds.count < SyncState.maxListedIds { conflictEntryIds.append(id) }
            case .failed:
                errors += 1
                if errorEntryIds.count < SyncState.maxListedIds { errorEntryIds.append(id) }
            default:
                break
            }
        }
    }

    /// The state of a run that has been started: RUNNING from progress 0, no report yet.
    package mutating func beginRun() {
        status = .running
        progress = 0
        startTime = Clock.nowMillis()
        endTime = 0
        resetRunReport()
    }

    /// Clears what a previous run reported (a run that fails before it learns its size must not
    /// report the previous run's).
    private mutating func resetRunReport() {
        error = ""
        errorCode = 0
        errorRetryable = false
        totalSize = -1
        if kind == .syncUp {
            conflicts = 0
            errors = 0
            conflictEntryIds = []
            errorEntryIds = []
        }
    }

    /// A sync up that ended with records left dirty says so in `error` and `errorCode`
    /// (CONFLICT when all are conflicts, else SERVER), so no host takes it for a clean run.
    package mutating func reportRecordProblems() {
        guard status == .done, kind == .syncUp, conflicts + errors > 0 else { return }
        var parts: [String] = []
        if conflicts > 0 { parts.append("\(conflicts) conflict\(conflicts == 1 ? "" : "s") (entries \(SyncState.listed(conflictEntryIds, conflicts)))") }
        if errors > 0 { parts.append("\(errors) refused by the server (entries \(SyncState.listed(errorEntryIds, errors)))") }
        error = "\(conflicts + errors) record\(conflicts + errors == 1 ? " was" : "s were") not synced: " + parts.joined(separator: ", ")
            + "; they stay dirty with __last_error__ saying why"
        errorCode = errors > 0 ? ErrorCode.server.rawValue : ErrorCode.conflict.rawValue
    }

    private static func listed(_ ids: [Int64], _ total: Int) -> String {
        let shown = ids.prefix(20).map(String.init).joined(separator: ", ")
        return total > 20 ? shown + ", …" : shown
    }

    package static func from(_ entry: JSON) throws -> SyncState {
        guard let kindName = entry["type"]?.string, let kind = Kind(rawValue: kindName),
              let soup = entry["soupName"]?.string else {
            throw StoreError(.storage, "A stored sync state is malformed (no type or soupName)")
        }
        var state = SyncState(kind: kind, name: entry["name"]?.string,
                              target: SyncTarget.stored(entry["target"], kind: kind, soupName: soup),
                              optionsJSON: entry["options"]?.dump() ?? "{}", soupName: soup)
        state.id = entry["_soupEntryId"]?.int64 ?? 0
        state.status = entry["status"]?.string.flatMap(Status.init(rawValue:)) ?? .new
        state.progress = Int(entry["progress"]?.int64 ?? 0)
        state.totalSize = entry["totalSize"]?.int64 ?? -1
        state.maxTimeStamp = entry["maxTimeStamp"]?.int64 ?? -1
        state.startTime = entry["startTime"]?.int64 ?? 0
        state.endTime = entry["endTime"]?.int64 ?? 0
        state.error = entry["error"]?.string ?? ""
        state.errorCode = Int32(clamping: entry["errorCode"]?.int64 ?? 0)
        state.errorRetryable = entry["errorRetryable"]?.bool ?? false
        state.conflicts = Int(entry["conflicts"]?.int64 ?? 0)
        state.errors = Int(entry["errors"]?.int64 ?? 0)
        state.conflictEntryIds = (entry["conflictEntryIds"]?.elements ?? []).compactMap(\.int64)
        state.errorEntryIds = (entry["errorEntryIds"]?.elements ?? []).compactMap(\.int64)
        return state
    }
}

/// `options`: `{"mergeMode": "OVERWRITE"|"LEAVE_IF_CHANGED", "fieldlist": [...]}`.
package struct SyncOptions {
    package enum MergeMode: String { case overwrite = "OVERWRITE", leaveIfChanged = "LEAVE_IF_CHANGED" }
    package var mergeMode: MergeMode = .overwrite
    package var fieldlist: [String]? = nil

    package static func parse(_ text: String?) throws -> (SyncOptions, String) {
        guard let doc = try JSONDocument.parseOptional(text, what: "sync options") else {
            return (SyncOptions(), "{\"mergeMode\":\"OVERWRITE\"}")
        }
        guard doc.root.isObject || doc.root.isNull else { throw StoreError.argument("Sync options must be a JSON object") }
        var options = SyncOptions()
        if let mode = doc.root["mergeMode"], !mode.isNull {
            guard let name = mode.string, let m = MergeMode(rawValue: name) else {
                throw StoreError.argument("mergeMode must be OVERWRITE or LEAVE_IF_CHANGED")
            }
            options.mergeMode = m
        }
        if let list = doc.root["fieldlist"], !list.isNull {
            options.fieldlist = try stringList(list, "fieldlist")
        }
        let normalized = doc.root.isNull ? "{\"mergeMode\":\"OVERWRITE\"}" : doc.root.dump()
        return (options, normalized)
    }
}

package func stringList(_ json: JSON, _ what: String) throws -> [String] {
    guard json.isArray else { throw StoreError.argument("\(what) must be an array of strings") }
    return try json.elements.map {
        guard let s = $0.string else { throw StoreError.argument("\(what) must contain only strings") }
        return s
    }
}
