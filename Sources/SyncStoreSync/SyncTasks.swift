import SyncStoreCore

/// A run of one sync.
package protocol SyncRun {
    /// Runs to the end; throws on failure or stop (STATE). `state` is updated as the run goes.
    func run(_ state: inout SyncState) throws
}

/// The one place a parsed target becomes the task that runs it, sync down and sync up: two-phase
/// (either way), a sync down target's pages (SyncDownTargets makes the target), parent_children,
/// collection and single (Salesforce REST), datasync and custom sync up targets.
package enum SyncTasks {
    package static func make(_ target: SyncTarget, ctx: SyncContext, options: SyncOptions, states: SyncStateStore,
                             customTargets: CustomTargetRegistry, emit: @escaping (SyncState) -> Void) throws -> any SyncRun {
        switch try target.parsed.get() {
        case .down(.twoPhase(let target)):
            return TwoPhaseTask(ctx: ctx, target: target, options: options, states: states, emit: emit, pushing: false)
        case .down(let kind):
            guard let target = try SyncDownTargets.target(kind, customTargets: customTargets) else {
                throw StoreError(.internal, "A sync down target has no pages to fetch")
            }
            return SyncDownTask(ctx: ctx, target: target, options: options, states: states, emit: emit)
        case .up(.twoPhase(let target)):
            return TwoPhaseTask(ctx: ctx, target: target, options: options, states: states, emit: emit, pushing: true)
        case .up(.parentChildren(let target)):
            return ParentChildrenUpTask(ctx: ctx, target: target, options: options, states: states, emit: emit)
        case .up(.salesforce(let target)):
            return SyncUpTask(ctx: ctx, target: target, options: options, states: states, emit: emit)
        case .up(.datasync(let target, let table)):
            return DatasyncUpTask(SyncUpTask(ctx: ctx, target: target, options: options, states: states, emit: emit), table: table)
        case .up(.custom(let custom)):
            let target = try SyncUpTargets.bind(custom, customTargets: customTargets)
            return SyncUpTask(ctx: ctx, target: target, options: options, states: states, emit: emit)
        }
    }
}
