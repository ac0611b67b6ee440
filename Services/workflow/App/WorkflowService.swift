import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitRuntime

/// Assembles the workflow service: the `bk:events` consumer (triggers, cancelOn, waitFor),
/// `timerWorkers` run workers (timers, inboxes, pending starts), the deleted-workflow sweeper and
/// the runs' retention (`RunRetentionService`).
/// Any number of replicas may run side by side: runs are claimed with SKIP LOCKED and the
/// stream is read in one consumer group.
public enum WorkflowService {
    /// The service's parts, for a measurement of one alone (`buzzkit-bench workflows`).
    public enum Part: Sendable, CaseIterable {
        case deletedSweeper, retention, eventsConsumer, runWorkers
    }

    public static func makeServices(runtime: ServiceRuntime, configuration: WorkflowConfiguration) -> [any Service] {
        makeServices(
            postgres: runtime.postgres, redis: runtime.redis, configuration: configuration,
            logger: runtime.logger, metrics: runtime.metrics)
    }

    /// The same, from the clients directly (tests and benchmarks), with only `parts`.
    public static func makeServices(
        postgres: PostgresClient, redis: RedisClient, configuration: WorkflowConfiguration,
        logger: Logger, metrics registry: MetricsRegistry, parts: Set<Part> = Set(Part.allCases)
    ) -> [any Service] {
        let catalog = WorkflowCatalog()
        let metrics = WorkflowMetrics(registry)
        let router = EventRouter(
            postgres: postgres, redis: redis, catalog: catalog, configuration: configuration,
            metrics: metrics, logger: logger)
        var consumer = StreamConsumer.Configuration(
            stream: configuration.eventsStream.rawValue, group: configuration.group,
            consumer: configuration.consumerName)
        consumer.batchSize = configuration.eventsReadBatch
        consumer.claimIdleTime = configuration.claimIdleTime
        consumer.reclaimInterval = configuration.reclaimInterval
        consumer.maxDeliveries = configuration.maxDeliveries
        consumer.blockTime = .seconds(1)
        var services: [any Service] = []
        if parts.contains(.deletedSweeper) {
            services.append(
                DeletedWorkflowSweeper(
                    postgres: postgres, configuration: configuration, logger: logger, metrics: registry))
        }
        if parts.contains(.retention) {
            services.append(
                RunRetentionService(
                    postgres: postgres, configuration: configuration, logger: logger, metrics: registry))
        }
        if parts.contains(.eventsConsumer) {
            services.append(
                StreamConsumerService(
                    consumer: StreamConsumer(
                        client: redis, configuration: consumer, logger: logger,
                        batchHandler: router.handle)))
        }
        for n in 1...max(1, configuration.timerWorkers) where parts.contains(.runWorkers) {
            services.append(
                RunWorker(
                    number: n, postgres: postgres, redis: redis, catalog: catalog, configuration: configuration,
                    metrics: metrics, registry: registry, logger: logger))
        }
        return services
    }
}
