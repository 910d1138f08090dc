import SyncStoreCore
/// A short plain-text summary of an error answer's body that is not the API's error JSON: a
/// proxy's or web server's HTML page gives its title (or its first text), a problem-details
/// JSON object its title and detail, plain text its first characters. Messages carry this,
/// never the body itself, so no markup and no multi-kilobyte page reaches `error` or
/// `__last_error__` (docs/errors.md).
package enum ErrorBodySummary {
    /// The most characters a summary keeps.
    package static let maxCharacters = 200
    /// Only the start of a body is read: a title or a first sentence is near the top.
    private static let scannedBytes = 65_536

    /// nil when the body has nothing readable.
    package static func summary(_ body: [UInt8], contentType: String?) -> String? {
        guard !body.isEmpty else { return nil }
        let text = String(decoding: body.prefix(scannedBytes), as: UTF8.self)
        let type = contentType?.lowercased() ?? ""
        let first = text.unicodeScalars.first { !isSpace($0) }
        if type.includes("html") || type.includes("xml") || first == "<" {
            return bounded(markupSummary(text))
        }
        return bounded(collapse(text.unicodeScalars))
    }

    /// The page's `<title>`, unless it only repeats the status (nginx's "500"); then its first
    /// heading, else its first visible text.
    private static func markupSummary(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        let title = element("title", in: scalars).map { collapse(decodeEntities($0)) } ?? ""
        if !title.isEmpty && !title.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || isSpace($0) }) {
            return title
        }
        if let heading = element("h1", in: scalars).map({ collapse(decodeEntities(visibleText(Array($0)))) }), !heading.isEmpty {
            return heading
        }
        let visible = collapse(decodeEntities(visibleText(scalars)))
        return visible.isEmpty ? title : visible
    }

    /// The text between `<name ...>` and `</name` (case-insensitive), if present.
    private static func element(_ name: String, in s: [Unicode.Scalar]) -> ArraySlice<Unicode.Scalar>? {
        guard let open = find("<" + name, in: s, from: 0), let close = s[open...].firstIndex(of: ">") else { return nil }
        let end = find("</" + name, in: s, from: close + 1) ?? s.count
        return s[(close + 1)..<end]
    }

    /// The characters outside tags, comments, and `head` / `script` / `style` elements.
    private static func visibleText(_ s: [Unicode.Scalar]) -> ArraySlice<Unicode.Scalar> {
        var out: [Unicode.Scalar] = []
        var i = 0
        while i < s.count {
            guard s[i] == "<" else { out.append(s[i]); i += 1; continue }
            if startsWith("<!--", s, at: i) {
                i = (find("-->", in: s, from: i + 4).map { $0 + 3 }) ?? s.count
                continue
            }
            var skipped = false
            for hidden in ["head", "script", "style"] where startsWith("<" + hidden, s, at: i) {
                let after = i + hidden.unicodeScalars.count + 1
                if after < s.count, s[after] == ">" || isSpace(s[after]) {
                    let close = find("</" + hidden, in: s, from: after) ?? s.count
                    i = (s[close...].firstIndex(of: ">").map { $0 + 1 }) ?? s.count
                    skipped = true
                    break
                }
            }
            if skipped { continue }
            // A tag reads as a word break ("<br>", "</td><td>").
            i = (s[i...].firstIndex(of: ">").map { $0 + 1 }) ?? s.count
            out.append(" ")
        }
        return out[...]
    }

    /// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&#39;` `&nbsp;` and numeric references; `<` and `>`
    /// become spaces, so the summary of a page never reads as markup.
    private static func decodeEntities(_ s: ArraySlice<Unicode.Scalar>) -> [Unicode.Scalar] {
        let named: [String: Unicode.Scalar] = ["amp": "&", "quot": "\"", "apos": "'", "nbsp": " ", "lt": " ", "gt": " "]
        var out: [Unicode.Scalar] = []
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            if c == "&", let semi = s[i..<min(s.endIndex, i + 10)].firstIndex(of: ";") {
                let name = String(String.UnicodeScalarView(s[(i + 1)..<semi]))
                var decoded: Unicode.Scalar? = named[name.lowercased()]
                if decoded == nil, name.hasPrefix("#") {
                    let digits = name.dropFirst()
                    let value = digits.hasPrefix("x") || digits.hasPrefix("X")
                        ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                    decoded = value.flatMap(Unicode.Scalar.init)
                }
                if let d = decoded {
                    out.append(d == "<" || d == ">" ? " " : d)
                    i = semi + 1
                    continue
                }
            }
            out.append(c == "<" || c == ">" ? " " : c)
            i += 1
        }
        return out
    }

    /// Runs of white space and control characters as one space, trimmed.
    private static func collapse<S: Sequence>(_ s: S) -> String where S.Element == Unicode.Scalar {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for c in s {
            if isSpace(c) || c.value < 0x20 || c.value == 0x7F {
                pendingSpace = !out.isEmpty
                continue
            }
            if pendingSpace { out.append(" "); pendingSpace = false }
            out.append(c)
        }
        return String(out)
    }

    private static func bounded(_ text: String) -> String? {
        guard !text.isEmpty else { return nil }
        guard text.count > maxCharacters else { return text }
        return String(text.prefix(maxCharacters - 1)) + "…"
    }

    private static func isSpace(_ c: Unicode.Scalar) -> Bool {
        c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{0C}" || c == "\u{A0}"
    }

    private static func startsWith(_ prefix: String, _ s: [Unicode.Scalar], at i: Int) -> Bool {
        var k = i
        for p in prefix.unicodeScalars {
            guard k < s.count, lower(s[k]) == p else { return false }
            k += 1
        }
        return true
    }

    private static func find(_ needle: String, in s: [Unicode.Scalar], from start: Int) -> Int? {
        guard let first = needle.unicodeScalars.first, start < s.count else { return nil }
        var i = start
        while i < s.count {
            if lower(s[i]) == first && startsWith(needle, s, at: i) { return i }
            i += 1
        }
        return nil
    }

    private static func lower(_ c: Unicode.Scalar) -> Unicode.Scalar {
        ("A"..."Z").contains(c) ? Unicode.Scalar(c.value + 32) ?? c : c
    }
}
