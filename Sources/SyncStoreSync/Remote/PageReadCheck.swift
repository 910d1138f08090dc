import SyncStoreCore

extension ScannedPage {
    /// Differential check of the two ways sync down reads a query page (for fuzz targets and
    /// tests): the scanner (fast path) against jansson (the tree path), on the same bytes and
    /// plan. nil when they agree, else what differs. They agree when the scanner declines
    /// (jansson then takes the page), or when every record the scanner would store as text
    /// parses with jansson to the record jansson reads in the page, with the same values on
    /// the plan's paths, and the page's totalSize, done and nextRecordsUrl match. A record
    /// the scanner leaves to the tree path may be one jansson refuses: that fails the run, as
    /// jansson refusing the page does.
    package static func disagreement(_ bytes: [UInt8], plan: ScanPlan) -> String? {
        guard let page = scan(bytes, plan: plan) else { return nil }
        let whole = try? RestClient.parse(bytes, method: "GET", path: "query")
        var trees: [JSONDocument] = []
        for (k, record) in page.records.enumerated() {
            let text = Array(bytes[Int(record.start)..<Int(record.end)])
            guard let tree = try? RestClient.parse(text, method: "GET", path: "record") else {
                if record.needsTree { return whole == nil ? nil : "jansson reads the page but refuses record \(k) alone" }
                return "the scanner stores record \(k) as text jansson refuses"
            }
            trees.append(tree)
        }
        guard let whole else { return "the scanner accepts a page jansson refuses" }
        guard let records = whole.root["records"], records.isArray, records.count == page.records.count else {
            return "jansson reads another records array"
        }
        if page.totalSize != whole.root["totalSize"]?.int64 { return "totalSize differs" }
        if page.done != (whole.root["done"]?.bool ?? true) { return "done differs" }
        if page.nextRecordsUrl != whole.root["nextRecordsUrl"]?.string { return "nextRecordsUrl differs" }
        for (k, record) in records.elements.enumerated() {
            if trees[k].root.dump() != record.dump() { return "record \(k)'s text is not the record jansson reads" }
            if page.records[k].needsTree { continue }
            for (slot, path) in page.plan.paths.enumerated() {
                let expected = ScannedPage.comparable(record, at: path)
                let actual = page.comparable(record: k, slot: slot)
                if actual != expected { return "record \(k) path \(path.joined(separator: ".")): scanner \(actual), jansson \(expected)" }
            }
        }
        return nil
    }
}
