import CJansson

/// A new reference to a value another owner keeps; used to move built values into containers.
func cjanssonRetain(_ raw: UnsafeMutablePointer<json_t>) -> UnsafeMutablePointer<json_t>? {
    cjansson_incref(raw)
}
