import SyncStoreCore
import SyncStoreSync
/// The arguments of one hybrid plugin call (docs/hybrid-plugin.md): the array cordova.force.js
/// passes to cordova.exec, i.e. an optional "pluginSDKVersion:<v>" string and one object holding
/// the action's fields and the storeConfig ("isGlobalStore", "storeName").
package struct PluginCall {
    package let action: String
    private let document: JSONDocument
    package let fields: JSON
    package let store: PluginStoreSlot

    package init(action: String, argsJSON: String) throws {
        self.action = action
        document = try JSONDocument.parse(argsJSON, what: "\(action) arguments")
        var fields: JSON? = nil
        let root = document.root
        if root.isObject {
            fields = root
        } else if root.isArray {
            // The SDK's exec puts its version first; the native side skips it, as the SDK's does.
            var items = root.elements
            if let first = items.first, let marker = first.string, marker.hasPrefix("pluginSDKVersion:") { items.removeFirst() }
            guard items.count <= 1 else {
                throw StoreError.argument("\(action) takes one argument object (as cordova.force.js sends it), got \(items.count) values")
            }
            if let only = items.first {
                guard only.isObject else { throw StoreError.argument("\(action)'s argument must be a JSON object") }
                fields = only
            }
        } else {
            throw StoreError.argument("\(action)'s arguments must be the JSON array cordova.exec receives")
        }
        let object = fields ?? JSONDocument.object().root
        self.fields = object
        store = try PluginStoreSlot(object)
    }

    package func has(_ key: String) -> Bool { fields[key].map { !$0.isNull } ?? false }

    /// A required string field.
    package func string(_ key: String) throws -> String {
        guard let value = fields[key], !value.isNull else { throw StoreError.argument("\(action) needs \"\(key)\"") }
        guard let s = value.string else { throw StoreError.argument("\(action): \"\(key)\" must be a string") }
        return s
    }

    package func optionalString(_ key: String) throws -> String? {
        guard has(key) else { return nil }
        return try string(key)
    }

    /// A required field of any JSON kind but null, as JSON text.
    package func jsonText(_ key: String) throws -> String {
        guard let value = fields[key], !value.isNull else { throw StoreError.argument("\(action) needs \"\(key)\"") }
        return value.dump()
    }

    package func optionalJSONText(_ key: String) -> String? {
        guard let value = fields[key], !value.isNull else { return nil }
        return value.dump()
    }

    package func json(_ key: String) throws -> JSON {
        guard let value = fields[key], !value.isNull else { throw StoreError.argument("\(action) needs \"\(key)\"") }
        return value
    }

    package func int64(_ key: String) throws -> Int64 {
        guard let value = fields[key], !value.isNull else { throw StoreError.argument("\(action) needs \"\(key)\"") }
        // JS numbers arrive as reals when they went through arithmetic (e.g. currentPageIndex + 1).
        if let i = value.int64 { return i }
        if let d = value.double, d.rounded() == d, abs(d) < 9.0e15 { return Int64(d) }
        throw StoreError.argument("\(action): \"\(key)\" must be an integer")
    }

    package func bool(_ key: String, default fallback: Bool) throws -> Bool {
        guard let value = fields[key], !value.isNull else { return fallback }
        guard let b = value.bool else { throw StoreError.argument("\(action): \"\(key)\" must be true or false") }
        return b
    }

    /// A sync named by "syncId" (a number) or "syncName" (a string), as reSync, getSyncStatus and
    /// deleteSync send it.
    package func syncReference() throws -> PluginSyncReference {
        if let value = fields["syncId"], !value.isNull {
            if let name = value.string { return .name(name) }
            return .id(try int64("syncId"))
        }
        if let name = try optionalString("syncName") { return .name(name) }
        throw StoreError.argument("\(action) needs \"syncId\" or \"syncName\"")
    }
}

package enum PluginSyncReference {
    case id(Int64), name(String)
}

/// Which store a call names: its storeConfig (StoreConfig.identity: "isGlobalStore" false and
/// "smartstore" when missing, as the SDK's plugins read it).
package struct PluginStoreSlot: Hashable {
    package let isGlobal: Bool
    package let name: String

    package init(isGlobal: Bool, name: String) {
        self.isGlobal = isGlobal
        self.name = name
    }

    package init(_ fields: JSON) throws {
        let (isGlobal, name) = try StoreConfig.identity(fields)
        self.init(isGlobal: isGlobal, name: name)
    }

    /// {"storeName", "isGlobalStore"}: how the plugins list stores, and the key provider's argument.
    package var json: String {
        let doc = JSONDocument.object()
        doc.root.set("storeName", owned: JSONMake.string(name))
        doc.root.set("isGlobalStore", owned: JSONMake.bool(isGlobal))
        return doc.root.dump()
    }
}

/// What an action answers: a JSON value, or later (the action calls the answer itself, from the
/// sync worker thread). Every success has a value, as on the platforms (docs/hybrid-plugin.md,
/// "Answers"): where their plugins call success() without one, JS receives the string "OK".
package enum PluginAnswer {
    case json(String)
    case later

    /// The "OK" of an action with nothing to say: cordova-android's success() (its PluginResult
    /// takes the message "OK") and iOS's messageAsString:@"OK".
    package static let ok = PluginAnswer.json("\"OK\"")
    /// true: what both platforms' pgRemoveStore, pgRemoveAllStores and pgRemoveAllGlobalStores answer.
    package static let yes = PluginAnswer.json("true")
}
