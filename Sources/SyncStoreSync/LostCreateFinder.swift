import CJansson
import SyncStoreSupport
import SyncStoreCore

/// Finds the server records made by creates whose answers never arrived (a dropped
/// connection, a crash before the outcome was stored), so a retry adopts them instead of
/// creating them twice.
///
/// Before a create is sent its entry gets a mark (`__sync_create_sent__`) holding the time on
/// the server's clock when the server's time is known in this process (from the Date header
/// of a recent answer), and the time on ours. A record the create made has a CreatedDate at or
/// after the marked server time (unless the server's clock was set back since: see
/// `windowStart`); one SOQL query per type lists
/// the records created since the earliest mark of a batch with the fields that were sent, and a
/// record whose fields all equal an entry's and that no local entry holds is that entry's. When
/// a sync down ran in between, the record may already be in the soup as a clean copy stored
/// after the create was sent: the entry then adopts it and the copy goes (`Found.absorbs`).
package struct LostCreateFinder {
    package let ctx: SyncContext
    package let target: SyncUpTarget
    package let options: SyncOptions

    /// Slack before a server-clock mark: the estimate is within a second, a transaction may
    /// stamp CreatedDate a little before it commits.
    package static let serverMarkSlackMs: Int64 = 120_000
    /// Slack before a client-clock mark converted with today's clock offset: the offset may
    /// have drifted since the mark was made.
    package static let clientMarkSlackMs: Int64 = 600_000

    /// The mark stored on an entry before its create is sent: when, and the values sent (a
    /// host may edit the entry before the retry; the record holds what was sent). With
    /// `since`, an earlier mark whose times are kept (the search window starts at the first attempt).
    package static func mark(_ rest: RestClient, sent: [(String, JSON)], since earlier: JSON? = nil) -> UnsafeMutablePointer<json_t>? {
        let doc = JSONDocument.object()
        if let client = earlier?["client"]?.int64 {
            doc.root.set("client", owned: JSONMake.int(client))
            if let server = earlier?["server"]?.int64 { doc.root.set("server", owned: JSONMake.int(server)) }
        } else {
            doc.root.set("client", owned: JSONMake.int(Clock.nowMillis()))
            if let server = rest.serverNow { doc.root.set("server", owned: JSONMake.int(server)) }
        }
        // This attempt, on our clock: until it has settled, not finding its record proves nothing.
        doc.root.set("last", owned: JSONMake.int(Clock.nowMillis()))
        let values = JSONDocument.object()
        for (name, value) in sent { values.root.set(name, owned: value.retained()) }
        doc.root.set("sent", owned: values.root.retained())
        return doc.root.retained()
    }

    /// How long until the entry's last unanswered create can no longer be committed by the
    /// server (0 when it has settled, or the entry has no mark).
    package static func unsettledMs(_ entry: JSON, settleMs: Int64, now: Int64 = Clock.nowMillis()) -> Int64 {
        guard let mark = entry[LocalFlags.pendingCreate], !mark.isNull else { return 0 }
        guard let last = mark["last"]?.int64 ?? mark["client"]?.int64 ?? mark.int64 else { return 0 }
        // A mark from the future (our clock moved back) is treated as just made.
        return max(0, min(last, now) + settleMs - now)
    }

    /// The values a marked entry's create sent (older marks have none: nil).
    package static func sentValues(_ entry: JSON) -> [(String, JSON)]? {
        guard let sent = entry[LocalFlags.pendingCreate]?["sent"], sent.isObject else { return nil }
        return sent.members
    }

    /// Same names and values (in any order).
    package static func same(_ a: [(String, JSON)], _ b: [(String, JSON)]) -> Bool {
        a.count == b.count && a.allSatisfy { name, value in b.contains { $0.0 == name && same($0.1, value) } }
    }

    package struct Found {
        package let serverId: String
        /// A clean local copy of the record (a sync down stored it) that the entry replaces.
        package let absorbs: Int64?
    }

    /// For each (position, entry) with a mark, the record its earlier create made, if there is
    /// one. `fields` gives what a create of the entry sends.
    package func find(_ pending: [(Int, SyncUpTask.Item)], fields: (SyncUpTask.Item) -> [(String, JSON)],
              info: SoupInfo) throws -> [Int: Found] {
        guard !pending.isEmpty else { return [:] }
        if ctx.rest.serverNow == nil {
            // Any answer carries the server's clock; this read changes nothing.
            _ = try? ctx.rest.send("GET", "limits", cancel: ctx.cancel)
        }
        let offset = ctx.rest.serverNow.map { $0 - Clock.nowMillis() }
        var found: [Int: Found] = [:]
        var claimed = Set<String>()
        for (type, group) in Dictionary(grouping: pending, by: { $0.1.type }) where !type.isEmpty {
            let since = group.map { LostCreateFinder.windowStart($0.1, clockOffset: offset) }.min() ?? 0
            var names: [String] = []
            for (_, item) in group {
                for (name, _) in fields(item) where !names.contains(where: { $0.caseInsensitiveEquals(name) }) { names.append(name) }
            }
            let records = try created(type: type, since: since, fields: names)
            let ordered = group.sorted(by: { $0.0 < $1.0 })
            // Records no entry holds first; then clean copies that arrived after the create was sent.
            for copies in [false, true] {
                for (position, item) in ordered where found[position] == nil {
                    let sent = fields(item)
                    for record in records.root.elements {
                        guard let id = record["Id"]?.string, !claimed.contains(id) else { continue }
                        guard LostCreateFinder.holds(record, sent) else { continue }
                        let holders = try ctx.store.readers.withReader { db in
                            try LostCreateFinder.holders(id, idFieldName: target.idFieldName, info: info, db: db)
                        }
                        var absorbs: Int64? = nil
                        if copies {
                            guard holders.count == 1, let holder = holders.first, !holder.dirty, holder.entryId != item.entryId,
                                  holder.created >= sentOnOurClock(item) else { continue }
                            absorbs = holder.entryId
                        } else if !holders.isEmpty {
                            continue
                        }
                        claimed.insert(id)
                        found[position] = Found(serverId: id, absorbs: absorbs)
                        break
                    }
                }
            }
        }
        return found
    }

    /// Whether `record` holds every value sent.
    package static func holds(_ record: JSON, _ sent: [(String, JSON)]) -> Bool {
        sent.allSatisfy { name, value in same(record[name] ?? record.caseInsensitive(name), value) }
    }

    /// Whether a record a sync down brings is the one `item`'s unanswered create made: it
    /// holds every value sent and was created (or, without a CreatedDate, last modified) inside
    /// the item's window.
    package static func made(_ record: JSON, by item: SyncUpTask.Item, sent: [(String, JSON)], clockOffset: Int64?) -> Bool {
        guard !sent.isEmpty, holds(record, sent) else { return false }
        let stamp = (record["CreatedDate"] ?? record["LastModifiedDate"])?.string.flatMap(Timestamp.parse)
        return stamp.map { $0 >= windowStart(item, clockOffset: clockOffset) } ?? true
    }

    /// Where the search for an entry's record starts, on the server's clock: the earlier of the
    /// marked server time and the marked client time converted with today's clock offset. The
    /// server time in a mark is an estimate from the last answer before the create; when the
    /// server's clock was set back between that answer and the create (the chaos suite's clock
    /// offsets, an NTP step), the record is stamped before it, and only the client time finds it.
    private static func windowStart(_ item: SyncUpTask.Item, clockOffset: Int64?) -> Int64 {
        let mark = item.entry.root[LocalFlags.pendingCreate]
        // Older marks are a bare client time.
        let client = mark?["client"]?.int64 ?? mark?.int64 ?? 0
        let fromClient = client + (clockOffset ?? 0) - LostCreateFinder.clientMarkSlackMs
        guard let server = mark?["server"]?.int64 else { return fromClient }
        return min(server - LostCreateFinder.serverMarkSlackMs, fromClient)
    }

    /// Records of `type` created since `since` (server clock), with `fields`, all pages.
    private func created(type: String, since: Int64, fields: [String]) throws -> JSONDocument {
        let select = (["Id", "CreatedDate"] + fields.filter { !$0.caseInsensitiveEquals("Id") && !$0.caseInsensitiveEquals("CreatedDate") })
            .joined(separator: ", ")
        let soql = "SELECT \(select) FROM \(type) WHERE CreatedDate >= \(Timestamp.format(since)) ORDER BY CreatedDate"
        let all = JSONDocument.array()
        var path: String? = QueryPaging.queryPath(soql)
        var locators = PageLocators()
        while let current = path {
            let page = try ctx.rest.json("GET", current, cancel: ctx.cancel)
            for record in page.root["records"]?.elements ?? [] { all.root.append(owned: record.retained()) }
            path = (page.root["done"]?.bool ?? true) ? nil : page.root["nextRecordsUrl"]?.string
            try locators.check(path)
        }
        return all
    }

    /// When the entry's create was sent, on our clock.
    private func sentOnOurClock(_ item: SyncUpTask.Item) -> Int64 {
        let mark = item.entry.root[LocalFlags.pendingCreate]
        return mark?["client"]?.int64 ?? mark?.int64 ?? Int64.max
    }

    /// Local entries holding `serverId`: their id, whether dirty, when stored.
    package static func holders(_ serverId: String, idFieldName: String, info: SoupInfo, db: Connection) throws -> [(entryId: Int64, dirty: Bool, created: Int64)] {
        let statement = try db.prepare("SELECT id, \(LocalFlags.dirtyCondition), created FROM \(info.table) WHERE \(info.expression(for: idFieldName)) = ?")
        try statement.bind([.text(serverId)])
        var rows: [(Int64, Bool, Int64)] = []
        while try statement.step() { rows.append((statement.int64(0), statement.int64(1) != 0, statement.int64(2))) }
        return rows
    }

    /// Equal values, numbers compared by value (a server may answer 5 for 5.0).
    package static func same(_ stored: JSON?, _ sent: JSON) -> Bool {
        stored?.sameValue(as: sent) ?? false
    }
}

extension JSON {
    /// The member whose key equals `key` ignoring case (SOQL answers use the schema's spelling).
    package func caseInsensitive(_ key: String) -> JSON? {
        members.first(where: { $0.0.caseInsensitiveEquals(key) })?.1
    }
}

/// Guards a paging loop against a server that sends a locator it sent before: without it, a
/// sync would stay RUNNING forever.
package struct PageLocators {
    private var seen = Set<String>()

    package mutating func check(_ next: String?) throws {
        guard let next else { return }
        guard seen.insert(next).inserted else {
            throw StoreError(.server, "The server sent the page locator \(RemoteURL.redacted(next)) a second time; paging stopped so the sync cannot loop forever. Run the sync again later")
        }
    }
}
