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

/// Everything a push travels through, as real processes: a gateway, apns-sender replicas and the
/// APNs simulator, on the shared test Postgres in a schema of the test's own (every service gets
/// `?search_path=` in its URL) and a Redis server of the test's own (so `bk:messages` and
/// `bk:deliveries` are private to the test). One demo tenant with APNs credentials whose key the
/// simulator knows.
final class PushStack: Sendable {
    static let teamId = "TEAM000001"
    static let bundleId = "com.example.app"

    let schema: String
    let postgres: PostgresClient
    let redis: ThrowawayRedis
    let simulator: APNsSimulator
    let gateway: ServiceProcess
    let gatewayURL: String
    let http: HTTPClient
    let tenantKey: String
    /// The demo tenant's client key (`bk_ck_…`), what an app running the SDK ships.
    let clientKey: String
    let tenantID: UUID
    let workspaceKey: String
    let secretKey: String
    let keyId: String
    /// The public half of the demo tenant's APNs key, for another simulator that must accept its
    /// provider tokens (a stack restored from a backup of this one).
    let providerPublicKeyPEM: String
    let senderEnvironment: [String: String]
    /// The gateway's environment, for another gateway process on the same stack (`startGateway`).
    let gatewayEnvironment: [String: String]
    /// The processes started on the stack after it came up (sender replicas, more gateways), kept
    /// alive with it (a released ServiceProcess is killed).
    let senders = Mutex<[ServiceProcess]>([])

    /// - Parameters:
    ///   - postgresURL: another server than the shared one (a test that restarts it).
    ///   - redisCluster: the stack's Redis in cluster mode (`ThrowawayRedis.cluster()`).
    ///   - gatewaySettings: added to (or overriding) the gateway's environment.
    init(
        senderSettings: [String: String] = [:], record: Bool = true, postgresURL: String? = nil,
        redisCluster: Bool = false, gatewaySettings: [String: String] = [:]
    ) async throws {
        let serverURL = postgresURL ?? TestEnvironment.postgresURL
        schema = TestEnvironment.uniqueName("push")
        postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 4, url: serverURL)
        var attempt = 0
        while true {
            do {
                _ = try await Migrator(client: postgres, logger: .silent()).migrate()
                break
            } catch {
                attempt += 1
                if attempt >= 5 { throw error }
                try await Task.sleep(for: .milliseconds(50 * attempt))
            }
        }
        redis = redisCluster ? try await ThrowawayRedis.cluster() : try await ThrowawayRedis.launch()
        let secret = SecureRandom.bytes(32)
        secretKey = Data(secret).base64EncodedString()
        let key = ES256PrivateKey.generate()
        keyId = String(TestEnvironment.uniqueName("K").filter { $0.isLetter || $0.isNumber }.suffix(10)).uppercased()
        let bootstrap = try await Bootstrapper(postgres: postgres, secretKey: secret).run(
            workspace: "push",
            demo: .init(
                name: "demo", teamID: Self.teamId, keyID: keyId, privateKey: key.pem,
                bundleID: Self.bundleId, environment: "sandbox"))
        tenantKey = bootstrap.tenantKey!
        clientKey = bootstrap.clientKey!
        tenantID = bootstrap.tenantID!
        workspaceKey = bootstrap.workspaceKey
        providerPublicKeyPEM = key.publicKeyPEM
        simulator = try await APNsSimulator(
            keyId: keyId, teamId: Self.teamId, publicKeyPEM: key.publicKeyPEM, record: record)
        let separator = serverURL.contains("?") ? "&" : "?"
        let databaseURL = serverURL + separator + "search_path=" + schema
        let common = [
            "BUZZKIT_DATABASE_URL": databaseURL, "BUZZKIT_REDIS_URL": redis.url, "BUZZKIT_SECRET_KEY": secretKey,
            "BUZZKIT_LOG_LEVEL": "info"
        ]
        let port = freeLoopbackPort()
        gatewayURL = "http://127.0.0.1:\(port)"
        gatewayEnvironment = common.merging([
            "BUZZKIT_RATE_LIMIT_ENABLED": "false", "BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "true"
        ]) { _, new in new }.merging(gatewaySettings) { _, new in new }
        gateway = try ServiceProcess(
            executable: "gateway",
            environment: gatewayEnvironment.merging(["BUZZKIT_HTTP_PORT": String(port)]) { _, new in new })
        senderEnvironment = common.merging([
            "BUZZKIT_APNS_SANDBOX_URL": simulator.baseURL, "BUZZKIT_APNS_PRODUCTION_URL": simulator.baseURL,
            "BUZZKIT_APNS_CA_FILE": simulator.caFile, "BUZZKIT_APNS_RETRY_BASE": "50ms",
            "BUZZKIT_OUTBOX_SWEEP_INTERVAL": "1s", "BUZZKIT_OUTBOX_REQUEUE_AFTER": "5s"
        ]) { _, new in new }.merging(senderSettings) { _, new in new }
        http = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await waitReady(gatewayURL, process: gateway)
    }

    /// Starts one apns-sender replica named `instance`, serving `/metrics` and `/readyz` on `port`.
    func startSender(
        _ instance: String, settings: [String: String] = [:], port: Int = freeLoopbackPort()
    ) async throws -> ServiceProcess {
        let process = try ServiceProcess(
            executable: "apns-sender",
            environment: senderEnvironment.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INSTANCE_ID": instance
            ]) { _, new in new }.merging(settings) { _, new in new })
        senders.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process: process)
        return process
    }

    /// Starts another gateway process on the stack (a replica, or one taking over from a gateway
    /// the test stopped); answers it and its base URL.
    func startGateway() async throws -> (process: ServiceProcess, url: String) {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "gateway",
            environment: gatewayEnvironment.merging(["BUZZKIT_HTTP_PORT": String(port)]) { _, new in new })
        senders.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process: process)
        return (process, "http://127.0.0.1:\(port)")
    }

    /// Starts the ingest service on the stack's database and Redis (receipts, events).
    func startIngest() async throws -> ServiceProcess {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "ingest",
            environment: senderEnvironment.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INSTANCE_ID": TestEnvironment.uniqueName("ingest")
            ]) { _, new in new })
        senders.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process: process)
        return process
    }

    /// Starts a webhooks replica (private addresses allowed: receivers run on loopback).
    func startWebhooks() async throws -> ServiceProcess {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "webhooks",
            environment: senderEnvironment.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INSTANCE_ID": TestEnvironment.uniqueName("webhooks"),
                "BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "true", "BUZZKIT_WEBHOOKS_POLL_INTERVAL": "50ms"
            ]) { _, new in new })
        senders.withLock { $0.append(process) }
        try await waitReady("http://127.0.0.1:\(port)", process: process)
        return process
    }

    private func waitReady(_ base: String, process: ServiceProcess) async throws {
        let ready = try await RedisTestSupport.eventually(limit: .seconds(30)) {
            guard process.isRunning else { return true }
            let response = try? await http.execute(HTTPClientRequest(url: base + "/readyz"))
            return response?.status == 200
        }
        guard ready, process.isRunning else {
            throw StackError(description: "\(process.name) did not become ready: \(process.output)")
        }
    }

    func close() async {
        for sender in senders.withLock({ $0 }) where sender.isRunning {
            sender.signal(SIGTERM)
            _ = await sender.waitForExit(timeout: .seconds(10))
        }
        gateway.signal(SIGTERM)
        _ = await gateway.waitForExit(timeout: .seconds(10))
        await simulator.stop()
        await http.shutdown()
        try? await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
        redis.stop()
    }

    // MARK: - Data

    /// A subscriber with devices (sandbox unless told), straight in SQL.
    func addSubscriber(_ id: String, tokens: [String], environment: String = "sandbox") async throws {
        try await postgres.execute(
            "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING", [tenantID, id])
        for token in tokens {
            try await postgres.execute(
                """
                INSERT INTO devices (tenant_id, token, subscriber_id, environment, bundle_id)
                VALUES ($1::uuid, $2, $3, $4, $5)
                """, [tenantID, token, id, environment, Self.bundleId])
        }
    }

    func subscribe(_ subscribers: [String], topic: String) async throws {
        try await postgres.execute(
            "INSERT INTO topics (tenant_id, key) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING", [tenantID, topic])
        try await postgres.execute(
            """
            INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id) SELECT $1::uuid, $2, unnest($3::text[])
            """, [tenantID, topic, subscribers])
    }

    // MARK: - API

    struct Reply {
        var status: Int
        var envelope: Envelope
        var data: JSONValue? { envelope.data }
    }

    func api(
        _ method: String, _ path: String, body: JSONValue? = nil, key: String? = nil,
        headers extra: [String: String] = [:], baseURL: String? = nil
    ) async throws -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(key ?? tenantKey)")
        for (name, value) in extra { headers.add(name: name, value: value) }
        var bytes: [UInt8] = []
        if let body {
            bytes = body.jsonBytes
            headers.add(name: "Content-Type", value: "application/json")
        }
        let response = try await http.execute(
            HTTPClientRequest(
                method: HTTPMethod(rawValue: method), url: (baseURL ?? gatewayURL) + path,
                headers: headers, body: bytes))
        let envelope = (try? Envelope.decode(response.body)) ?? Envelope.success(nil)
        return Reply(status: response.status, envelope: envelope)
    }

    /// POSTs a message; returns its id (fails the test on anything but 202).
    func send(_ body: JSONValue) async throws -> String {
        let reply = try await api("POST", "/v1/messages", body: body)
        guard reply.status == 202, let id = reply.data?["id"]?.stringValue else {
            throw StackError(description: "send failed: \(reply.status) \(reply.envelope)")
        }
        return id
    }

    /// Waits until the message reached a final state: `completed` (every delivery decided) or
    /// `failed`. A completed message must say so consistently: nothing queued or sending,
    /// `pending` 0 and a `completedAt`.
    /// `baseURL`: another gateway than the stack's own (one on a restored copy of its database).
    func waitSettled(_ id: String, limit: Duration = .seconds(60), baseURL: String? = nil) async throws -> JSONValue {
        var last: JSONValue = .null
        let settled = try await RedisTestSupport.eventually(limit: limit) {
            let reply = try await api("GET", "/v1/messages/\(id)", baseURL: baseURL)
            last = reply.data ?? .null
            let status = last["status"]?.stringValue
            return status == "failed" || status == "completed"
        }
        guard settled else { throw StackError(description: "message \(id) did not settle: \(last)") }
        if last["status"] == "completed" {
            let counts = last["counts"]
            let open = (counts?["queued"]?.intValue ?? 0) + (counts?["sending"]?.intValue ?? 0)
            guard open == 0, last["pending"] == 0, last["completedAt"]?.stringValue != nil else {
                throw StackError(description: "message \(id) completed with deliveries pending: \(last)")
            }
        }
        return last
    }

    /// Every delivery of a message (walks the cursor).
    func deliveries(_ id: String, status: String? = nil, baseURL: String? = nil) async throws -> [JSONValue] {
        var all: [JSONValue] = []
        var cursor: String?
        repeat {
            var path = "/v1/messages/\(id)/deliveries?limit=200"
            if let status { path += "&status=\(status)" }
            if let cursor { path += "&cursor=\(cursor)" }
            let reply = try await api("GET", path, baseURL: baseURL)
            guard reply.status == 200 else {
                throw StackError(description: "list failed: \(reply.status) \(reply.envelope)")
            }
            all += reply.data?.arrayValue ?? []
            cursor = reply.envelope.metadata["cursor"]?.stringValue
        } while cursor != nil
        return all
    }

    static func token() -> String { Hex.string(SecureRandom.bytes(32)) }
}

/// Runs `body` with a fresh stack and always closes it.
func withPushStack<T>(
    senderSettings: [String: String] = [:], postgresURL: String? = nil, redisCluster: Bool = false,
    gatewaySettings: [String: String] = [:], _ body: (PushStack) async throws -> T
) async throws -> T {
    let stack = try await PushStack(
        senderSettings: senderSettings, postgresURL: postgresURL, redisCluster: redisCluster,
        gatewaySettings: gatewaySettings)
    do {
        let result = try await body(stack)
        await stack.close()
        return result
    } catch {
        await stack.close()
        throw error
    }
}
