/// cleanResyncGhosts (docs/sync.md#ghosts): local records this sync wrote (`__sync_id__`), not dirty,
/// whose ids the server no longer lists for the target, are deleted in one transaction.
struct GhostCleaner {
    let ctx: SyncContext
    let state: SyncState
    let customTargets: CustomTargetRegistry

    func run() throws -> Int {
        let targetDoc = try JSONDocument.parse(state.targetJSON, what: "sync down target")
        let target = try SyncDownTargets.make(targetDoc.root, soupName: state.soupName, customTargets: customTargets)
        guard let remote = try target.remoteIds(ctx) else {
            throw StoreError.argument("This sync's target cannot list remote ids, so ghosts cannot be found")
        }
        var removed = 0
        try ctx.store.write { db in
            for (soupName, remoteIds) in remote {
                let info = try ctx.store.requireSoup(soupName)
                let idExpr = info.expression(for: target.idFieldName)
                let statement = try db.prepare("""
                    SELECT id, \(idExpr) FROM \(info.table)
                    WHERE \(SoupPath.jsonExtract(LocalFlags.syncId)) = ? AND NOT \(LocalFlags.dirtyCondition)
                    """)
                try statement.bind([.int(state.id)])
                var ghosts: [Int64] = []
                while try statement.step() {
                    if statement.isNull(1) || !remoteIds.contains(statement.text(1)) { ghosts.append(statement.int64(0)) }
                }
                try ctx.store.deleteRows(db, info, ids: ghosts)
                removed += ghosts.count
            }
        }
        return removed
    }
}
