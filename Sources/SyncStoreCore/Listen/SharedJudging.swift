import SyncStoreSupport

/// Judges a notifier round's query listeners of one soup that took the same change together:
/// the changed entries are read from the soup's table once, and each listener's condition is
/// one arm of a UNION ALL over those rows. Judged one by one, 100 listeners looked up every
/// changed entry 100 times, and that was most of the notifier's work under a stream of commits.
/// Every listener's page is read in the same read transaction as the rows.
enum SharedJudging {
    struct Member {
        let token: Int64
        let query: QueryWatch
        let shared: QueryWatch.Shared
    }

    /// SQLite's limit on a compound SELECT's terms is 500.
    private static let armsPerStatement = 400

    /// The outcome of each member judged here (nil: its result did not move, or it could not be
    /// judged and reads its whole result next time); members left out are judged alone.
    static func judge(_ members: [Member], _ store: SmartStore) -> [Int64: QueryWatch.Outcome?] {
        var groups: [[Member]] = []
        for member in members {
            // The same soup in the same catalog state (its plan cache is made with it), the same change.
            if let i = groups.firstIndex(where: { $0[0].shared.info.plans === member.shared.info.plans && $0[0].shared.part == member.shared.part }) {
                groups[i].append(member)
            } else {
                groups.append([member])
            }
        }
        groups.removeAll { $0.count < 2 }
        guard !groups.isEmpty else { return [:] }
        var outcomes: [Int64: QueryWatch.Outcome?] = [:]
        _ = try? store.readers.withReader(lane: .notifier) { db in
            try db.execute("BEGIN")
            defer { _ = try? db.execute("COMMIT") }
            for group in groups {
                guard let changed = QueryWatch.ChangedIds(group[0].shared.part) else { continue }
                var start = 0
                while start < group.count {
                    let arms = Array(group[start..<min(group.count, start + armsPerStatement)])
                    start += arms.count
                    guard let matching = try? read(arms, changed, db) else { continue }
                    for (i, member) in arms.enumerated() {
                        let outcome = try? member.query.judge(changed, matching: matching[i], info: member.shared.info, on: db, store)
                        outcomes.updateValue(outcome, forKey: member.token)
                    }
                }
            }
        }
        return outcomes
    }

    /// For each arm, the changed entries that match its condition now (id -> lastModified).
    private static func read(_ arms: [Member], _ changed: QueryWatch.ChangedIds, _ db: Connection) throws -> [[Int64: Int64]] {
        let info = arms[0].shared.info
        let table = info.table
        // The columns the conditions can read; the entry's text only when one needs it (a sync
        // down's commit holds 10,000 entries).
        let columns = ["id", "lastModified", "created"] + info.columnIndexes.map(\.columnName)
            + (arms.contains { $0.shared.readsDocument } ? ["soup"] : [])
        var sql = "WITH changed AS MATERIALIZED (SELECT " + columns.map { "\(table).\($0)" }.joined(separator: ", ")
            + " FROM (SELECT value AS changed_id FROM json_each(?)) AS changed_ids"
            + " CROSS JOIN \(table) ON \(table).id = changed_ids.changed_id)"
        var bindings: [SQLValue] = [.text(changed.json)]
        for (i, arm) in arms.enumerated() {
            sql += (i == 0 ? " " : " UNION ALL ") + "SELECT \(i), id, lastModified FROM changed"
            if !arm.shared.condition.isEmpty { sql += " WHERE " + arm.shared.condition }
            bindings += arm.shared.bindings
        }
        let statement = try db.cached(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        var matching = [[Int64: Int64]](repeating: [:], count: arms.count)
        while try statement.step() {
            let arm = Int(statement.int64(0))
            if arm >= 0 && arm < arms.count { matching[arm][statement.int64(1)] = statement.int64(2) }
        }
        return matching
    }
}
