import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitRuntime

/// Assembles the ingest service: `configuration.consumers` batch consumers of `bk:ingest` (each
/// its own Postgres writer) and the maintenance service.
public enum IngestService {
    /// The services to run (what `ServiceMain.run`'s setup returns).
    public static func makeServices(runtime: ServiceRuntime, configuration: IngestConfiguration) -> [any Service] {
        makeServices(
            postgres: runtime.postgres, redis: runtime.redis, configuration: configuration,
            logger: runtime.logger, metrics: runtime.metrics)
    }

    /// The same, from the clients directly (tests and benchmarks).
    public static func makeServices(
        postgres: PostgresClient, redis: RedisClient, configuration: IngestConfiguration,
        logger: Logger, metrics: MetricsRegistry
    ) -> [any Service] {
        let processor = IngestProcessor(
            postgres: postgres, redis: redis, configuration: configuration,
            logger: logger, metrics: metrics)
        var services: [any Service] = [
            EventMaintenanceService(
                postgres: postgres, redis: redis,
                configuration: configuration, logger: logger, metrics: metrics)
        ]
        for n in 1...max(1, configuration.consumers) {
            services.append(
                StreamConsumerService(
                    consumer: makeConsumer(
                        number: n, processor: processor, redis: redis,
                        configuration: configuration, logger: logger)))
        }
        return services
    }

    static func makeConsumer(
        number: Int, processor: IngestProcessor, redis: RedisClient,
        configuration: IngestConfiguration, logger: Logger
    ) -> StreamConsumer {
        var consumer = StreamConsumer.Configuration(
            stream: configuration.ingestStream.rawValue, group: configuration.group,
            consumer: "\(configuration.consumerName)-\(number)")
        consumer.batchSize = configuration.readBatchSize
        consumer.claimIdleTime = configuration.claimIdleTime
        consumer.blockTime = .seconds(1)
        return StreamConsumer(client: redis, configuration: consumer, logger: logger, batchHandler: processor.handle)
    }
}
