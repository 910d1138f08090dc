import SyncStoreCore
import SyncStoreSync
/// What hybrid JavaScript asks of the logged-in session: "com.salesforce.oauth" (the
/// credentials force.js starts from) and "com.salesforce.network" (the REST requests force.js
/// sends through the native network stack when it runs in a Cordova container). Both use the
/// plugin's default remote: the logged-in user (docs/hybrid-plugin.md).
package enum OAuthActions {
    package static let table: [String: PluginAction] = [
        "getAuthCredentials": { plugin, _, _ in .json(try credentials(plugin)) },
        // There is no login page here: authenticating answers the credentials the host set.
        "authenticate": { plugin, _, _ in .json(try credentials(plugin)) },
        "getAppHomeUrl": { _, _, _ in .json("\"\"") },
    ]

    /// The SDK's credentials dictionary, from the default remote's JSON (members it lacks are null).
    private static func credentials(_ plugin: HybridPlugin) throws -> String {
        guard let remote = plugin.defaultRemoteJSON else {
            throw StoreError(.auth, "Not authenticated: the plugin has no default remote (give {\"remote\": ...} when creating it, or set one)")
        }
        let source = try JSONDocument.parse(remote, what: "remote config")
        let out = JSONDocument.object()
        let names = ["accessToken", "refreshToken", "clientId", "userId", "orgId", "loginUrl", "instanceUrl",
                     "identityUrl", "communityId", "communityUrl"]
        for name in names {
            if let value = source.root[name] {
                out.root.set(name, owned: value.retained())
            } else {
                out.root.set(name, owned: JSONMake.null())
            }
        }
        // Tokens come from the instance itself unless the remote says otherwise (the dev server
        // serves /services/oauth2/token).
        if source.root["loginUrl"] == nil, let instance = source.root["instanceUrl"] { out.root.set("loginUrl", owned: instance.retained()) }
        out.root.set("userAgent", owned: JSONMake.string("SyncStore/\(SyncStoreVersion.string) hybrid"))
        return out.root.dump()
    }
}

package enum NetworkActions {
    package static let table: [String: PluginAction] = [
        "pgSendRequest": { plugin, call, _ in try sendRequest(plugin, call) },
    ]

    /// {endPoint, path, method, queryParams, headerParams, fileParams, returnBinary,
    ///  doesNotRequireAuthentication}: the request goes to the default remote's instance, with its
    /// token (refreshed once on 401), and answers the body: JSON when it parses, else its text.
    private static func sendRequest(_ plugin: HybridPlugin, _ call: PluginCall) throws -> PluginAnswer {
        guard let remote = plugin.defaultRemoteJSON else {
            throw StoreError(.auth, "Not authenticated: the plugin has no default remote to send requests to")
        }
        let binary = try call.bool("returnBinary", default: false)
        if let files = call.fields["fileParams"], files.isObject, !files.members.isEmpty {
            throw StoreError.argument("pgSendRequest: file uploads (fileParams) are not supported: send the file's content in a JSON body instead (e.g. a ContentVersion's VersionData as base64)")
        }
        let method = (try call.optionalString("method") ?? "GET").uppercased()
        guard ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"].contains(method) else {
            throw StoreError.argument("pgSendRequest: unknown method '\(method)'")
        }
        var path = (try call.optionalString("endPoint") ?? "") + (try call.string("path"))
        if !path.hasPrefix("/") { path = "/" + path }
        guard !path.includes("://"), !path.includes("@") else {
            throw StoreError.argument("pgSendRequest: the path must be a path on the instance, not a URL")
        }
        var body: [UInt8]? = nil
        if let params = call.fields["queryParams"], params.isObject, !params.members.isEmpty {
            if ["GET", "DELETE", "HEAD"].contains(method) {
                let query = params.members.map { name, value in
                    "\(RemoteURL.encode(name))=\(RemoteURL.encode(value.string ?? value.dump()))"
                }
                path += (path.includes("?") ? "&" : "?") + query.joined(separator: "&")
            } else {
                body = Array(params.dump().utf8)
            }
        }
        var headers: [String] = []
        if let given = call.fields["headerParams"], given.isObject {
            for (name, value) in given.members {
                guard let text = value.string, !name.isEmpty,
                      !name.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 58 }),
                      !text.utf8.contains(where: { $0 == 13 || $0 == 10 }) else {
                    throw StoreError.argument("pgSendRequest: header '\(name)' must be a name and a one-line string")
                }
                headers.append("\(name): \(text)")
            }
        }
        let client = RestClient(config: try RemoteConfig.parse(remote))
        let response = try client.send(method, path, body: body, headers: headers)
        guard response.isSuccess else { throw RestClient.error(for: response, method: method, path: path) }
        if binary {
            // The SDK's shape for binary answers (attachments, files): the bytes as base64.
            let out = JSONDocument.object()
            out.root.set("encodedBody", owned: JSONMake.string(base64(response.body)))
            out.root.set("contentType", owned: response.contentType.map { JSONMake.string($0) } ?? JSONMake.null())
            return .json(out.root.dump())
        }
        // An empty answer (a 204): "OK", as Android's success() (docs/hybrid-plugin.md, "Answers").
        if response.body.isEmpty { return .ok }
        if let parsed = try? response.json(what: "answer") { return .json(parsed.root.dump()) }
        return .json(HybridPlugin.messageJSON(response.text))
    }
}

/// Standard base64 (RFC 4648, with padding), for binary answers.
package func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i < bytes.count {
        let n = min(3, bytes.count - i)
        let b0 = UInt32(bytes[i]), b1 = n > 1 ? UInt32(bytes[i + 1]) : 0, b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
        let v = b0 << 16 | b1 << 8 | b2
        out.append(alphabet[Int(v >> 18 & 63)])
        out.append(alphabet[Int(v >> 12 & 63)])
        out.append(n > 1 ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "="))
        out.append(n > 2 ? alphabet[Int(v & 63)] : UInt8(ascii: "="))
        i += 3
    }
    return String(decoding: out, as: UTF8.self)
}

/// "com.salesforce.sdkinfo": what mobilesync.js's Force.init and apps ask of the container.
package enum SDKInfoActions {
    package static let table: [String: PluginAction] = [
        "getInfo": { _, _, _ in
            let out = JSONDocument.object()
            out.root.set("sdkVersion", owned: JSONMake.string(SyncStoreVersion.string))
            let services = [HybridPlugin.smartStoreService, HybridPlugin.mobileSyncService, HybridPlugin.oauthService,
                            HybridPlugin.networkService, HybridPlugin.sdkInfoService]
            let list = JSONDocument.array()
            for service in services { list.root.append(owned: JSONMake.string(service)) }
            out.root.set("forcePluginsAvailable", owned: list.root.retained())
            out.root.set("appName", owned: JSONMake.string("SyncStore"))
            out.root.set("appVersion", owned: JSONMake.string(SyncStoreVersion.string))
            out.root.set("bootConfig", owned: JSONDocument.object().root.retained())
            return .json(out.root.dump())
        },
        // App features are the SDK's usage statistics: there is nothing to report them to. "OK"
        // as Android's success() (iOS never answers; cordova.force.js passes no callbacks).
        "registerAppFeature": { _, _, _ in .ok },
        "unregisterAppFeature": { _, _, _ in .ok },
    ]
}
