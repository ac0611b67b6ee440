import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitRedis
import Foundation

/// What one service process shares: its settings, logger, metrics, and the PostgreSQL and Redis
/// clients (pools that connect lazily and reconnect on their own, so a service starts while a
/// dependency is still down and `/readyz` says so).
public final class ServiceRuntime: Sendable {
    public let settings: ServiceSettings
    public let logger: Logger
    public let metrics: MetricsRegistry
    public let postgres: PostgresClient
    public let redis: RedisClient
    public let draining = DrainFlag()
    /// The lag of the consumer groups this process consumes, on `/metrics`; `run` watches every
    /// `StreamConsumerService` it is given.
    public let streams: StreamLagMetrics

    public init(settings: ServiceSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        self.metrics = MetricsRegistry()
        var postgresConfiguration = try PostgresConfiguration(url: settings.databaseURL)
        postgresConfiguration.poolSize = settings.databasePoolSize
        postgresConfiguration.applicationName = settings.instanceID
        var redisConfiguration = try RedisConfiguration(url: settings.redisURL)
        redisConfiguration.poolSize = settings.redisPoolSize
        self.postgres = PostgresClient(
            configuration: postgresConfiguration, logger: logger.with(["component": "postgres"]))
        self.redis = RedisClient(configuration: redisConfiguration, logger: logger.with(["component": "redis"]))
        self.streams = StreamLagMetrics(redis: redis, metrics: metrics)
    }

    /// A router with `/healthz`, `/readyz` and `/metrics` already registered; add the service's
    /// own routes (and middleware) after.
    public func makeRouter() -> Router {
        var router = Router()
        HealthRoutes(
            serviceName: settings.serviceName, postgres: postgres, redis: redis, metrics: metrics,
            streams: streams, draining: draining, checkTimeout: .seconds(2)
        ).register(on: &router)
        return router
    }

    /// The HTTP server for `router` on the configured port, recording request metrics.
    public func makeHTTPServer(router: Router) -> HTTPServer {
        let configuration = HTTPServer.Configuration(
            host: settings.httpHost, port: settings.httpPort, workerThreads: settings.httpThreads,
            maxBodyBytes: settings.maxBodyBytes)
        let observer = HTTPMetricsObserver(metrics: metrics)
        return HTTPServer(
            configuration: configuration, router: router, logger: logger.with(["component": "http"]),
            observer: { observer.record($0) })
    }

    /// Runs the pools, `services` and the HTTP server for `router` as one `ServiceGroup` until
    /// SIGTERM/SIGINT. The group's order is `[postgres, redis] + services + [http, drain]`, so
    /// shutdown first turns `/readyz` to 503, then stops the HTTP server (in-flight requests
    /// answered), then each of `services` from last to first, each one's `run()` returned before
    /// the one before it is asked, and closes the pools last, once nothing uses them. List
    /// `services` with what others use first (a client pool, a sweeper) and what feeds them last.
    public func run(router: Router, services: [any Service] = []) async throws {
        for case let consumer as StreamConsumerService in services {
            streams.watch(stream: consumer.consumer.configuration.stream, group: consumer.consumer.configuration.group)
        }
        let http = HTTPService(server: makeHTTPServer(router: router))
        let drain = DrainOnShutdown(flag: draining)
        let group = ServiceGroup(
            services: [postgres, redis] + services + [http, drain],
            configuration: .init(shutdownTimeout: settings.shutdownTimeout),
            logger: logger)
        defer { logger.notice("stopped") }
        let outcome = try await group.run()
        if outcome == .timedOut { throw ServiceGroupError(message: "shutdown timed out") }
    }
}

/// The first service to be asked to stop: flips `/readyz` to 503 before anything else stops.
struct DrainOnShutdown: Service {
    let name = "drain"
    let flag: DrainFlag
    private let stopped = OneShot<Void>()

    init(flag: DrainFlag) { self.flag = flag }

    func run() async throws { _ = try? await stopped.wait() }

    func shutdown() async {
        flag.set()
        stopped.fulfill(())
    }
}
