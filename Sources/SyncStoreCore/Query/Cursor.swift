/// What a cursor was opened on, so it can be planned again when the soups' indexes change.
package enum CursorSource {
    case soup(name: String, spec: QuerySpec)
    case smart(sql: String, timeLimitMs: Int64)
}

/// A query left open for paging. Pages are re-queried when moved to (not a snapshot);
/// totalEntries is the count taken at open (docs/queries.md#cursors).
package struct OpenCursor {
    package let id: Int64
    package var plan: QueryPlan
    package let source: CursorSource
    /// The store's catalog version before `plan` was made: another one means plan again.
    package var catalogVersion: Int
    package let pageSize: Int
    package let totalEntries: Int64
    /// Which handle opened it, so closing a handle closes its cursors.
    package let owner: Int

    package var totalPages: Int64 { totalEntries == 0 ? 0 : (totalEntries + Int64(pageSize) - 1) / Int64(pageSize) }

    package func clamp(_ page: Int64) -> Int64 { max(0, min(page, totalPages - 1)) }

    package func json(page: Int64, entries: TextBuffer) -> TextBuffer {
        var out = TextBuffer(capacity: entries.bytes.count + 160)
        out.append("{\"cursorId\":\(id),\"currentPageIndex\":\(page),\"pageSize\":\(pageSize),\"totalEntries\":\(totalEntries),\"totalPages\":\(totalPages),\"currentPageOrderedEntries\":")
        out.append(contentsOf: entries)
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// Open cursors of one store.
package final class CursorTable: @unchecked Sendable {
    private let lock = Lock()
    private var cursors: [Int64: OpenCursor] = [:]
    private var nextId: Int64 = 1

    func open(plan: QueryPlan, source: CursorSource, catalogVersion: Int, pageSize: Int, totalEntries: Int64, owner: Int) -> OpenCursor {
        lock.withLock {
            let cursor = OpenCursor(id: nextId, plan: plan, source: source, catalogVersion: catalogVersion,
                                    pageSize: pageSize, totalEntries: totalEntries, owner: owner)
            nextId += 1
            cursors[cursor.id] = cursor
            return cursor
        }
    }

    package func get(_ id: Int64) -> OpenCursor? { lock.withLock { cursors[id] } }
    /// Keeps a cursor's new plan (unless it was closed meanwhile).
    package func replan(_ id: Int64, _ plan: QueryPlan, catalogVersion: Int) {
        lock.withLock {
            guard cursors[id] != nil else { return }
            cursors[id]?.plan = plan
            cursors[id]?.catalogVersion = catalogVersion
        }
    }
    package func close(_ id: Int64) { lock.withLock { _ = cursors.removeValue(forKey: id) } }
    package func closeAll(owner: Int) { lock.withLock { cursors = cursors.filter { $0.value.owner != owner } } }
    package var count: Int { lock.withLock { cursors.count } }
}
