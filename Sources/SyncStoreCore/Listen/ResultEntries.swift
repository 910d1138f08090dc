/// The entries in a query listener's result with their last modification, as two arrays sorted
/// by id: 16 bytes an entry (a dictionary takes about three times that), so a listener on a
/// 1M-entry result holds 16 MB. New entries have the highest ids, so a commit that inserts
/// appends; one that updates changes stamps in place.
struct ResultEntries {
    private(set) var ids: [Int64] = []
    private var stamps: [Int64] = []

    var count: Int { ids.count }

    init() {}

    /// From rows in any order (an exact query's come in id order already: no sort then).
    init(_ rows: [(id: Int64, stamp: Int64)]) {
        var rows = rows
        if !zip(rows, rows.dropFirst()).allSatisfy({ $0.id < $1.id }) { rows.sort { $0.id < $1.id } }
        ids = rows.map(\.id)
        stamps = rows.map(\.stamp)
    }

    /// The last modification of entry `id`, nil when it is not in the result.
    func stamp(_ id: Int64) -> Int64? { position(id).found.map { stamps[$0] } }

    /// Sets entry `id` in or out of the result (`stamp` nil: out).
    mutating func set(_ id: Int64, _ stamp: Int64?) {
        let (found, at) = position(id)
        switch (found, stamp) {
        case (let i?, let s?): stamps[i] = s
        case (let i?, nil): ids.remove(at: i); stamps.remove(at: i)
        case (nil, let s?):
            if at == ids.count { ids.append(id); stamps.append(s) } else { ids.insert(id, at: at); stamps.insert(s, at: at) }
        case (nil, nil): break
        }
    }

    /// Binary search: the index of `id`, or where it would go.
    private func position(_ id: Int64) -> (found: Int?, at: Int) {
        if let last = ids.last, id > last { return (nil, ids.count) }
        var low = 0, high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if ids[mid] < id { low = mid + 1 } else { high = mid }
        }
        return (low < ids.count && ids[low] == id ? low : nil, low)
    }

    /// Walks this result and `now` (both in id order) together: `visit(id, before, after)` for
    /// each id in either.
    func merge(with now: ResultEntries, _ visit: (Int64, Int64?, Int64?) -> Void) {
        var i = 0, j = 0
        while i < ids.count || j < now.ids.count {
            if j == now.ids.count || (i < ids.count && ids[i] < now.ids[j]) {
                visit(ids[i], stamps[i], nil); i += 1
            } else if i == ids.count || now.ids[j] < ids[i] {
                visit(now.ids[j], nil, now.stamps[j]); j += 1
            } else {
                visit(ids[i], stamps[i], now.stamps[j]); i += 1; j += 1
            }
        }
    }
}
