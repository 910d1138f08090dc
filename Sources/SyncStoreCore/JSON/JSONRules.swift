/// The one acceptance rule for JSON text from anywhere (host arguments, server answers, custom
/// target callbacks, files, stored entries read back): what jansson accepts (RFC 8259, valid
/// UTF-8, paired surrogates, U+0000 allowed inside string values), and also
/// - no NUL byte anywhere in the text (jansson's lexer would drop one after a number or literal);
/// - no U+0000 in an object key (jansson refuses it; SQLite would store it and jansson could
///   never read the entry back);
/// - at most `maxDepth` nested arrays and objects in a stored entry, counted from the entry
///   itself (see `maxDepth`).
/// The header states the same rule (SYNCSTORE_JSON_MAX_DEPTH).
package enum JSONRules {
    /// Nesting limit of an entry, outermost object = 1. SQLite's JSON functions refuse deeper
    /// text ("malformed JSON"): 2000 levels in SQLite 3.40 (the system library here), 1000 from
    /// SQLite 3.45 on. 1000 keeps every stored entry readable by json_extract on either, so an
    /// upgrade of the system SQLite can never make a soup unreadable. Keep equal to
    /// SYNCSTORE_JSON_MAX_DEPTH in include/syncstore.h.
    package static let maxDepth = 1000

    /// What the rule says, for messages.
    package static let depthRule = "entries may nest at most \(maxDepth) levels of arrays and objects (SYNCSTORE_JSON_MAX_DEPTH), the deepest SQLite's JSON functions read"
    package static let nulRule = "JSON text never holds a NUL byte (inside a string write \\u0000)"
    package static let nulKeyRule = "object keys may not hold U+0000 (\\u0000)"

    /// The offset of the first container opened deeper than `limit` in `bytes`, nil when the text
    /// stays within it. Exact for valid JSON (brackets inside strings do not count); invalid
    /// text is refused by the parser anyway. Text shorter than 2 * limit + 2 cannot be deeper.
    package static func firstTooDeep(_ bytes: UnsafePointer<UInt8>, count: Int, limit: Int) -> Int? {
        guard count > 2 * limit else { return nil }
        var depth = 0
        var inString = false
        var i = 0
        while i < count {
            let c = bytes[i]
            if inString {
                if c == UInt8(ascii: "\\") { i += 1 } else if c == UInt8(ascii: "\"") { inString = false }
            } else if c == UInt8(ascii: "\"") {
                inString = true
            } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                depth += 1
                if depth > limit { return i }
            } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                depth -= 1
            }
            i += 1
        }
        return nil
    }
}
