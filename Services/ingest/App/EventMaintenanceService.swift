import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitContracts

/// Housekeeping of the event store, as a `Service`:
/// - at start and every `maintenanceInterval` (24 h): `bk_events_maintain(retentionDays, partitionsAhead)`
///   creates the coming monthly partitions and drops those past the retention;
/// - every `trimInterval` (10 s): trims `bk:ingest` below the ingest group's oldest unprocessed
///   entry (`XTRIM MINID ~`), so Redis holds only what is not yet in Postgres.
/// Failures are logged and retried at the next tick; they never stop the service.
public final class EventMaintenanceService: Service {
    public let name = "events.maintenance"
    let postgres: PostgresClient
    let redis: RedisClient
    let configuration: IngestConfiguration
    let logger: Logger
    private let stopped = OneShot<Void>()

    public init(postgres: PostgresClient, redis: RedisClient, configuration: IngestConfiguration, logger: Logger) {
        self.postgres = postgres
        self.redis = redis
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        let clock = ContinuousClock()
        var nextMaintenance = clock.now
        while !stopped.isFulfilled, !Task.isCancelled {
            if clock.now >= nextMaintenance {
                await maintainPartitions()
                nextMaintenance = clock.now + configuration.maintenanceInterval
            }
            await trimIngestStream()
            await pause(min(configuration.trimInterval, nextMaintenance - clock.now))
        }
    }

    public func shutdown() async { stopped.fulfill(()) }

    /// Sleeps `duration` in steps of at most 250 ms, ending early once `shutdown()` was called.
    /// Not a task group racing the sleep against `stopped.value`: that wait cannot be cancelled,
    /// so the group waited for it until shutdown and the loop ran once (one trim, one maintenance).
    private func pause(_ duration: Duration) async {
        let clock = ContinuousClock()
        let end = clock.now + duration
        while !stopped.isFulfilled, !Task.isCancelled, clock.now < end {
            try? await Task.sleep(for: min(.milliseconds(250), end - clock.now))
        }
    }

    /// Runs `bk_events_maintain` once; returns what it did (one line per partition created or dropped).
    @discardableResult
    public func maintainPartitions() async -> [String] {
        do {
            let rows = try await postgres.query(
                "SELECT bk_events_maintain($1, $2)", [configuration.retentionDays, configuration.partitionsAhead])
            let actions = try rows.map { try $0.decode(String.self, at: 0) }
            for action in actions { logger.info("events.partitions", metadata: ["action": action]) }
            return actions
        } catch {
            logger.warning("events.partitions.failed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Trims `bk:ingest` below the oldest entry a consumer group has not acknowledged (or not yet read).
    public func trimIngestStream() async {
        do {
            try await redis.trimAcknowledged(configuration.ingestStream.rawValue)
        } catch {
            logger.debug("ingest.trim.failed", metadata: ["error": error.description])
        }
    }
}
