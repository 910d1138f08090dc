import CSQLite
import SyncStoreSupport

/// What a query listener last told of its query's result, and how a change moves it. A spec on
/// a soup keeps its entries' ids with their last modification, so a commit whose changed
/// entries are known is judged from those entries alone (one statement over them, whatever the
/// result's size); Smart SQL keeps its rows' text and runs again. Used on one thread at a time
/// (its listener's delivery).
final class QueryWatch {
    private enum Subject {
        case soup(name: String, spec: QuerySpec)
        case smart(sql: String, spec: QuerySpec)
    }

    /// How one result differs from the one told before.
    struct Diff {
        var added = StoreChange.Ids()
        var removed = StoreChange.Ids()
        var changed = StoreChange.Ids()
        /// Smart SQL: the rows (JSON text) that entered or left the result.
        var addedRows: [String] = []
        var removedRows: [String] = []
        var addedRowCount = 0
        var removedRowCount = 0
        var isEmpty: Bool { added.count + removed.count + changed.count + addedRowCount + removedRowCount == 0 }
    }

    /// A result to tell: its size, first page (JSON array text) and difference.
    struct Outcome {
        let total: Int
        let page: String
        let diff: Diff
        let isSmart: Bool
    }

    private let subject: Subject
    /// The soups whose commits can change the result.
    let soups: Set<String>
    /// Entries in the result with their lastModified.
    private var entries = ResultEntries()
    /// Smart SQL: the result's rows, in order (JSON text).
    private var rows: [String] = []
    /// The soup was removed: told once, then nothing.
    private(set) var gone = false
    /// A change could not be judged (a query that failed): the next one reads the whole result.
    private var stale = false

    /// Parses and checks `specJSON` against the store (errors as a query would give them).
    init(store: SmartStore, specJSON: String) throws {
        let doc = try JSONDocument.parse(specJSON, what: "query spec")
        let spec = try QuerySpec.parse(doc.root)
        if spec.queryType == .smart {
            guard let sql = spec.smartSql else { throw StoreError.argument("A smart query spec needs \"smartSql\"") }
            var named = Set<String>()
            _ = try SmartSqlTranslator(lookup: { name in
                named.insert(name)
                return store.soup(name)
            }).translate(sql)
            _ = try store.smartPlan(sql, timeLimitMs: spec.timeoutMs)
            subject = .smart(sql: sql, spec: spec)
            soups = named
        } else {
            guard let name = doc.root["soupName"]?.string, !name.isEmpty else {
                throw StoreError.argument("A query listener's spec needs \"soupName\" (the soup it queries), as the SDKs' QuerySpec holds it; Smart SQL specs name their soups in the SQL")
            }
            _ = try store.planIndexingDates(spec, soup: try store.requireSoup(name))
            subject = .soup(name: name, spec: spec)
            soups = [name]
        }
    }

    /// Reads the whole result: every row is "added".
    func load(_ store: SmartStore) throws -> Outcome {
        entries = ResultEntries()
        rows = []
        return try judge(nil, store) ?? Outcome(total: 0, page: "[]", diff: Diff(), isSmart: isSmart)
    }

    private var isSmart: Bool { if case .smart = subject { return true } else { return false } }

    /// How `change` (nil: none known, read everything) moved the result; nil when it did not.
    func judge(_ change: StoreChange?, _ store: SmartStore) throws -> Outcome? {
        guard !gone else { return nil }
        do {
            let outcome = try judgeNow(change, store)
            stale = false
            return outcome
        } catch {
            stale = true
            throw error
        }
    }

    private func judgeNow(_ change: StoreChange?, _ store: SmartStore) throws -> Outcome? {
        switch subject {
        case .smart(let sql, let spec):
            if let change, soups.isDisjoint(with: change.soups.keys) { return nil }
            return try judgeSmart(sql, spec, store, initial: change == nil)
        case .soup(let name, let spec):
            var part: StoreChange.SoupChange? = nil
            if let change {
                guard let changed = change.soups[name] else { return nil }
                part = changed
            }
            guard part?.dropped != true, let info = store.soup(name) else { return vanished() }
            return try judgeSoup(spec, info, part, store)
        }
    }

    /// The soup is gone: every entry left the result.
    private func vanished() -> Outcome {
        gone = true
        var diff = Diff()
        for id in entries.ids { diff.removed.add(id) }
        entries = ResultEntries()
        return Outcome(total: 0, page: "[]", diff: diff, isSmart: false)
    }

    /// The SQL a soup spec is judged with, for one catalog state of its soup.
    private struct Judging {
        /// The SoupInfo it was made for (a catalog change makes a new one).
        let plans: RecentCache<PlanCache.Shape, PlanCache.Text>
        let plan: QueryPlan
        let bindings: [SQLValue]
        /// The spec's condition on the soup's table ("" for none), over the columns of its rows.
        let condition: String
        /// The condition reads the entry's text (a path with no column of its own).
        let readsDocument: Bool
        /// The ids and modification times of the given changed entries (JSON array) in the result.
        let changedSQL: String
        /// Those of the whole result.
        let resultSQL: String
    }

    private static func hasColumn(_ path: String, _ info: SoupInfo) -> Bool {
        [SoupPath.entryId, SoupPath.lastModified, SoupPath.created].contains(path) || info.index(for: path)?.hasColumn == true
    }

    /// Made once per catalog state: building the SQL was most of a quiet judgement's work.
    private var judging: Judging?

    private func judging(_ spec: QuerySpec, _ info: SoupInfo) throws -> Judging {
        if let judging, judging.plans === info.plans { return judging }
        let (condition, bindings) = try SoupQueryBuilder.whereClause(spec, soup: info)
        let table = info.table
        // The changed ids drive the loop (CROSS JOIN keeps that order): an index of the
        // condition would walk the whole result instead.
        let made = Judging(
            plans: info.plans, plan: try SoupQueryBuilder.plan(spec, soup: info), bindings: bindings, condition: condition,
            readsDocument: !Self.hasColumn(spec.indexPath ?? SoupPath.entryId, info),
            changedSQL: "SELECT \(table).id, \(table).lastModified FROM (SELECT value AS changed FROM json_each(?)) AS changed_ids"
                + " CROSS JOIN \(table) ON \(table).id = changed_ids.changed" + (condition.isEmpty ? "" : " WHERE \(condition)"),
            // Sorted here, not by ORDER BY id: SQLite would walk the whole table in id order
            // (and a reader that did so was measured 3x slower at the next small judgement).
            resultSQL: "SELECT id, lastModified FROM \(table)" + (condition.isEmpty ? "" : " WHERE \(condition)"))
        judging = made
        return made
    }

    /// The changed entries of a soup's part of a change, when they are all known: the ids a
    /// judgement reads (sorted, each once, and as the JSON array it binds) and those written.
    struct ChangedIds {
        let sorted: [Int64]
        let json: String
        let written: Set<Int64>

        /// Whether the part lists every changed entry: not for a cleared soup, another
        /// process's change, a list cut short (the whole result is read then).
        static func listed(_ part: StoreChange.SoupChange) -> Bool {
            !(part.cleared || part.unknown || part.inserted.cut || part.updated.cut || part.deleted.cut)
        }

        /// Nil when the part does not list every changed entry.
        init?(_ part: StoreChange.SoupChange) {
            guard ChangedIds.listed(part) else { return nil }
            sorted = Array(Set(part.inserted.ids + part.updated.ids + part.deleted.ids)).sorted()
            var json = "["
            for (i, id) in sorted.enumerated() { json += (i == 0 ? "" : ",") + String(id) }
            self.json = json + "]"
            written = Set(part.updated.ids + part.inserted.ids)
        }
    }

    /// What a round's shared statement (`SharedJudging`) needs to judge `change` for this
    /// listener; nil when it is judged alone (Smart SQL, a soup gone, ids not all known).
    struct Shared {
        let info: SoupInfo
        let part: StoreChange.SoupChange
        let condition: String
        let bindings: [SQLValue]
        /// The condition reads the entry's text (a path with no column of its own).
        let readsDocument: Bool
    }

    func shared(_ change: StoreChange, _ store: SmartStore) -> Shared? {
        guard !gone, !stale, case .soup(let name, let spec) = subject, let part = change.soups[name], !part.dropped,
              ChangedIds.listed(part), let info = store.soup(name), let judging = try? judging(spec, info) else { return nil }
        return Shared(info: info, part: part, condition: judging.condition, bindings: judging.bindings, readsDocument: judging.readsDocument)
    }

    /// Judges the change `shared(...)` described, given which of its entries match now (`now`:
    /// id -> lastModified, read on `db` in the read transaction the first page is read in).
    func judge(_ changed: ChangedIds, matching now: [Int64: Int64], info: SoupInfo, on db: Connection, _ store: SmartStore) throws -> Outcome? {
        guard case .soup(_, let spec) = subject else { return nil }
        do {
            let outcome = try moved(changed, now, spec, try judging(spec, info).plan, db, store)
            stale = false
            return outcome
        } catch {
            stale = true
            throw error
        }
    }

    private func judgeSoup(_ spec: QuerySpec, _ info: SoupInfo, _ part: StoreChange.SoupChange?, _ store: SmartStore) throws -> Outcome? {
        let judging = try judging(spec, info)
        let plan = judging.plan
        let bindings = judging.bindings
        // Known entries: only they are read. Otherwise (and after a change that could not be
        // judged) the whole result is.
        let known = stale ? nil : part.flatMap(ChangedIds.init)
        return try store.readers.withReader(lane: .notifier) { db -> Outcome? in
            if let known {
                let sql = judging.changedSQL
                // Most commits leave a result alone: one statement tells, with no transaction.
                var now: [Int64: Int64] = [:]
                try read(sql, [.text(known.json)] + bindings, db) { now[$0] = $1 }
                if diff(known, now).isEmpty { return nil }
                // It moved: read again with the first page, both in one snapshot.
                try db.execute("BEGIN")
                defer { _ = try? db.execute("COMMIT") }
                now = [:]
                try read(sql, [.text(known.json)] + bindings, db) { now[$0] = $1 }
                return try moved(known, now, spec, plan, db, store)
            }
            try db.execute("BEGIN")
            defer { _ = try? db.execute("COMMIT") }
            let updated = Set(part.map { $0.updated.ids + $0.inserted.ids } ?? [])
            var moved = Diff()
            let sql = judging.resultSQL
            var rows: [(id: Int64, stamp: Int64)] = []
            try read(sql, bindings, db) { rows.append(($0, $1)) }
            let now = ResultEntries(rows)
            rows = []
            entries.merge(with: now) { id, before, after in
                switch (before, after) {
                case (nil, _?): moved.added.add(id)
                case (_?, nil): moved.removed.add(id)
                case (let b?, let a?): if b != a || updated.contains(id) { moved.changed.add(id) }
                case (nil, nil): break
                }
            }
            entries = now
            // The first notice tells of the result even when it is empty.
            if moved.isEmpty && part != nil { return nil }
            let page = try store.readPage(plan, pageSize: spec.pageSize, page: 0, on: db)
            return Outcome(total: entries.count, page: page.string, diff: moved, isSmart: false)
        }
    }

    /// Moves the kept result by the known changed entries; the outcome (with the first page,
    /// read on `db`) when the result moved.
    private func moved(_ changed: ChangedIds, _ now: [Int64: Int64], _ spec: QuerySpec, _ plan: QueryPlan,
                       _ db: Connection, _ store: SmartStore) throws -> Outcome? {
        let moved = diff(changed, now)
        for id in changed.sorted { entries.set(id, now[id]) }
        if moved.isEmpty { return nil }
        let page = try store.readPage(plan, pageSize: spec.pageSize, page: 0, on: db)
        return Outcome(total: entries.count, page: page.string, diff: moved, isSmart: false)
    }

    /// How the entries `changed` moved the result, given which of them match now (`now`: id ->
    /// lastModified).
    private func diff(_ changed: ChangedIds, _ now: [Int64: Int64]) -> Diff {
        var diff = Diff()
        for id in changed.sorted {
            switch (entries.stamp(id), now[id]) {
            case (nil, _?): diff.added.add(id)
            case (_?, nil): diff.removed.add(id)
            case (let before?, let modified?):
                if before != modified || changed.written.contains(id) { diff.changed.add(id) }
            case (nil, nil): break
            }
        }
        return diff
    }

    private func read(_ sql: String, _ bindings: [SQLValue], _ db: Connection, _ row: (Int64, Int64) -> Void) throws {
        let statement = try db.cached(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        while try statement.step() { row(statement.int64(0), statement.int64(1)) }
    }

    private func judgeSmart(_ sql: String, _ spec: QuerySpec, _ store: SmartStore, initial: Bool) throws -> Outcome? {
        let plan = try store.smartPlan(sql, timeLimitMs: spec.timeoutMs)
        let now: [String] = try store.readers.withReader(lane: .notifier) { db in
            let statement = try SmartSqlGuard.prepare(plan.pageSQL, on: db)
            defer { statement.reset() }
            try statement.bind(plan.bindings + [.int(-1), .int(0)])
            var found: [String] = []
            try plan.limited(on: db) {
                while try statement.step() { found.append(try ResultWriter.valueRowText(statement)) }
            }
            return found
        }
        var diff = Diff()
        var before: [String: Int] = [:]
        for row in rows { before[row, default: 0] += 1 }
        var after: [String: Int] = [:]
        for row in now { after[row, default: 0] += 1 }
        var seen: [String: Int] = [:]
        for row in now {
            seen[row, default: 0] += 1
            if seen[row, default: 0] > before[row, default: 0] { Self.addRow(row, to: &diff.addedRows, count: &diff.addedRowCount) }
        }
        seen = [:]
        for row in rows {
            seen[row, default: 0] += 1
            if seen[row, default: 0] > after[row, default: 0] { Self.addRow(row, to: &diff.removedRows, count: &diff.removedRowCount) }
        }
        rows = now
        // The first notice tells of the result even when it is empty.
        if diff.isEmpty && !initial { return nil }
        let page = "[" + now.prefix(spec.pageSize).joined(separator: ",") + "]"
        return Outcome(total: now.count, page: page, diff: diff, isSmart: true)
    }

    private static func addRow(_ row: String, to list: inout [String], count: inout Int) {
        count += 1
        if list.count < StoreChange.idLimit { list.append(row) }
    }
}
