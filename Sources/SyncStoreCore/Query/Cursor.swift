/// A query left open for paging. Pages are re-queried when moved to (not a snapshot);
/// totalEntries is the count taken at open (semantics §4).
struct OpenCursor {
    let id: Int64
    let plan: QueryPlan
    let pageSize: Int
    let totalEntries: Int64
    /// Which handle opened it, so closing a handle closes its cursors.
    let owner: Int

    var totalPages: Int64 { totalEntries == 0 ? 0 : (totalEntries + Int64(pageSize) - 1) / Int64(pageSize) }

    func clamp(_ page: Int64) -> Int64 { max(0, min(page, totalPages - 1)) }

    func json(page: Int64, entries: TextBuffer) -> TextBuffer {
        var out = TextBuffer(capacity: entries.bytes.count + 160)
        out.append("{\"cursorId\":\(id),\"currentPageIndex\":\(page),\"pageSize\":\(pageSize),\"totalEntries\":\(totalEntries),\"totalPages\":\(totalPages),\"currentPageOrderedEntries\":")
        out.append(contentsOf: entries)
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// Open cursors of one store.
final class CursorTable: @unchecked Sendable {
    private let lock = Lock()
    private var cursors: [Int64: OpenCursor] = [:]
    private var nextId: Int64 = 1

    func open(plan: QueryPlan, pageSize: Int, totalEntries: Int64, owner: Int) -> OpenCursor {
        lock.withLock {
            let cursor = OpenCursor(id: nextId, plan: plan, pageSize: pageSize, totalEntries: totalEntries, owner: owner)
            nextId += 1
            cursors[cursor.id] = cursor
            return cursor
        }
    }

    func get(_ id: Int64) -> OpenCursor? { lock.withLock { cursors[id] } }
    func close(_ id: Int64) { lock.withLock { _ = cursors.removeValue(forKey: id) } }
    func closeAll(owner: Int) { lock.withLock { cursors = cursors.filter { $0.value.owner != owner } } }
    var count: Int { lock.withLock { cursors.count } }
}
