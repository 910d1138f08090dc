import SyncStoreCore
/// Targets whose whole answer is one page.
package protocol SinglePageTarget: CommonKeysTarget {}

extension SinglePageTarget {
    package func nextPage(_ ctx: SyncContext, after page: DownPage) throws -> DownPage {
        throw StoreError(.internal, "This target has one page; nextPage must not be called")
    }

    /// A page of one record: the answer `doc` (an object) with `fields` set on it as strings.
    package func recordPage(_ ctx: SyncContext, _ doc: JSONDocument, what: String, fields: [(String, String)]) throws -> DownPage {
        guard doc.root.isObject else { throw StoreError(.server, "The \(what) response is not an object") }
        for (key, value) in fields { doc.root.set(key, owned: JSONMake.string(value)) }
        return page(ctx, owner: doc, records: [doc.root], totalSize: 1, next: nil)
    }
}
