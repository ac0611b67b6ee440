import BuzzKitContracts
import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitHTTPServer
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitRuntime
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp

/// One answer as a test sees it.
struct Reply: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var envelope: Envelope
    var data: JSONValue? { envelope.data }
    var code: String? { envelope.error?.code.rawValue }
    var items: [JSONValue] { envelope.data?.arrayValue ?? [] }
}

/// A gateway on its own schema, served by a real HTTPServer on a free loopback port (with the
/// runtime's /healthz, /readyz and /metrics), plus a bootstrapped workspace with a demo tenant.
final class GatewayHarness: Sendable {
    let schema: String
    let postgres: PostgresClient
    let redis: RedisClient
    let runtime: ServiceRuntime
    let gateway: Gateway
    let server: HTTPServer
    let client: HTTPClient
    let baseURL: String
    let bootstrap: Bootstrapper.Result
    private let running: RunningServices

    var workspaceKey: String { bootstrap.workspaceKey }
    var tenantKey: String { bootstrap.tenantKey! }
    var clientKey: String { bootstrap.clientKey! }
    var tenantID: String { bootstrap.tenantID!.uuidString.lowercased() }

    /// - Parameter sharing: another harness whose schema and revocation channel this one uses
    ///   (a second replica).
    init(rateLimit: RateLimitConfiguration? = nil, sharing other: GatewayHarness? = nil) async throws {
        schema = other?.schema ?? TestEnvironment.uniqueName("gw")
        postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 4)
        redis = try RedisTestSupport.client()
        if other == nil { try await Self.migrate(postgres) }
        let settings = try ServiceSettings(
            serviceName: "gateway",
            environment: [
                "BUZZKIT_DATABASE_URL": TestEnvironment.postgresURL, "BUZZKIT_REDIS_URL": TestEnvironment.redisURL,
                "BUZZKIT_HTTP_PORT": "0"
            ])
        runtime = try ServiceRuntime(settings: settings, logger: .silent())
        var configuration = GatewayConfiguration(
            secretKey: SecureRandom.bytes(32),
            rateLimit: rateLimit ?? RateLimitConfiguration(keyPrefix: "bk:test:\(schema):"),
            revocationChannel: "bk_revoked_\(schema)")
        configuration.ingestStream = StreamName("bk:test:\(schema):ingest")
        configuration.liveActivityStream = StreamName("bk:test:\(schema):la")
        configuration.liveActivityDeadline = .milliseconds(500)
        gateway = try Gateway(
            configuration: configuration, postgres: postgres, redis: redis, logger: .silent(),
            metrics: MetricsRegistry())
        var router = runtime.makeRouter()
        gateway.register(on: &router)
        server = HTTPServer(router: router, logger: .silent())
        try server.start()
        baseURL = "http://127.0.0.1:\(server.port)"
        client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        running = RunningServices(gateway.services)
        await gateway.waitUntilListening()
        if let other {
            bootstrap = other.bootstrap
        } else {
            bootstrap = try await Bootstrapper(postgres: postgres, secretKey: nil)
                .run(workspace: "test", demo: .init(name: "demo"))
        }
    }

    static func migrate(_ postgres: PostgresClient) async throws {
        try await Migrator(client: postgres, logger: .silent()).migrate()
    }

    func close() async {
        await running.stop()
        await server.shutdown()
        await client.shutdown()
        await postgres.shutdown()
        await runtime.postgres.shutdown()
        runtime.redis.close()
        redis.close()
    }

    func send(
        _ method: String, _ path: String, key: String? = nil, tenant: String? = nil, body: JSONValue? = nil,
        installation: String? = nil, headers extra: [String: String] = [:]
    ) async throws -> Reply {
        var headers = HTTPHeaders()
        if let installation { headers.add(name: "BuzzKit-Installation", value: installation) }
        if let key { headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let tenant { headers.add(name: "BuzzKit-Tenant", value: tenant) }
        for (name, value) in extra { headers.add(name: name, value: value) }
        var bytes: [UInt8] = []
        if let body {
            bytes = body.jsonBytes
            headers.add(name: "Content-Type", value: "application/json")
        }
        let response = try await client.execute(
            HTTPClientRequest(
                method: HTTPMethod(rawValue: method),
                url: baseURL + path, headers: headers, body: bytes))
        let envelope = (try? Envelope.decode(response.body)) ?? Envelope.success(nil)
        return Reply(status: response.status, headers: response.headers, envelope: envelope)
    }

    /// Creates a key through the API with the workspace key.
    func createKey(scopes: [String], tenant: String? = nil, kind: String? = nil) async throws -> String {
        var body: [String: JSONValue] = ["name": "k", "scopes": .array(scopes.map(JSONValue.string))]
        if let tenant { body["tenantId"] = .string(tenant) }
        if let kind { body["kind"] = .string(kind) }
        let reply = try await send("POST", "/v1/api-keys", key: workspaceKey, body: .object(body))
        guard reply.status == 201, let secret = reply.data?["secret"]?.stringValue else {
            throw HarnessError(description: "creating a key failed: \(reply.status) \(reply.envelope)")
        }
        return secret
    }

    /// Registers an installation through the API (client key by default) and returns its token.
    func registerInstallation(_ anonymousID: String, key: String? = nil) async throws -> String {
        let reply = try await send(
            "POST", "/v1/installations", key: key ?? clientKey, body: ["anonymousId": .string(anonymousID)])
        guard reply.status == 201, let token = reply.data?["token"]?.stringValue else {
            throw HarnessError(description: "registering an installation failed: \(reply.status) \(reply.envelope)")
        }
        return token
    }

    /// Creates a tenant in this workspace and a tenant key with every tenant scope for it.
    func createTenant(_ name: String) async throws -> (id: String, key: String) {
        let reply = try await send("POST", "/v1/tenants", key: workspaceKey, body: ["name": .string(name)])
        guard reply.status == 201, let id = reply.data?["id"]?.stringValue else {
            throw HarnessError(description: "creating a tenant failed: \(reply.status) \(reply.envelope)")
        }
        let key = try await createKey(scopes: Scope.tenantScopes.map(\.rawValue), tenant: id)
        return (id, key)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
}

/// Runs `body` with a fresh harness and always closes it.
func withGateway<T>(rateLimit: RateLimitConfiguration? = nil, _ body: (GatewayHarness) async throws -> T) async throws
    -> T
{
    let harness = try await GatewayHarness(rateLimit: rateLimit)
    do {
        let result = try await body(harness)
        await harness.close()
        return result
    } catch {
        await harness.close()
        throw error
    }
}

/// A device token for tests: 64 hex characters derived from `seed`.
func deviceToken(_ seed: String) -> String {
    Hex.string(Digest.sha256(Array(seed.utf8)))
}
