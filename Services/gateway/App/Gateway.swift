import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitIntake
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// The public door of BuzzKit: auth, tenancy, rate limits, idempotency, validation and the
/// envelope around the v1 routes of `GatewayRoute.table`.
///
/// ```swift
/// let gateway = try Gateway(configuration: config, postgres: runtime.postgres, redis: runtime.redis,
///                           logger: runtime.logger, metrics: runtime.metrics)
/// gateway.register(on: &router)          // after runtime.makeRouter() (health routes)
/// return gateway.services                // revocation listener, lastUsedAt batcher
/// ```
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    let postgres: PostgresClient
    let redis: RedisClient
    let logger: Logger
    let keys: KeyStore
    let cache: AuthCache
    let authenticator: Authenticator
    let rateLimiter: RateLimiter
    let tenants: TenantResolver
    let idempotency: Idempotency
    let installationStore: InstallationStore
    let subscriberBatches: SubscriberBatches
    /// `POST /v1/messages` writes, batched: concurrent sends share one INSERT, one commit and one
    /// pipelined XADD per stream (`MessageIntake.store`); each request still gets its own answer.
    let messageWrites: Coalescer<UUID, MessageIntake.Prepared, MessageIntake.Accepted>
    let messageIntake: MessageIntake
    let installationCache: InstallationCache
    let installations: InstallationAuthenticator
    let sealer: AESGCM
    /// Categories, preferences and frequency caps (`BuzzKitPolicy`, their one owner).
    let policy: Policy
    /// Webhook endpoints (Shared/Webhooks), and the resolver that checks where their URLs lead.
    let webhookEndpoints: WebhookEndpointStore
    var webhookResolver: WebhookHostResolver { Self.webhookResolver }
    /// One per process (lookups are rare: endpoint saves), its threads kept for the process's life.
    static let webhookResolver = WebhookHostResolver(threads: 2)
    /// Where Live Activity sends wait for their answers: one list and one reader per replica.
    let liveActivityReplies: LiveActivityReplies
    public let lastUsed: LastUsedRecorder
    /// Subscriber erasure: the request's part (`eraser`) and the loop that finishes the rest.
    let eraser: Eraser
    public let erasures: ErasureWorker
    /// Idempotency records dropped by the day once past their 24 hours.
    public let idempotencyRetention: IdempotencyRetention
    public let revocations: RevocationListener
    /// The OpenAPI document, built once from the route table.
    public let openAPIDocument: JSONValue
    private let openAPIBytes: [UInt8]
    /// The dashboard's static files, served at `/dashboard`.
    public let dashboard: DashboardSite

    public init(
        configuration: GatewayConfiguration, postgres: PostgresClient, redis: RedisClient, logger: Logger,
        metrics: MetricsRegistry
    ) throws {
        self.configuration = configuration
        self.postgres = postgres
        self.redis = redis
        self.logger = logger
        sealer = try AESGCM(key: configuration.secretKey)
        policy = Policy(postgres: postgres)
        webhookEndpoints = try WebhookEndpointStore(postgres: postgres, secretKey: configuration.secretKey)
        liveActivityReplies = LiveActivityReplies(
            redis: redis, stream: configuration.liveActivityStream, logger: logger)
        keys = KeyStore(postgres: postgres)
        cache = AuthCache(ttl: configuration.authCacheTTL)
        lastUsed = LastUsedRecorder(
            store: keys, interval: configuration.lastUsedInterval, logger: logger, metrics: metrics)
        installationStore = InstallationStore(postgres: postgres)
        eraser = Eraser(
            postgres: postgres, secretKey: configuration.secretKey, settings: configuration.erasure, logger: logger)
        erasures = ErasureWorker(eraser: eraser, logger: logger, metrics: metrics)
        idempotencyRetention = IdempotencyRetention(postgres: postgres, logger: logger, metrics: metrics)
        subscriberBatches = SubscriberBatches(postgres: postgres, metrics: metrics)
        let intake = MessageIntake(postgres: postgres, redis: redis, logger: logger)
        messageIntake = intake
        let messageBatchSizes = metrics.histogram(
            "bk_gateway_batch_size", help: "Requests served by one batched statement.",
            labels: [("batch", "message_post")], buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256])
        // Several batches at once, so their commits share WAL flushes (as subscriber writes do);
        // each answers from its connections' threads (no task per batch or request).
        messageWrites = Coalescer(
            maxBatch: 256, maxConcurrent: 2, observeBatch: { messageBatchSizes.observe(Double($0)) },
            runWithCallback: { messages, done in intake.store(messages, completion: done) })
        installationCache = InstallationCache(ttl: configuration.authCacheTTL)
        installations = InstallationAuthenticator(cache: installationCache, store: installationStore)
        revocations = RevocationListener(
            postgres: postgres, channel: configuration.revocationChannel, cache: cache,
            installations: installationCache, logger: logger, metrics: metrics)
        authenticator = Authenticator(cache: cache, store: keys, recorder: lastUsed, metrics: metrics)
        rateLimiter = RateLimiter(configuration: configuration.rateLimit, redis: redis, logger: logger)
        tenants = TenantResolver(postgres: postgres)
        idempotency = Idempotency(postgres: postgres, sealer: sealer, logger: logger)
        openAPIDocument = OpenAPIDocument.build(routes: GatewayRoute.table)
        openAPIBytes = openAPIDocument.jsonBytes
        dashboard = try DashboardSite(
            directory: configuration.dashboardDirectory.map { URL(fileURLWithPath: $0) }
                ?? DashboardSite.bundledDirectory)
    }

    /// The background services to run next to the HTTP server.
    /// The Live Activity answers' reader comes first, so it stops only after the HTTP server
    /// stopped and every send waiting on it answered.
    public var services: [any Service] {
        [liveActivityReplies, revocations, lastUsed, erasures, idempotencyRetention]
    }

    /// Waits until the revocation listener is in place (so a revocation elsewhere reaches this replica).
    public func waitUntilListening() async { _ = try? await revocations.listening.wait() }

    /// Registers every route of the table that the gateway serves (the infrastructure routes come
    /// from `ServiceRuntime.makeRouter()`), and the dashboard's files.
    public func register(on router: inout Router) {
        // `/v1/messages/preview` is its own resource, not a message id (as the document says).
        router.literalPathsAreResources = true
        dashboard.register(on: &router)
        let bytes = openAPIBytes
        for route in GatewayRoute.table {
            switch route.access {
            case .infrastructure:
                continue
            case .open:
                router.on(
                    route.method, route.routerPattern,
                    sync: { _ in
                        Response(status: 200, headers: ["Content-Type": Response.jsonContentType], body: bytes)
                    })
            case .workspace, .tenant, .anyKey:
                let box = RouteBox(route)
                router.on(route.method, route.routerPattern, answering: { [self] request in answer(box, request) })
            }
        }
    }
}
