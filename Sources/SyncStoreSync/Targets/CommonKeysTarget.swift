import SyncStoreCore
/// A target configured by the common keys: its id and modification-date fields come from them.
package protocol CommonKeysTarget: SyncDownTarget {
    var common: TargetCommon { get }
}

extension CommonKeysTarget {
    package var idFieldName: String { common.idFieldName }
    package var modificationDateFieldName: String { common.modificationDateFieldName }

    /// One page of records into the sync's soup.
    package func page(_ ctx: SyncContext, owner: JSONDocument, records: [JSON], totalSize: Int64?, next: String?) -> DownPage {
        DownPage(owner: [owner], groups: [RecordGroup(soupName: ctx.soupName, idFieldName: idFieldName,
                                                      modificationDateFieldName: modificationDateFieldName, records: records)],
                 totalSize: totalSize, next: next)
    }
}
