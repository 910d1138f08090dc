/// Rewrites Smart SQL (docs/queries.md#smart-sql) into SQL over the soup tables:
/// `{soup}` -> table, `{soup:path}` -> index column or json_extract, `{soup:_soup}` -> JSON text,
/// `{soup:_soupEntryId|_soupCreatedDate|_soupLastModifiedDate}` -> system columns.
/// Quoted strings and identifiers are copied untouched, except a string literal right after
/// MATCH, whose `{soup:path}` tokens become FTS column names. `alias.{soup:path}` reads through
/// the alias. Errors name the byte position of the offending token.
package struct SmartSqlTranslator {
    package let lookup: (String) -> SoupInfo?
    /// Told of each `{soup:path}` the query reads (the store indexes the entry dates it names).
    package var sawPath: (SoupInfo, String) -> Void = { _, _ in }

    package func translate(_ sql: String) throws -> String {
        let input = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(input.count + 64)
        var i = 0
        var lastWord = ""
        while i < input.count {
            let c = input[i]
            switch c {
            case UInt8(ascii: "'"):
                let end = try closing(UInt8(ascii: "'"), in: input, from: i, what: "string literal")
                if lastWord == "MATCH" {
                    out.append(c)
                    try translateMatchLiteral(Array(input[(i + 1)..<end]), at: i + 1, into: &out)
                    out.append(c)
                } else {
                    out.append(contentsOf: input[i...end])
                }
                i = end + 1
                lastWord = ""
            case UInt8(ascii: "\""), UInt8(ascii: "`"):
                let end = try closing(c, in: input, from: i, what: "quoted identifier")
                out.append(contentsOf: input[i...end])
                i = end + 1
                lastWord = ""
            case UInt8(ascii: "["):
                guard let end = input[(i + 1)...].firstIndex(of: UInt8(ascii: "]")) else {
                    throw StoreError.argument("Smart SQL: unterminated [identifier] at position \(i)")
                }
                out.append(contentsOf: input[i...end])
                i = end + 1
                lastWord = ""
            case UInt8(ascii: "-") where i + 1 < input.count && input[i + 1] == UInt8(ascii: "-"):
                let end = input[i...].firstIndex(of: UInt8(ascii: "\n")) ?? input.count
                out.append(contentsOf: input[i..<end])
                i = end
            case UInt8(ascii: "/") where i + 1 < input.count && input[i + 1] == UInt8(ascii: "*"):
                var end = input.count
                var j = i + 2
                while j + 1 < input.count {
                    if input[j] == UInt8(ascii: "*") && input[j + 1] == UInt8(ascii: "/") { end = j + 2; break }
                    j += 1
                }
                out.append(contentsOf: input[i..<end])
                i = end
            case UInt8(ascii: "{"):
                let (content, end) = try token(input, at: i)
                let qualifier = takeQualifier(from: &out)
                out.append(contentsOf: try resolve(content, qualifier: qualifier, at: i).utf8)
                i = end + 1
                lastWord = ""
            case UInt8(ascii: "}"):
                throw StoreError.argument("Smart SQL: unbalanced '}' at position \(i)")
            default:
                if isWordByte(c) {
                    var j = i
                    while j < input.count && isWordByte(input[j]) { j += 1 }
                    out.append(contentsOf: input[i..<j])
                    lastWord = String(decoding: input[i..<j], as: UTF8.self).uppercased()
                    i = j
                } else {
                    out.append(c)
                    if !isSpace(c) { lastWord = "" }
                    i += 1
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func isWordByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c >= 0x80 || c == 0x24
    }

    private func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0C }

    /// Index of the quote closing the one at `start`; a doubled quote is an escaped one.
    private func closing(_ quote: UInt8, in input: [UInt8], from start: Int, what: String) throws -> Int {
        var j = start + 1
        while j < input.count {
            if input[j] == quote {
                if j + 1 < input.count && input[j + 1] == quote { j += 2; continue }
                return j
            }
            j += 1
        }
        throw StoreError.argument("Smart SQL: unterminated \(what) starting at position \(start)")
    }

    /// The text between `{` at `start` and its `}`.
    private func token(_ input: [UInt8], at start: Int) throws -> (String, Int) {
        var j = start + 1
        while j < input.count {
            if input[j] == UInt8(ascii: "}") { break }
            if input[j] == UInt8(ascii: "{") {
                throw StoreError.argument("Smart SQL: unbalanced '{' at position \(start) (another '{' at \(j) before '}')")
            }
            j += 1
        }
        guard j < input.count else { throw StoreError.argument("Smart SQL: unbalanced '{' at position \(start)") }
        let content = String(decoding: input[(start + 1)..<j], as: UTF8.self)
        guard !content.isEmpty else { throw StoreError.argument("Smart SQL: empty {} at position \(start)") }
        return (content, j)
    }

    /// Removes and returns `alias` when the output ends with `alias.` (a bare, "quoted",
    /// `backquoted` or [bracketed] name).
    private func takeQualifier(from out: inout [UInt8]) -> String? {
        guard out.last == UInt8(ascii: ".") else { return nil }
        var k = out.count - 1
        if k > 0 && (out[k - 1] == UInt8(ascii: "\"") || out[k - 1] == UInt8(ascii: "`") || out[k - 1] == UInt8(ascii: "]")) {
            let quote = out[k - 1] == UInt8(ascii: "]") ? UInt8(ascii: "[") : out[k - 1]
            var m = k - 2
            while m >= 0 && out[m] != quote { m -= 1 }
            guard m >= 0 else { return nil }
            let name = String(decoding: out[m..<(k)], as: UTF8.self)
            out.removeSubrange(m...)
            return name
        }
        while k > 0 && isWordByte(out[k - 1]) { k -= 1 }
        guard k < out.count - 1 else { return nil }
        let name = String(decoding: out[k..<(out.count - 1)], as: UTF8.self)
        out.removeSubrange(k...)
        return name
    }

    private func split(_ content: String, at position: Int) throws -> (SoupInfo, String?) {
        if let soup = lookup(content) { return (soup, nil) }
        guard let colon = content.lastIndex(of: ":") else {
            throw StoreError.argument("Smart SQL: unknown soup '\(content)' at position \(position)")
        }
        let name = String(content[..<colon])
        let path = String(content[content.index(after: colon)...])
        guard let soup = lookup(name) else {
            throw StoreError.argument("Smart SQL: unknown soup '\(name)' at position \(position)")
        }
        guard !path.isEmpty else { throw StoreError.argument("Smart SQL: empty path in {\(content)} at position \(position)") }
        do { try SoupPath.validate(path) } catch let e as StoreError {
            throw StoreError.argument("Smart SQL: bad path in {\(content)} at position \(position): \(e.message)")
        }
        return (soup, path)
    }

    private func resolve(_ content: String, qualifier: String?, at position: Int) throws -> String {
        let (soup, path) = try split(content, at: position)
        let prefix = qualifier.map { "\($0)." } ?? ""
        guard let path else { return prefix + soup.table }
        sawPath(soup, path)
        if let qualifier { return soup.expression(for: path, qualifier: qualifier) }
        // System columns are qualified because every soup table has them (joins stay unambiguous);
        // index columns have table-unique names and stay bare so `FROM {soup} AS x` still works.
        switch path {
        case SoupPath.entryId, SoupPath.created, SoupPath.lastModified, SoupPath.soupItself:
            return soup.expression(for: path, qualifier: soup.table)
        default:
            if let index = soup.index(for: path), index.hasColumn { return index.columnName }
            return soup.expression(for: path, qualifier: soup.table)
        }
    }

    /// Inside a MATCH literal `{soup:path}` names an FTS column and `{soup}` the FTS table.
    private func translateMatchLiteral(_ literal: [UInt8], at offset: Int, into out: inout [UInt8]) throws {
        var i = 0
        while i < literal.count {
            let c = literal[i]
            if c == UInt8(ascii: "{") {
                let (content, end) = try token(literal, at: i)
                let (soup, path) = try split(content, at: offset + i)
                if let path {
                    guard let index = soup.index(for: path), index.type == .fullText else {
                        throw StoreError.argument("Smart SQL: {\(content)} at position \(offset + i) is not a full_text index")
                    }
                    out.append(contentsOf: index.columnName.utf8)
                } else {
                    out.append(contentsOf: soup.ftsTable.utf8)
                }
                i = end + 1
            } else if c == UInt8(ascii: "}") {
                throw StoreError.argument("Smart SQL: unbalanced '}' at position \(offset + i)")
            } else {
                out.append(c)
                i += 1
            }
        }
    }
}
