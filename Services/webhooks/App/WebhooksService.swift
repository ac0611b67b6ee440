import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitPostgres
import BuzzKitRuntime
import BuzzKitWebhooks

/// Assembles the webhooks service: the dispatcher (outbox → messages → signed requests →
/// attempts) and the sweeper (disabling, retention). Any number of replicas share the work.
public enum WebhooksService {
    public static func makeServices(runtime: ServiceRuntime, configuration: WebhooksConfiguration) throws
        -> [any Service]
    {
        try makeServices(
            postgres: runtime.postgres, configuration: configuration, logger: runtime.logger,
            metrics: runtime.metrics)
    }

    /// The same, from the Postgres client directly (tests and benchmarks).
    public static func makeServices(
        postgres: PostgresClient, configuration: WebhooksConfiguration, logger: Logger,
        metrics registry: MetricsRegistry
    ) throws -> [any Service] {
        var http = HTTPClient.Configuration(
            httpVersion: .http2, maxConnectionsPerHost: nil, caFile: configuration.caFile,
            requestTimeout: configuration.timeout, connectTimeout: min(configuration.timeout, .seconds(10)))
        http.useEnvironmentProxy = false
        let client = try HTTPClient(configuration: http, logger: logger.with(["component": "http-client"]))
        let resolver = WebhookHostResolver()
        let metrics = WebhooksMetrics(registry)
        let sender = WebhookSender(
            http: client, resolver: resolver, policy: WebhookAddressPolicy(allowPrivate: configuration.allowPrivate),
            sealer: try AESGCM(key: configuration.secretKey), schedule: configuration.schedule,
            timeout: configuration.timeout)
        return [
            ClientsService(http: client, resolver: resolver),
            WebhookSweeper(
                postgres: postgres, configuration: configuration, metrics: metrics, logger: logger, registry: registry),
            WebhookDispatcher(
                postgres: postgres, sender: sender, configuration: configuration, metrics: metrics, logger: logger)
        ]
    }
}

/// Keeps the HTTP client and the resolver threads until every part that sends has stopped
/// (listed first, so stopped last), then closes them.
struct ClientsService: Service {
    let name = "webhooks.clients"
    let http: HTTPClient
    let resolver: WebhookHostResolver
    private let stopped = OneShot<Void>()

    init(http: HTTPClient, resolver: WebhookHostResolver) {
        self.http = http
        self.resolver = resolver
    }

    func run() async throws {
        _ = try? await stopped.wait()
        await http.shutdown()
        resolver.shutdown()
    }

    func shutdown() async { stopped.fulfill(()) }
}
