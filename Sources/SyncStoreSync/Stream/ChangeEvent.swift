import SyncStoreCore

/// One Change Data Capture event as the Streaming API delivers it (`data.payload.ChangeEventHeader`
/// and `data.event.replayId`), reduced to what keeping a soup current needs.
package struct ChangeEvent {
    package enum Kind: String {
        case create = "CREATE", update = "UPDATE", delete = "DELETE", undelete = "UNDELETE"
        case gapCreate = "GAP_CREATE", gapUpdate = "GAP_UPDATE", gapDelete = "GAP_DELETE", gapUndelete = "GAP_UNDELETE"
        case gapOverflow = "GAP_OVERFLOW"
    }

    package let channel: String
    package let replayId: Int64
    package let entityName: String
    package let kind: Kind
    package let recordIds: [String]
    package let changeOrigin: String
    /// When the change was committed (epoch ms, the server's clock); nil when the event does not say.
    package let commitTimestamp: Int64?

    /// Reads an event; a message that is not one says what is wrong with it.
    package static func parse(channel: String, data: JSON) throws -> ChangeEvent {
        func bad(_ what: String) -> StoreError { StoreError(.server, "A change event on \(channel) \(what); it was skipped") }
        guard let replayId = data["event"]?["replayId"]?.int64 else { throw bad("has no event.replayId") }
        guard let header = data["payload"]?["ChangeEventHeader"], header.isObject else { throw bad("has no ChangeEventHeader") }
        guard let entity = header["entityName"]?.string, !entity.isEmpty else { throw bad("has no entityName") }
        guard let type = header["changeType"]?.string, let kind = Kind(rawValue: type) else {
            throw bad("has an unknown changeType \(header["changeType"]?.dump() ?? "(none)")")
        }
        guard let list = header["recordIds"], list.isArray else { throw bad("has no recordIds") }
        let ids = list.elements.compactMap(\.string)
        guard ids.count == list.elements.count else { throw bad("has recordIds that are not strings") }
        return ChangeEvent(channel: channel, replayId: replayId, entityName: entity, kind: kind, recordIds: ids,
                           changeOrigin: header["changeOrigin"]?.string ?? "", commitTimestamp: header["commitTimestamp"]?.int64)
    }

    /// Whether each id names one record (15 or 18 letters and digits). Salesforce may send a
    /// wildcard (`001*`) for a change too large to list: then the ids are not known.
    package var idsAreExact: Bool {
        recordIds.allSatisfy { id in
            (id.utf8.count == 15 || id.utf8.count == 18) && id.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) }
        }
    }

    /// The channel of an object's change events: `/data/AccountChangeEvent`, `/data/Foo__ChangeEvent`.
    package static func channel(of object: String) -> String {
        object.hasSuffix("__c") ? "/data/\(object.dropLast(1))ChangeEvent" : "/data/\(object)ChangeEvent"
    }
}
