extension StringProtocol {
    /// Whether `other` occurs in this text, comparing UTF-8 bytes (for the ASCII words the engine
    /// looks for in messages, URLs and content types, the same answer as `contains(_:)`).
    ///
    /// The engine's code uses this instead of `contains(_ other: some StringProtocol)`, which
    /// lives in the _StringProcessing module: one call to it links that module and the regex
    /// parser into libsyncstore, about 1 MB of the stripped library (scripts/release.sh bounds
    /// the library's size).
    package func includes(_ other: some StringProtocol) -> Bool {
        let needle = Array(other.utf8)
        guard !needle.isEmpty else { return true }
        let hay = Array(utf8)
        guard hay.count >= needle.count else { return false }
        for start in 0...(hay.count - needle.count) where hay[start] == needle[0] {
            var index = 1
            while index < needle.count && hay[start + index] == needle[index] { index += 1 }
            if index == needle.count { return true }
        }
        return false
    }
}
