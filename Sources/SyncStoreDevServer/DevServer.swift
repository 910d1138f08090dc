import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdTLS
import NIOCore

/// The dev server's options, shared by `syncstore-devserver` and `syncstore-cli serve`.
public struct DevServerOptions: ParsableArguments {
    public init() {}

    /// The grammar of faults and the clock, for the commands' help.
    public static let discussion = """
        The first line on stdout is the base URL, e.g. https://127.0.0.1:40123. \
        API: /services/oauth2/token, /services/data/vNN.N/ (31.0 to 66.0): sobjects, \
        describe, query, queryAll, search, composite, composite/sobjects, \
        composite/batch, ui-api/layout, connect/briefcase/priming-records. \
        Streaming API: POST /cometd/NN.N (37.0 to 66.0), CometD long-polling with \
        the replay extension, Change Data Capture events of every committed record \
        write on /data/ChangeEvents and /data/<Object>ChangeEvent. \
        With --twophase also GET /twophase/fetch and POST /twophase/synchronise. \
        Authenticate with --token, or POST /services/oauth2/token \
        (grant_type=password with --user, or grant_type=refresh_token). \
        With --datasync also the Datasync table protocol: /tables/{table}[/{id}] \
        (GET list with $filter/$orderby/$top/$skip/$count/__includedeleted and \
        nextLink, GET/PUT/DELETE by id with If-Match, POST with client ids, soft \
        delete), same bearer token, faults and clock.

        FAULT SPEC (--faults, or PUT /__devserver/faults with --admin):
          SPEC := PART (';' PART)*      PART := seed=N | RULE
          RULE := [METHOD] [PATH-GLOB] ITEM...   (space separated)
          ITEM := latency=MS[-MS] | status=CODE | html=CODE | drop=before|after|mid
                | unauthorized | expire-tokens | repeat-locator | unknown-client
                | rate=P | times=N | after=N

        '*' in PATH-GLOB matches anything, '/' included. drop=after handles \
        (commits) the request, then closes the connection unanswered (on every \
        route: sobjects, composite/sobjects, composite, composite/batch); on a \
        kept-alive connection that looks like a stale connection, which libcurl \
        answers by sending the request again. drop=mid sends half the body. \
        repeat-locator (GET query/queryAll only, other requests pass it by): the \
        answer is not done and its nextRecordsUrl names the page just served, so a \
        client that follows it blindly never ends. unknown-client (/cometd/* requests \
        naming a client only): its messages are answered 403::Unknown client and \
        the client is forgotten, so it must handshake again.

        Fault examples:
          --faults 'latency=20ms'
          --faults 'POST */sobjects/* drop=after times=1'
          --faults 'seed=7; GET */query* status=503 rate=0.1'
          --faults '* unauthorized after=10 times=3'
          --faults 'GET */query* repeat-locator times=5'
          --faults 'POST /cometd/* unknown-client times=1'

        CLOCK: --clock-offset SECONDS (negative = behind, |x| <= 86400), or PUT \
        /__devserver/clock with '-600' or {"offsetSeconds": -600} (GET shows it, \
        DELETE resets it; needs --admin), shifts the server clock: \
        CreatedDate/LastModifiedDate/SystemModstamp, the Date header, \
        sobjects/{T}/updated|deleted latestDateCovered, SOQL TODAY etc. Token expiry \
        stays on the real clock. Stamps never go back: after the offset is lowered \
        they advance 1 ms per write until the clock passes.
        """

    @Option(help: "Address to bind (127.0.0.1 or ::1).") public var host = "127.0.0.1"
    @Option(help: "Port; 0 picks a free one.") public var port = 0
    @Option(help: "SQLite database file (data survives restarts); default: in memory.") public var db: String?
    @Option(help: "JSON schema file; default: built-in Account, Contact, Opportunity, Widget__c.") public var schema: String?
    @Option(help: "Deterministic sample data, e.g. Contact=100000,Account=1000 (only into empty types).") public var seed: String?
    @Option(name: .customLong("import"), help: "JSON file {\"Type\": [records...]} to load at start.") public var importPath: String?
    @Option(help: "A fixed bearer token that never expires.") public var token: String?
    @Option(help: "username:password accepted by the password grant.") public var user = "dev@example.com:devpassword"
    @Option(help: "Lifetime of issued access tokens, in seconds.") public var tokenLifetime = 7200
    @Option(help: "PEM certificate chain: serve HTTPS.") public var tlsCert: String?
    @Option(help: "PEM private key for --tls-cert.") public var tlsKey: String?
    @Option(help: "Fault injection spec (grammar above).") public var faults: String?
    @Option(help: "Smallest batchSize honoured in Sforce-Query-Options (the API's is 200; lower it to page small test data).") public var minBatchSize = 200
    @Option(help: "Records per query page when the request sets no batchSize (the API's is 2000; it may send fewer for wide records).") public var defaultBatchSize = 2000
    @Option(help: "Children per parent returned inline by a child subquery; more are paged through the nested result's nextRecordsUrl.") public var childBatchSize = 200
    @Option(parsing: .unconditional, help: "Shift the server clock by this many seconds (negative: behind; at most one day either way): record stamps, the Date header, updated/deleted windows, SOQL TODAY... (token expiry stays on the real clock).") public var clockOffset: String?
    @Flag(help: "Also serve the Datasync table protocol (Azure Mobile Apps) under /tables/{table}, same auth and faults.") public var datasync = false
    @Option(help: "Datasync rows to create in empty tables, e.g. todo=300 (all share one updatedAt) or todo=300/10 (10 per updatedAt); needs --datasync.") public var datasyncSeed: String?
    @Option(help: "Most items one Datasync list answer carries; more follow through nextLink.") public var datasyncPageSize = 100
    @Flag(help: "Also serve the two-phase protocol: GET /twophase/fetch and POST /twophase/synchronise (docs/sync.md#two-phase).") public var twophase = false
    @Option(help: "Two-phase tables: NAME[:IDKEY[:datetime|iso8601]], comma separated.") public var twophaseTables = TwoPhase.defaultTables
    @Option(help: "Two-phase: N rows in each empty table at start.") public var twophaseSeed: Int?
    @Flag(help: "Two-phase: answer synchronise in the plain shape ({\"<table>\": [row]}, as the fetch) and refuse a call whose add names an id the server has (409, nothing applied), as a server written from the protocol's description; PUT /__devserver/twophase 'plain' or 'operations' switches at run time (--admin).") public var twophasePlain = false
    @Option(help: "Change events kept for Streaming API replay (the oldest are purged first; none is kept past 72 hours of the server clock).") public var eventRetention = ChangeEvents.defaultRetention
    @Option(help: "Streaming API: how long a /meta/connect long poll is held without events, in ms (the advice timeout).") public var cometdTimeoutMs = 110_000
    @Option(help: "Streaming API: a client that does not connect again within this many ms of a reply is forgotten (403::Unknown client).") public var cometdSessionMs = 40_000
    /// Record changes in one transaction past which it publishes GAP_OVERFLOW events (an org's is
    /// 100,000); hidden: tests lower it to keep seeding small.
    @Option(help: .hidden) public var eventOverflowThreshold = ChangeEvents.defaultOverflowThreshold
    @Flag(help: "Enable /__devserver/faults and /__devserver/clock (change faults and the clock offset at run time), /__devserver/import and /__devserver/events (change events: GET shows them, POST /__devserver/events/purge purges them).") public var admin = false
    @Flag(help: "Log every request (and injected fault) to stderr.") public var verbose = false

    public func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard (1...315_360_000).contains(tokenLifetime) else { throw ValidationError("--token-lifetime must be 1 s to 10 years") }
        guard (1...2000).contains(minBatchSize) else { throw ValidationError("--min-batch-size must be 1...2000") }
        guard (1...2000).contains(childBatchSize) else { throw ValidationError("--child-batch-size must be 1...2000") }
        guard (1...2000).contains(defaultBatchSize) else { throw ValidationError("--default-batch-size must be 1...2000") }
        guard user.contains(":") else { throw ValidationError("--user must be username:password") }
        if let faults { _ = try Faults.parse(faults) }
        guard (1...1000).contains(datasyncPageSize) else { throw ValidationError("--datasync-page-size must be 1...1000") }
        if let datasyncSeed {
            guard datasync else { throw ValidationError("--datasync-seed needs --datasync") }
            do { _ = try DatasyncTables.parseSeed(datasyncSeed) } catch { throw ValidationError("\(error)") }
        }
        if twophase {
            do { _ = try TwoPhase.parseTables(twophaseTables) } catch { throw ValidationError("\(error)") }
        }
        if let twophaseSeed, !(0...1_000_000).contains(twophaseSeed) { throw ValidationError("--twophase-seed must be 0...1000000") }
        if !twophase && (twophaseSeed != nil || twophaseTables != TwoPhase.defaultTables || twophasePlain) { throw ValidationError("--twophase-tables, --twophase-seed and --twophase-plain need --twophase") }
        guard (1...10_000_000).contains(eventRetention) else { throw ValidationError("--event-retention must be 1...10000000") }
        guard (1...10_000_000).contains(eventOverflowThreshold) else { throw ValidationError("--event-overflow-threshold must be 1...10000000") }
        guard (1...600_000).contains(cometdTimeoutMs) else { throw ValidationError("--cometd-timeout-ms must be 1...600000") }
        guard (1...3_600_000).contains(cometdSessionMs) else { throw ValidationError("--cometd-session-ms must be 1...3600000") }
        if let clockOffset, ClockOffset.parseSeconds(clockOffset) == nil {
            throw ValidationError("--clock-offset must be a number of seconds within one day (-86400...86400)")
        }
    }
}

/// Why the dev server could not start (or stopped listening), with what to do; `kind` lets a
/// command pick its exit code.
public struct DevServerError: Error, CustomStringConvertible {
    public enum Kind: Sendable { case portInUse, badAddress, notFound, badInput, storage, other }
    public let kind: Kind
    public let message: String
    public var description: String { message }

    /// The exit code of a command that could not serve (sysexits, as syncstore-cli's codes).
    public var exitCode: Int32 {
        switch kind {
        case .portInUse: return 75   // EX_TEMPFAIL: retry, or another port
        case .badAddress: return 64  // EX_USAGE
        case .notFound: return 66    // EX_NOINPUT
        case .badInput: return 65    // EX_DATAERR
        case .storage: return 74     // EX_IOERR
        case .other: return 70       // EX_SOFTWARE
        }
    }

    /// `body`'s errors as DevServerErrors: a missing file is notFound, bad content badInput.
    static func classify<T>(_ what: String, _ kind: Kind = .badInput, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DevServerError {
            throw error
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile || error.code == .fileNoSuchFile {
            throw DevServerError(kind: .notFound, message: "\(what): no such file")
        } catch let error as CocoaError where error.code == .fileReadNoPermission {
            throw DevServerError(kind: .storage, message: "\(what): permission denied")
        } catch let error as JSONParseError {
            throw DevServerError(kind: .badInput, message: "\(what): not valid JSON (\(error.message))")
        } catch {
            throw DevServerError(kind: kind, message: "\(what): \(error)")
        }
    }
}

/// Runs a dev server until its task is cancelled or the process gets SIGINT/SIGTERM.
public enum DevServer {
    /// Starts the server; `announce` gets the base URL once it listens.
    public static func run(_ o: DevServerOptions, announce: @escaping @Sendable (String) -> Void) async throws {
        // swift-log's default handler writes to stderr, so stdout carries only the URL.
        var notes: [String] = []
        // Before the store opens: imported rows without stamps get the shifted clock too.
        if let clockOffset = o.clockOffset, let millis = ClockOffset.parseSeconds(clockOffset) { ClockOffset.shared.set(millis: millis) }
        let schemaJSON: JSON
        if let schema = o.schema {
            schemaJSON = try DevServerError.classify("--schema \(schema)") { try JSON.parse(Array(try Data(contentsOf: URL(fileURLWithPath: schema)))) }
        } else {
            schemaJSON = try JSON.parse(Schema.builtInJSON)
        }
        let loadedSchema = try DevServerError.classify("--schema") { try Schema.load(json: schemaJSON) }
        let store = try DevServerError.classify("--db \(o.db ?? ":memory:") (make its directory writable, or choose another file)", .storage) {
            try Store(schema: loadedSchema, path: o.db ?? ":memory:")
        }
        // Before seeding and importing: both publish change events.
        store.events.retention = o.eventRetention
        store.events.overflowThreshold = o.eventOverflowThreshold
        try DevServerError.classify("--db \(o.db ?? ":memory:") (change events)", .storage) { try store.events.enforceRetention() }
        if let importPath = o.importPath {
            let n = try DevServerError.classify("--import \(importPath)") {
                try Seeder(store: store).importFile(try JSON.parse(Array(try Data(contentsOf: URL(fileURLWithPath: importPath)))))
            }
            notes.append("imported \(n) records")
        }
        if let seed = o.seed {
            for (obj, count) in try DevServerError.classify("--seed", .badInput, { try Seeder.parseSpec(seed, schema: loadedSchema) }) {
                let n = try DevServerError.classify("--seed", .storage) { try Seeder(store: store).seed(obj, count: count) }
                notes.append("seeded \(n) \(obj.name)")
            }
        }
        var twoPhase: TwoPhase? = nil
        if o.twophase {
            let tp = try DevServerError.classify("--twophase", .storage) { try TwoPhase(store: store, spec: o.twophaseTables) }
            if let n = o.twophaseSeed {
                notes.append("seeded \(try DevServerError.classify("--twophase-seed", .storage) { try tp.seed(n) }) two-phase rows")
            }
            tp.setPlain(o.twophasePlain)
            twoPhase = tp
        }
        let userParts = o.user.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let auth = Auth(fixedToken: o.token, username: userParts[0], password: userParts.count > 1 ? userParts[1] : "", lifetimeSeconds: o.tokenLifetime)
        let api = API(store: store, auth: auth)
        api.minBatchSize = o.minBatchSize
        api.childBatchSize = o.childBatchSize
        api.defaultBatchSize = o.defaultBatchSize
        if o.datasync {
            let tables = try DevServerError.classify("--datasync (the datasync_rows table)", .storage) { try DatasyncTables(store: store, pageSize: o.datasyncPageSize) }
            for (table, count, group) in try DatasyncTables.parseSeed(o.datasyncSeed ?? "") {
                let n = try DevServerError.classify("--datasync-seed", .storage) { try tables.seed(table: table, count: count, group: group) }
                notes.append("seeded \(n) \(table) rows")
            }
            api.datasync = tables
        }
        api.twoPhase = twoPhase
        let faultState = Faults()
        if let faults = o.faults { try faultState.set(faults) }

        let tls: TLSConfiguration?
        if let tlsCert = o.tlsCert, let tlsKey = o.tlsKey {
            let chain = try DevServerError.classify("--tls-cert \(tlsCert) (a PEM certificate chain)") { try NIOSSLCertificate.fromPEMFile(tlsCert) }
            let key = try DevServerError.classify("--tls-key \(tlsKey) (a PEM private key)") { try NIOSSLPrivateKey(file: tlsKey, format: .pem) }
            tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        } else {
            tls = nil
        }
        let scheme = tls == nil ? "http" : "https"
        let hostForURL = o.host.contains(":") ? "[\(o.host)]" : o.host
        let streaming = Streaming(api: api, timeoutMillis: o.cometdTimeoutMs, sessionMillis: o.cometdSessionMs)
        let responder = DevResponder(api: api, streaming: streaming, faults: faultState, adminEnabled: o.admin, logRequests: o.verbose)
        let configuration = ApplicationConfiguration(address: .hostname(o.host, port: o.port), serverName: "syncstore-devserver")
        let port = o.port
        let listening: @Sendable (Int) -> Void = { boundPort in
            let url = "\(scheme)://\(hostForURL):\(boundPort)"
            api.store.locked { api.baseURL = url }
            announce(url)
        }
        // Both branches spell out .http1(...) because HTTPServerBuilder lives in HummingbirdCore,
        // which this target does not import.
        var app = try tls.map { tls in
            Application(
                responder: responder,
                server: try .tls(.http1(configuration: .init(additionalChannelHandlers: [ExpectContinueHandler(), DateHeaderHandler()])), tlsConfiguration: tls),
                configuration: configuration,
                onServerRunning: { listening($0.localAddress?.port ?? port) })
        } ?? Application(
            responder: responder,
            server: .http1(configuration: .init(additionalChannelHandlers: [ExpectContinueHandler(), DateHeaderHandler()])),
            configuration: configuration,
            onServerRunning: { listening($0.localAddress?.port ?? port) })
        app.logger.logLevel = o.verbose ? .info : .warning
        if o.verbose { for n in notes { app.logger.info("\(n)") } }
        // A graceful shutdown waits for the requests in flight: held Streaming API long polls are
        // answered at once instead of at their timeout.
        let stopSignals = [SIGTERM, SIGINT].map { signal -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { streaming.shutdown() }
            source.resume()
            return source
        }
        defer { for source in stopSignals { source.cancel() } }
        do {
            try await withTaskCancellationHandler {
                try await app.runService()
            } onCancel: {
                streaming.shutdown()
            }
        } catch let error as IOError {
            throw listenError(error, host: o.host, port: o.port)
        }
    }

    /// `error` as a failure to listen (the port in use...), for servers other than this one
    /// (`syncstore-cli inspect`); nil when it is not one.
    public static func listenFailure(_ error: any Error, host: String, port: Int) -> DevServerError? {
        (error as? IOError).map { listenError($0, host: host, port: port) }
    }

    /// A failure to listen, saying which address and what to do.
    static func listenError(_ error: IOError, host: String, port: Int) -> DevServerError {
        switch error.errnoCode {
        case EADDRINUSE:
            return DevServerError(kind: .portInUse, message: "Port \(port) on \(host) is already in use (another server listens there): stop it, or choose another port with --port N (--port 0 picks a free one)")
        case EACCES:
            return DevServerError(kind: .badAddress, message: "Port \(port) on \(host) needs privileges this user does not have: choose a port above 1023 with --port N (--port 0 picks a free one)")
        case EADDRNOTAVAIL:
            return DevServerError(kind: .badAddress, message: "Address \(host) is not one of this machine's: use --host 127.0.0.1 or ::1")
        default:
            return DevServerError(kind: .other, message: "Cannot listen on \(host) port \(port): \(String(cString: strerror(error.errnoCode)))")
        }
    }
}
