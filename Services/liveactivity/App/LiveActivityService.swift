import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPush
import BuzzKitRedis
import BuzzKitRuntime
import Foundation

/// The liveactivity service: consumes `bk:la` (group `liveactivity`, shared by every replica) in
/// `lanes` consumers of its own, each taking what has arrived (up to `batchSize` requests) and
/// handling it as one batch (`LiveActivityBatch`): decided in one statement, sent through the
/// APNs client pool, recorded in one statement, answered and acknowledged in one Redis round
/// trip.
///
/// ```swift
/// await ServiceMain.run(
///     service: "liveactivity", configuration: { _, env in try LiveActivityConfiguration(environment: env) }
/// ) { runtime, configuration, _ in
///     try LiveActivityService(runtime: runtime, configuration: configuration).services
/// }
/// ```
/// SIGTERM: no new requests are read; those in flight are sent, recorded, answered and acked.
/// SIGKILL: a request the replica had read but not yet decided is claimed by another replica
/// after `claimIdle` and handled there; one it had decided (its message row exists) is
/// answered from the ledger by the replica that claims it, never sent again, and its pending
/// chunk is recorded as lost by apns-sender's sweeper (see `LiveActivityBatch`).
public struct LiveActivityService: Sendable {
    public let runtime: ServiceRuntime
    public let configuration: LiveActivityConfiguration
    let stream: StreamName
    let batch: LiveActivityBatch
    let clients: APNsClientPool

    public init(runtime: ServiceRuntime, configuration: LiveActivityConfiguration, stream: StreamName = .liveActivities)
        throws
    {
        self.runtime = runtime
        self.configuration = configuration
        self.stream = stream
        let credentials = try TenantCredentialStore(
            postgres: runtime.postgres, secretKey: configuration.secretKey,
            ttl: configuration.credentialsTTL)
        clients = APNsClientPool(settings: configuration.clients, logger: runtime.logger.with(["component": "apns"]))
        batch = LiveActivityBatch(
            ledger: Ledger(postgres: runtime.postgres, logger: runtime.logger),
            sender: LiveActivitySender(clients: clients, retryPolicy: configuration.retryPolicy),
            credentials: credentials, instance: runtime.settings.instanceID,
            metrics: LiveActivityMetrics(registry: runtime.metrics), logger: runtime.logger)
    }

    /// The APNs clients, the stream trimmer and the lanes, in the order `ServiceGroup` starts
    /// them. It stops them the other way, each `run()` returned before the next is asked: every
    /// lane finishes its batch in flight (sent, recorded, answered, acked), and only then do the
    /// APNs clients close.
    public var services: [any Service] {
        let batch = batch
        let lanes: [any Service] = (1...configuration.lanes).map { lane in
            var consumer = StreamConsumer.Configuration(
                stream: stream.rawValue, group: ConsumerGroup.liveActivity,
                consumer: configuration.lanes == 1
                    ? runtime.settings.instanceID : "\(runtime.settings.instanceID)/\(lane)")
            consumer.batchSize = configuration.batchSize
            consumer.readAhead = false
            consumer.claimIdleTime = configuration.claimIdle
            consumer.reclaimInterval = configuration.reclaimInterval
            return LaneService(
                consumer: StreamConsumerService(
                    consumer: StreamConsumer(
                        client: runtime.redis, configuration: consumer,
                        logger: runtime.logger.with(["stream": stream.rawValue, "group": ConsumerGroup.liveActivity]),
                        answeringBatchHandler: { entries in await batch.handle(entries) })),
                executor: LaneExecutor.lane(lane))
        }
        let trimmer = StreamTrimmer(
            redis: runtime.redis, stream: stream, logger: runtime.logger, metrics: runtime.metrics)
        return [clients, trimmer] + lanes
    }
}

/// A lane: its consumer's tasks (the loop, the batch handler, the claims' renewal) run on the
/// lane's `LaneExecutor`, so a batch continues on the thread that answered its last round trip.
struct LaneService: Service {
    let consumer: StreamConsumerService
    let executor: LaneExecutor
    var name: String { consumer.name }

    func run() async throws {
        try await withTaskExecutorPreference(executor) { try await consumer.run() }
    }

    func shutdown() async { await consumer.shutdown() }
}

/// Drops the `bk:la` entries every group acknowledged, every `interval` (10 s; an entry's work is
/// in Postgres once it is acknowledged).
struct StreamTrimmer: Service {
    let name = "trim.bk:la"
    let redis: RedisClient
    let stream: StreamName
    let loop: BackgroundLoop

    init(
        redis: RedisClient, stream: StreamName, interval: Duration = .seconds(10), logger: Logger,
        metrics: MetricsRegistry, clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.redis = redis
        self.stream = stream
        loop = BackgroundLoop(
            name: name, interval: interval, start: .afterInterval, logger: logger, metrics: metrics, clock: clock)
    }

    func run() async throws {
        await loop.run { try await redis.trimAcknowledged(stream.rawValue) }
    }

    func shutdown() async { loop.stop() }
}
