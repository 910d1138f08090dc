import CJansson
import SyncStoreSupport
import SyncStoreCore

/// A sync's target, parsed once: when the sync is created (createSyncDown / createSyncUp,
/// loadSyncConfig) or read from the sync table. What runs it is decided on `parsed` alone
/// (SyncTasks.make); `document` is only its serialized form: the normalized target JSON the
/// state JSON hosts read and the sync table carry (what the host's target parses to, every field
/// of a custom target kept), never changed and never read again to decide anything.
package struct SyncTarget: @unchecked Sendable {
    package enum Parsed {
        case down(SyncDownTargetKind)
        case up(SyncUpTargetKind)
    }

    /// The normalized target JSON. Never mutated (so it may be read from any thread).
    package let document: JSONDocument
    /// The parsed target. A target read from the sync table that does not parse (written by
    /// another version, or by hand) keeps its error: its runs fail with it, as they did when the
    /// target was read at each run.
    package let parsed: Result<Parsed, any Error>
    /// The "type" the target names, if any: whose custom callbacks it may use.
    package let type: String?

    private init(_ document: JSONDocument, _ parse: () throws -> Parsed) {
        self.document = document
        type = document.root.isObject ? document.root["type"]?.string : nil
        parsed = Result { try parse() }
        SyncTarget.counter.add()
    }

    /// A sync down target as createSyncDown and loadSyncConfig take it: a bad one throws.
    package static func down(_ document: JSONDocument, soupName: String) throws -> SyncTarget {
        let target = SyncTarget(document) { .down(try SyncDownTargets.parse(document.root, soupName: soupName)) }
        _ = try target.parsed.get()
        return target
    }

    /// A sync up target as createSyncUp and loadSyncConfig take it (nil or JSON null: the
    /// default target, `{}`): a bad one throws.
    package static func up(_ document: JSONDocument?, soupName: String) throws -> SyncTarget {
        let document = document.flatMap { $0.root.isNull ? nil : $0 } ?? JSONDocument.object()
        let target = SyncTarget(document) { .up(try SyncUpTargets.parse(document.root, soupName: soupName)) }
        _ = try target.parsed.get()
        return target
    }

    /// A sync up target from text as createSyncUp takes it (nil or "": none).
    package static func up(text: String?, soupName: String) throws -> SyncTarget {
        try up(try JSONDocument.parseOptional(text, what: "sync up target"), soupName: soupName)
    }

    /// The target of a row of the sync table (a copy of `json`; none: `{}`).
    package static func stored(_ json: JSON?, kind: SyncState.Kind, soupName: String) -> SyncTarget {
        let document = json.flatMap { json_deep_copy($0.raw) }.map { JSONDocument(owning: $0) } ?? JSONDocument.object()
        return SyncTarget(document) {
            switch kind {
            case .syncDown: return .down(try SyncDownTargets.parse(document.root, soupName: soupName))
            case .syncUp: return .up(try SyncUpTargets.parse(document.root, soupName: soupName))
            }
        }
    }

    /// A two-phase target (which cleanResyncGhosts does not apply to).
    package var isTwoPhase: Bool { type == "twophase" }

    /// A copy of the target JSON, for a state JSON document to own.
    package func retainedCopy() -> UnsafeMutablePointer<json_t>? { json_deep_copy(document.root.raw) }

    /// The serialized target, as the state JSON carries it.
    package var text: String { document.root.dump() }

    /// How many targets this process has parsed (each sync created, each row of the sync table
    /// read): a run parses its target once, when it reads its state.
    package static var parses: Int { counter.value }
    private static let counter = Counter()

    private final class Counter: @unchecked Sendable {
        private let lock = Lock()
        private var count = 0
        func add() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }
}

/// A sync down target, parsed.
package enum SyncDownTargetKind {
    case twoPhase(TwoPhaseTarget)
    /// soql, sosl, mru, refresh, parent_children, briefcase, layout, metadata, datasync.
    case builtIn(any SyncDownTarget)
    case custom(UnboundCustomTarget<TargetCommon>)
}

/// A sync up target, parsed.
package enum SyncUpTargetKind {
    case twoPhase(TwoPhaseTarget)
    case parentChildren(ParentChildrenUpTarget)
    /// collection or single (the Salesforce REST ones).
    case salesforce(SyncUpTarget)
    case datasync(SyncUpTarget, DatasyncTable)
    case custom(UnboundCustomTarget<SyncUpTarget>)
}

/// A target of a type the engine does not know: a host's custom target, bound to the callbacks
/// registered for its type when it is checked or run (the host registers them on each open, so
/// a target read from the sync table cannot be bound yet).
package struct UnboundCustomTarget<Parsed> {
    package let type: String
    /// What parses of the target without its callbacks; an error here is reported after the
    /// check that the type is registered, as when the target was read with its callbacks.
    package let parsed: Result<Parsed, any Error>
    /// The target JSON handed to the host's callbacks.
    package let text: String
}
