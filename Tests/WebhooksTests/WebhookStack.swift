import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Synchronization
import Testing

/// A tenant's side and BuzzKit's, as real processes: the gateway (endpoints through the API), the
/// webhooks service (as many replicas as a test starts, restartable) and a receiver that verifies
/// every request with the `standardwebhooks` package from PyPI and validates every body against
/// the gateway's API document (`Tests/Fixtures/webhook-receiver/receiver.py`), on a schema of the
/// shared test Postgres and a Redis of the stack's own.
final class WebhookStack: Sendable {
    /// The webhooks service's settings in these tests: private addresses allowed (the receiver is
    /// on loopback, over http), and a schedule of seconds instead of hours (a receiver down "for
    /// ten minutes" is down for a few seconds here; the real schedule stays the default).
    static let fastSettings: [String: String] = [
        "BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "true",
        // About 70 s of retries: longer than any outage a test makes, even on a loaded machine.
        "BUZZKIT_WEBHOOKS_RETRY_SCHEDULE": "0s,500ms," + Array(repeating: "2s", count: 35).joined(separator: ","),
        "BUZZKIT_WEBHOOKS_TIMEOUT": "3s", "BUZZKIT_WEBHOOKS_LEASE": "5s", "BUZZKIT_WEBHOOKS_POLL_INTERVAL": "50ms",
        "BUZZKIT_WEBHOOKS_SWEEP_INTERVAL": "1s"
    ]

    let schema: String
    let postgres: PostgresClient
    let redis: ThrowawayRedis
    let gateway: ServiceProcess
    let gatewayURL: String
    let http: HTTPClient
    let tenantKey: String
    let tenantID: UUID
    let common: [String: String]
    let receiverPort: Int
    let receiverState: String
    /// The APNs simulator the senders push to (stacks made with `apns: true`), and their settings.
    let simulator: APNsSimulator?
    let apnsSettings: [String: String]
    private let receiver = Mutex<ServiceProcess?>(nil)
    let replicas = Mutex<[ServiceProcess]>([])

    static let teamId = "TEAM000001"
    static let keyId = "KEY0000001"
    static let bundleId = "com.example.app"

    /// - Parameter apns: also start the APNs simulator (knowing the demo tenant's key), for the
    ///   services that push (apns-sender, liveactivity) started with `start(_:)`.
    init(gatewaySettings: [String: String] = ["BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "true"], apns: Bool = false)
        async throws
    {
        schema = TestEnvironment.uniqueName("wh")
        postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 4)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let secret = SecureRandom.bytes(32)
        let key = ES256PrivateKey.generate()
        let bootstrap = try await Bootstrapper(postgres: postgres, secretKey: secret).run(
            workspace: "webhooks",
            demo: .init(
                name: "demo", teamID: Self.teamId, keyID: Self.keyId, privateKey: key.pem,
                bundleID: Self.bundleId, environment: "sandbox"))
        tenantKey = try #require(bootstrap.tenantKey)
        tenantID = try #require(bootstrap.tenantID)
        if apns {
            let simulator = try await APNsSimulator(
                keyId: Self.keyId, teamId: Self.teamId, publicKeyPEM: key.publicKeyPEM)
            self.simulator = simulator
            apnsSettings = [
                "BUZZKIT_APNS_SANDBOX_URL": simulator.baseURL, "BUZZKIT_APNS_PRODUCTION_URL": simulator.baseURL,
                "BUZZKIT_APNS_CA_FILE": simulator.caFile, "BUZZKIT_APNS_RETRY_BASE": "50ms",
                "BUZZKIT_OUTBOX_SWEEP_INTERVAL": "1s", "BUZZKIT_OUTBOX_REQUEUE_AFTER": "5s"
            ]
        } else {
            simulator = nil
            apnsSettings = [:]
        }
        redis = try await ThrowawayRedis.launch()
        let separator = TestEnvironment.postgresURL.contains("?") ? "&" : "?"
        common = [
            "BUZZKIT_DATABASE_URL": TestEnvironment.postgresURL + separator + "search_path=" + schema,
            "BUZZKIT_REDIS_URL": redis.url, "BUZZKIT_SECRET_KEY": Data(secret).base64EncodedString(),
            "BUZZKIT_LOG_LEVEL": "info", "BUZZKIT_DB_POOL_SIZE": "3"
        ]
        let port = freeLoopbackPort()
        gatewayURL = "http://127.0.0.1:\(port)"
        gateway = try ServiceProcess(
            executable: "gateway",
            environment: common.merging(gatewaySettings) { _, new in new }.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_RATE_LIMIT_ENABLED": "false"
            ]) { _, new in new })
        http = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        receiverPort = freeLoopbackPort()
        receiverState =
            FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("receiver")).path
        try FileManager.default.createDirectory(atPath: receiverState, withIntermediateDirectories: true)
        try await waitReady(gatewayURL, gateway)
        let document = try await http.execute(HTTPClientRequest(url: gatewayURL + "/openapi.json"))
        try Data(document.body).write(to: URL(fileURLWithPath: receiverState + "/openapi.json"))
    }

    var receiverURL: String { "http://127.0.0.1:\(receiverPort)/hook" }

    // MARK: - Processes

    /// Starts a webhooks replica (`fastSettings` plus `settings`).
    @discardableResult
    func startWebhooks(_ name: String = TestEnvironment.uniqueName("webhooks"), settings: [String: String] = [:])
        async throws -> ServiceProcess
    {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "webhooks",
            environment: common.merging(Self.fastSettings) { _, new in new }.merging(settings) { _, new in new }
                .merging(["BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INSTANCE_ID": name]) { _, new in new })
        replicas.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process)
        return process
    }

    /// Starts the ingest service (receipts are its to write).
    @discardableResult
    func startIngest() async throws -> ServiceProcess {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "ingest",
            environment: common.merging(["BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INGEST_CONSUMERS": "1"]) {
                _, new in
                new
            })
        replicas.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process)
        return process
    }

    /// Starts a replica of `executable` (`apns-sender`, `liveactivity`, `workflow`, ...) on the
    /// stack's database and Redis, with the simulator's APNs settings, `settings` on top; answers
    /// it and the port of its `/metrics`.
    @discardableResult
    func start(_ executable: String, _ name: String? = nil, settings: [String: String] = [:]) async throws -> (
        process: ServiceProcess, port: Int
    ) {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: executable,
            environment: common.merging(apnsSettings) { _, new in new }.merging(settings) { _, new in new }
                .merging([
                    "BUZZKIT_HTTP_PORT": String(port),
                    "BUZZKIT_INSTANCE_ID": name ?? TestEnvironment.uniqueName(executable)
                ]) { _, new in new })
        replicas.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process)
        return (process, port)
    }

    /// Starts (or restarts) the receiver on its port.
    func startReceiver() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        let process = try ServiceProcess(
            path: python, name: "receiver", environment: [:],
            arguments: [
                TestEnvironment.repositoryRoot + "/Tests/Fixtures/webhook-receiver/receiver.py", "--port",
                String(receiverPort), "--state", receiverState, "--openapi", receiverState + "/openapi.json"
            ])
        receiver.withLock { $0 = process }
        let up = try await RedisTestSupport.eventually(limit: .seconds(30)) {
            guard process.isRunning else { return true }
            return process.output.contains("receiver listening")
        }
        guard up, process.isRunning else { throw WebhookTestError(description: "receiver: \(process.output)") }
    }

    /// Stops the receiver at once (its port refuses connections until it starts again).
    func stopReceiver() {
        receiver.withLock { process in
            process?.signal(SIGKILL)
            process = nil
        }
        // The port is free once the process is gone.
        usleep(200_000)
    }

    /// What the receiver answers from now on (`ok`, `status 503 3`, `slow 2`, `fail-first 500`).
    func receiverMode(_ mode: String) throws {
        try Data(mode.utf8).write(to: URL(fileURLWithPath: receiverState + "/mode"))
    }

    /// The secrets the receiver verifies with, in order (its records name them by index).
    func receiverSecrets(_ secrets: [String]) throws {
        try Data(secrets.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: receiverState + "/secrets"))
    }

    /// Every request the receiver got, oldest first.
    func received() -> [JSONValue] {
        guard let text = try? String(contentsOfFile: receiverState + "/received.jsonl", encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }
    }

    private func waitReady(_ base: String, _ process: ServiceProcess) async throws {
        let ready = try await RedisTestSupport.eventually(limit: .seconds(60)) {
            guard process.isRunning else { return true }
            let response = try? await http.execute(HTTPClientRequest(url: base + "/readyz"))
            return response?.status == 200
        }
        guard ready, process.isRunning else {
            throw WebhookTestError(description: "\(process.name) not ready: \(process.output)")
        }
    }

    func close() async {
        stopReceiver()
        for process in replicas.withLock({ $0 }) + [gateway] where process.isRunning {
            process.signal(SIGCONT)  // a test may have left one stopped
            process.signal(SIGTERM)
            _ = await process.waitForExit(timeout: .seconds(20))
        }
        await simulator?.stop()
        await http.shutdown()
        redis.stop()
        try? await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
        try? FileManager.default.removeItem(atPath: receiverState)
    }

    // MARK: - API

    struct Reply {
        var status: Int
        var envelope: Envelope
        var data: JSONValue? { envelope.data }
    }

    func api(_ method: String, _ path: String, body: JSONValue? = nil) async throws -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(tenantKey)")
        var bytes: [UInt8] = []
        if let body {
            bytes = body.jsonBytes
            headers.add(name: "Content-Type", value: "application/json")
        }
        let response = try await http.execute(
            HTTPClientRequest(
                method: HTTPMethod(rawValue: method), url: gatewayURL + path, headers: headers, body: bytes))
        return Reply(status: response.status, envelope: (try? Envelope.decode(response.body)) ?? Envelope.success(nil))
    }

    /// Subscribers with one sandbox device each (`tokens[i]` for `ids[i]`), straight in SQL, all
    /// in `topic` when given.
    func addSubscribers(_ ids: [String], tokens: [String], topic: String? = nil) async throws {
        try await postgres.execute(
            "INSERT INTO subscribers (tenant_id, id) SELECT $1::uuid, unnest($2::text[]) ON CONFLICT DO NOTHING",
            [tenantID, ids])
        try await postgres.execute(
            """
            INSERT INTO devices (tenant_id, token, subscriber_id, environment, bundle_id)
            SELECT $1::uuid, t, s, 'sandbox', $4 FROM unnest($2::text[], $3::text[]) AS u(t, s)
            """, [tenantID, tokens, ids, Self.bundleId])
        guard let topic else { return }
        try await postgres.execute(
            "INSERT INTO topics (tenant_id, key) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING", [tenantID, topic])
        try await postgres.execute(
            """
            INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id) SELECT $1::uuid, $2, unnest($3::text[])
            ON CONFLICT DO NOTHING
            """, [tenantID, topic, ids])
    }

    /// Waits until message `id` reached a final state; answers it as `GET /v1/messages/{id}` shows it.
    func waitSettled(_ id: String, limit: Duration = .seconds(90)) async throws -> JSONValue {
        var last: JSONValue = .null
        let settled = try await RedisTestSupport.eventually(limit: limit) {
            last = try await api("GET", "/v1/messages/\(id)").data ?? .null
            return last["status"] == "completed" || last["status"] == "failed"
        }
        guard settled else { throw WebhookTestError(description: "message \(id) did not settle: \(last)") }
        return last
    }

    /// The received requests of `type`, answered 200 (a retry of one counts once per attempt).
    func received(_ type: String) -> [JSONValue] {
        received().filter { $0["type"]?.stringValue == type && $0["answered"]?.intValue == 200 }
    }

    /// Creates an endpoint at the receiver; answers (id, secret).
    func createEndpoint(events: [String], url: String? = nil) async throws -> (id: String, secret: String) {
        let reply = try await api(
            "POST", "/v1/webhooks",
            body: ["url": .string(url ?? receiverURL), "events": .array(events.map(JSONValue.string))])
        guard reply.status == 201, let id = reply.data?["id"]?.stringValue,
            let secret = reply.data?["secret"]?.stringValue
        else { throw WebhookTestError(description: "create endpoint: \(reply.status) \(reply.envelope)") }
        return (id, secret)
    }
}

/// Runs `body` with a fresh stack and always closes it.
func withWebhookStack<T>(
    gatewaySettings: [String: String] = ["BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "true"], apns: Bool = false,
    _ body: (WebhookStack) async throws -> T
) async throws -> T {
    let stack = try await WebhookStack(gatewaySettings: gatewaySettings, apns: apns)
    do {
        let result = try await body(stack)
        await stack.close()
        return result
    } catch {
        await stack.close()
        throw error
    }
}

struct WebhookTestError: Error, CustomStringConvertible {
    var description: String
}
