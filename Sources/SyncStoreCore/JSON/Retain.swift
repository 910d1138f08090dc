import CJansson

/// A new JSON null (jansson's null is a shared singleton; the reference is still counted).
package func json_null_value() -> UnsafeMutablePointer<json_t> {
    json_null() ?? json_object()
}
