import CJansson

/// A new reference to a value another owner keeps; used to move built values into containers.
func cjanssonRetain(_ raw: UnsafeMutablePointer<json_t>) -> UnsafeMutablePointer<json_t>? {
    cjansson_incref(raw)
}

/// A new JSON null (jansson's null is a shared singleton; the reference is still counted).
func json_null_value() -> UnsafeMutablePointer<json_t> {
    json_null() ?? json_object()
}
