import SyncStoreCore
/// SOQL literals the targets build queries with.
package enum SoqlLiteral {
    /// A quoted SOQL string literal.
    package static func quote(_ s: String) -> String {
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

    package static func list(_ values: [String]) -> String { values.map(quote).joined(separator: ", ") }
}
