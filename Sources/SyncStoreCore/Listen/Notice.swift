import CJansson

/// The JSON a listener hears (the C header's "Listeners" states each member).
enum Notice {
    /// A soup listener's notice of `change`, as the listener of `soup` (nil: every soup) added
    /// through handle `owner` hears it.
    static func soup(_ change: StoreChange, soup: String?, owner: Int) -> String {
        let doc = header(change, owner: owner)
        let soups = JSONDocument.array()
        for name in change.soups.keys.sorted() where soup == nil || soup == name {
            guard let part = change.soups[name] else { continue }
            let item = JSONDocument.object()
            item.root.set("soup", owned: JSONMake.string(name))
            item.root.set("inserted", owned: ids(part.inserted))
            item.root.set("updated", owned: ids(part.updated))
            item.root.set("deleted", owned: ids(part.deleted))
            item.root.set("cleared", owned: JSONMake.bool(part.cleared))
            item.root.set("removed", owned: JSONMake.bool(part.dropped))
            item.root.set("unknown", owned: JSONMake.bool(part.unknown))
            soups.root.append(owned: item.root.retained())
        }
        doc.root.set("soups", owned: soups.root.retained())
        return doc.root.dump()
    }

    /// A query listener's notice: the result `outcome` after `change` (nil: the first notice).
    static func query(_ outcome: QueryWatch.Outcome, change: StoreChange?, owner: Int) -> String {
        let doc = change.map { header($0, owner: owner) } ?? initialHeader()
        doc.root.set("totalEntries", owned: JSONMake.int(Int64(outcome.total)))
        if outcome.isSmart {
            doc.root.set("added", owned: rows(outcome.diff.addedRows, count: outcome.diff.addedRowCount))
            doc.root.set("removed", owned: rows(outcome.diff.removedRows, count: outcome.diff.removedRowCount))
            doc.root.set("changed", owned: ids(StoreChange.Ids()))
        } else {
            doc.root.set("added", owned: ids(outcome.diff.added))
            doc.root.set("removed", owned: ids(outcome.diff.removed))
            doc.root.set("changed", owned: ids(outcome.diff.changed))
        }
        // The page is JSON text already: spliced in, not parsed again.
        var text = doc.root.dump()
        text.removeLast()
        return text + ",\"currentPageOrderedEntries\":" + outcome.page + "}"
    }

    private static func header(_ change: StoreChange, owner: Int) -> JSONDocument {
        let doc = JSONDocument.object()
        doc.root.set("sequence", owned: JSONMake.int(change.sequence))
        doc.root.set("commits", owned: JSONMake.int(Int64(change.commits)))
        let origin = JSONDocument.object()
        switch change.origin {
        case .host(let writer):
            origin.root.set("kind", owned: JSONMake.string(writer == owner ? "handle" : "otherHandle"))
        case .engine(let run, let name):
            origin.root.set("kind", owned: JSONMake.string("sync"))
            if let run { origin.root.set("syncId", owned: JSONMake.int(run)) }
            if let name { origin.root.set("syncName", owned: JSONMake.string(name)) }
        case .otherProcess:
            origin.root.set("kind", owned: JSONMake.string("otherProcess"))
        }
        doc.root.set("origin", owned: origin.root.retained())
        return doc
    }

    private static func initialHeader() -> JSONDocument {
        let doc = JSONDocument.object()
        doc.root.set("sequence", owned: JSONMake.int(0))
        doc.root.set("commits", owned: JSONMake.int(0))
        let origin = JSONDocument.object()
        origin.root.set("kind", owned: JSONMake.string("initial"))
        doc.root.set("origin", owned: origin.root.retained())
        return doc
    }

    private static func ids(_ ids: StoreChange.Ids) -> UnsafeMutablePointer<json_t>? {
        let kind = JSONDocument.object()
        kind.root.set("count", owned: JSONMake.int(Int64(ids.count)))
        let list = JSONDocument.array()
        for id in ids.ids.prefix(StoreChange.idLimit) { list.root.append(owned: JSONMake.int(id)) }
        kind.root.set("ids", owned: list.root.retained())
        kind.root.set("cut", owned: JSONMake.bool(ids.count > StoreChange.idLimit))
        return kind.root.retained()
    }

    private static func rows(_ rows: [String], count: Int) -> UnsafeMutablePointer<json_t>? {
        let kind = JSONDocument.object()
        kind.root.set("count", owned: JSONMake.int(Int64(count)))
        let list = JSONDocument.array()
        for row in rows {
            if let parsed = try? JSONDocument.parse(row) { list.root.append(owned: parsed.root.retained()) }
        }
        kind.root.set("rows", owned: list.root.retained())
        kind.root.set("cut", owned: JSONMake.bool(count > rows.count))
        return kind.root.retained()
    }
}
