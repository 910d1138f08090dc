/// SOQL literals the targets build queries with.
enum SoqlLiteral {
    /// A quoted SOQL string literal.
    static func quote(_ s: String) -> String {
        var out = "'"
        for c in s {
            switch c {
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out + "'"
    }

    static func list(_ values: [String]) -> String { values.map(quote).joined(separator: ", ") }
}
