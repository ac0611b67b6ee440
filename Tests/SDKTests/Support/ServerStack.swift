import BuzzKit
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization

struct StackError: Error, CustomStringConvertible {
    var description: String
}

/// The real gateway and ingest executables on the test Postgres (a schema of the stack's own,
/// migrated and bootstrapped with `buzzkit-admin`) and a private Redis (so `bk:ingest` and
/// `bk:events` belong to this stack alone, whatever other suites run in parallel).
final class ServerStack: Sendable {
    let schema: String
    let redis: ThrowawayRedis
    /// The gateway running now (`stopGateway()` / `startGateway()` replace it on the same port).
    var gateway: ServiceProcess { currentGateway.withLock { $0 } }
    private let currentGateway: Mutex<ServiceProcess>
    private let gatewayEnvironment: [String: String]
    let ingest: ServiceProcess
    let baseURL: URL
    let tenantKey: String
    let clientKey: String
    let http = URLSessionTransport(timeout: 10)

    init() async throws {
        schema = TestEnvironment.uniqueName("sdk")
        _ = try await PostgresTestSupport.commonShell(
            "psql \"$1\" -v ON_ERROR_STOP=1 -qc \"CREATE SCHEMA \\\"$2\\\"\"",
            arguments: [TestEnvironment.postgresURL, schema])
        redis = try await ThrowawayRedis.launch()
        let separator = TestEnvironment.postgresURL.contains("?") ? "&" : "?"
        let secret = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let common = [
            "BUZZKIT_DATABASE_URL": TestEnvironment.postgresURL + separator + "search_path=" + schema,
            "BUZZKIT_REDIS_URL": redis.url, "BUZZKIT_SECRET_KEY": secret, "BUZZKIT_LOG_LEVEL": "info"
        ]
        let migrate = try ServiceProcess(executable: "buzzkit-admin", environment: common, arguments: ["migrate"])
        guard await migrate.waitForExit(timeout: .seconds(60)) == 0 else {
            throw StackError(description: "migrate failed: \(migrate.output)")
        }
        let bootstrap = try ServiceProcess(
            executable: "buzzkit-admin", environment: common,
            arguments: ["bootstrap", "--workspace", "w", "--demo-tenant", "t"])
        guard await bootstrap.waitForExit(timeout: .seconds(60)) == 0 else {
            throw StackError(description: "bootstrap failed: \(bootstrap.output)")
        }
        var keys: [String: String] = [:]
        for line in bootstrap.output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { keys[parts[0]] = parts[1] }
        }
        guard let tenantKey = keys["BUZZKIT_TENANT_KEY"], let clientKey = keys["BUZZKIT_CLIENT_KEY"] else {
            throw StackError(description: "bootstrap printed no keys: \(bootstrap.output)")
        }
        self.tenantKey = tenantKey
        self.clientKey = clientKey
        let port = freeLoopbackPort()
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        gatewayEnvironment = common.merging([
            "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_RATE_LIMIT_ENABLED": "false"
        ]) { _, new in new }
        currentGateway = Mutex(try ServiceProcess(executable: "gateway", environment: gatewayEnvironment))
        let ingestPort = freeLoopbackPort()
        ingest = try ServiceProcess(
            executable: "ingest",
            environment: common.merging([
                "BUZZKIT_HTTP_PORT": String(ingestPort), "BUZZKIT_INGEST_CONSUMERS": "1"
            ]) { _, new in new })
        try await waitReady(baseURL, gateway)
        try await waitReady(URL(string: "http://127.0.0.1:\(ingestPort)")!, ingest)
    }

    private func waitReady(_ base: URL, _ process: ServiceProcess) async throws {
        let ready = await RedisTestSupport.eventually(limit: .seconds(30)) {
            guard process.isRunning else { return true }
            let response = try? await http.send(
                TransportRequest(method: "GET", url: base.appendingPathComponent("readyz")))
            return response?.status == 200
        }
        guard ready, process.isRunning else {
            throw StackError(description: "\(process.name) not ready: \(process.output)")
        }
    }

    /// Stops the gateway (SIGTERM, waited for): its port refuses connections until `startGateway()`.
    func stopGateway() async throws {
        let process = gateway
        process.signal(SIGTERM)
        guard await process.waitForExit(timeout: .seconds(15)) != nil else {
            throw StackError(description: "the gateway did not stop: \(process.output.suffix(2000))")
        }
    }

    /// Starts a new gateway on the same port, database and Redis, and waits until it is ready.
    func startGateway() async throws {
        let process = try ServiceProcess(executable: "gateway", environment: gatewayEnvironment)
        currentGateway.withLock { $0 = process }
        try await waitReady(baseURL, process)
    }

    func close() async {
        for process in [gateway, ingest] { process.signal(SIGTERM) }
        for process in [gateway, ingest] { _ = await process.waitForExit(timeout: .seconds(10)) }
        redis.stop()
        _ = try? await PostgresTestSupport.commonShell(
            "psql \"$1\" -qc \"DROP SCHEMA \\\"$2\\\" CASCADE\"",
            arguments: [TestEnvironment.postgresURL, schema])
    }

    /// A client on `directory` with the client key, over `transport` (URLSession by default).
    func client(
        directory: TemporaryDirectory, transport: (any Transport)? = nil, clock: any BuzzKitClock = SystemClock(),
        logs: LogCapture = LogCapture()
    ) throws -> BuzzKit {
        var configuration = BuzzKit.Configuration(apiKey: clientKey, baseURL: baseURL)
        configuration.storageDirectory = directory.url
        configuration.pushEnvironment = .sandbox
        configuration.logHandler = logs.handler
        return try BuzzKit(
            configuration: configuration,
            platform: Platform(clock: clock, transport: transport ?? URLSessionTransport(timeout: 10)))
    }

    /// A request with the tenant key: the status and the decoded envelope.
    func send(_ method: String, _ path: String, body: JSONValue? = nil) async throws -> (
        status: Int, envelope: Envelope
    ) {
        var headers = ["Authorization": "Bearer \(tenantKey)"]
        if body != nil { headers["Content-Type"] = "application/json" }
        let response = try await http.send(
            TransportRequest(
                method: method, url: URL(string: baseURL.absoluteString + path)!, headers: headers,
                body: body?.jsonBytes ?? []))
        return (response.status, try Envelope.decode(response.body))
    }

    /// The envelope's `data` of a GET with the tenant key (200 expected).
    func get(_ path: String) async throws -> JSONValue {
        let response = try await http.send(
            TransportRequest(
                method: "GET", url: URL(string: baseURL.absoluteString + path)!,
                headers: ["Authorization": "Bearer \(tenantKey)"]))
        guard response.status == 200 else {
            throw StackError(
                description: "GET \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return try Envelope.decode(response.body).data ?? .null
    }

    /// Every stored event of `subscriber` (with the anonymous ids aliased to it), oldest first.
    func events(of subscriber: String) async throws -> [JSONValue] {
        var all: [JSONValue] = []
        var cursor: String?
        repeat {
            var path = "/v1/subscribers/\(subscriber)/events?limit=200"
            if let cursor { path += "&cursor=\(cursor)" }
            let response = try await http.send(
                TransportRequest(
                    method: "GET", url: URL(string: baseURL.absoluteString + path)!,
                    headers: ["Authorization": "Bearer \(tenantKey)"]))
            guard response.status == 200 || response.status == 404 else {
                throw StackError(
                    description: "list events: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
            }
            if response.status == 404 { return [] }
            let envelope = try Envelope.decode(response.body)
            all += envelope.data?.arrayValue ?? []
            cursor = envelope.metadata["hasMore"] == true ? envelope.metadata["cursor"]?.stringValue : nil
        } while cursor != nil
        return all.reversed()
    }

    /// Polls until `subscriber` has an event named `name` (the ingest service is asynchronous).
    /// Since one ingest consumer stores entries in stream order, anything sent before that event
    /// is stored by then too.
    func waitForEvent(_ name: String, of subscriber: String) async throws -> [JSONValue] {
        var last: [JSONValue] = []
        let found = try await RedisTestSupport.eventually(limit: .seconds(30)) {
            last = try await events(of: subscriber)
            return last.contains { $0["name"]?.stringValue == name }
        }
        guard found else { throw StackError(description: "\(name) never arrived for \(subscriber): \(last)") }
        return last
    }
}

/// Forwards to a real transport, then fails the first `failures` calls to `/v1/events` after
/// the server has answered them (the server stored the batch; the device never heard back).
final class LosesAnswers: Transport {
    let inner: any Transport
    private let remaining: Mutex<Int>

    init(_ inner: any Transport, failures: Int) {
        self.inner = inner
        remaining = Mutex(failures)
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await inner.send(request)
        guard request.url.path == "/v1/events" else { return response }
        let fail = remaining.withLock { r -> Bool in
            guard r > 0 else { return false }
            r -= 1
            return true
        }
        if fail { throw TransportError("connection reset after the request was sent") }
        return response
    }
}

/// Forwards to a real transport and records what was asked.
final class RecordingTransport: Transport {
    let inner: any Transport
    private let log = Mutex<[TransportRequest]>([])

    init(_ inner: any Transport) { self.inner = inner }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        log.withLock { $0.append(request) }
        return try await inner.send(request)
    }

    var requests: [TransportRequest] { log.withLock { $0 } }
}

/// A clock whose time a test sets (real scheduling, settable `now`).
final class SettableClock: BuzzKitClock {
    private let current = Mutex(Date())
    private let system = SystemClock()

    func set(_ date: Date) { current.withLock { $0 = date } }
    func now() -> Date { current.withLock { $0 } }
    func sleep(seconds: TimeInterval) async { await system.sleep(seconds: seconds) }
    @discardableResult
    func schedule(after seconds: TimeInterval, _ work: @escaping @Sendable () async -> Void) -> ScheduledWork {
        ScheduledWork {}  // the e2e tests flush explicitly
    }
}
