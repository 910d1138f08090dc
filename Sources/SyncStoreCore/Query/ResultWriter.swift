import CSQLite
import CJansson
import Glibc
import SyncStoreSupport

/// Writes query rows as JSON text. Entry rows are copied as stored (no parse); value rows are
/// built with jansson, and a column whose declared type is the soup column's is parsed back into
/// an object, so `{soup:_soup}` in Smart SQL yields entries, not strings.
package enum ResultWriter {
    package static func writeRows(_ statement: Statement, rows: QueryPlan.Rows, into out: inout TextBuffer) throws {
        out.append(UInt8(ascii: "["))
        var first = true
        while try statement.step() {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            switch rows {
            case .entries:
                out.append(statement.textBytes(0))
            case .values:
                try writeValueRow(statement, into: &out)
            }
        }
        out.append(UInt8(ascii: "]"))
    }

    /// One value row as JSON text.
    package static func valueRowText(_ statement: Statement) throws -> String {
        var out = TextBuffer(capacity: 128)
        try writeValueRow(statement, into: &out)
        return out.string
    }

    private static func writeValueRow(_ statement: Statement, into out: inout TextBuffer) throws {
        let row = JSONDocument.array()
        for i in 0..<statement.columnCount {
            row.root.append(owned: value(statement, column: i))
        }
        guard let text = row.root.dumpCString() else { throw StoreError(.internal, "Cannot serialize a result row") }
        defer { free(text) }
        out.append(cString: text)
    }

    private static func value(_ statement: Statement, column i: Int32) -> UnsafeMutablePointer<json_t>? {
        switch statement.type(i) {
        case SQLITE_INTEGER: return JSONMake.int(statement.int64(i))
        case SQLITE_FLOAT: return JSONMake.real(statement.double(i))
        case SQLITE_NULL: return JSONMake.null()
        case SQLITE_BLOB: return JSONMake.null()
        default:
            if statement.declaredType(i) == SoupCatalog.soupColumnType {
                let bytes = statement.textBytes(i)
                if let base = bytes.baseAddress,
                   let doc = try? JSONDocument.parse(bytes: base, length: bytes.count) {
                    return doc.root.retained()
                }
            }
            return JSONMake.string(statement.text(i))
        }
    }
}
