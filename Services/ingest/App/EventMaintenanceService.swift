import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitRetention
import Foundation

/// Housekeeping of the event store, as a `Service` of two `BackgroundLoop`s:
/// - `events.partitions`, at start and every `maintenanceInterval` (24 h):
///   `bk_events_maintain(retentionDays, partitionsAhead)` creates the coming monthly partitions
///   and drops those past the retention;
/// - `events.trim`, every `trimInterval` (10 s): trims `bk:ingest` below the ingest group's oldest
///   unprocessed entry (`XTRIM MINID ~`), so Redis holds only what is not yet in Postgres.
/// Failures are logged and counted by the loops and retried at the next tick; they never stop the service.
public final class EventMaintenanceService: Service {
    public let name = "events.maintenance"
    let postgres: PostgresClient
    let redis: RedisClient
    let configuration: IngestConfiguration
    let logger: Logger
    private let partitions: BackgroundLoop
    private let trimming: BackgroundLoop

    public init(
        postgres: PostgresClient, redis: RedisClient, configuration: IngestConfiguration, logger: Logger,
        metrics: MetricsRegistry
    ) {
        self.postgres = postgres
        self.redis = redis
        self.configuration = configuration
        self.logger = logger
        partitions = BackgroundLoop(
            name: "events.partitions", interval: configuration.maintenanceInterval, logger: logger, metrics: metrics)
        trimming = BackgroundLoop(
            name: "events.trim", interval: configuration.trimInterval, logger: logger, metrics: metrics)
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.partitions.run { try await self.maintainPartitions() } }
            group.addTask { await self.trimming.run { try await self.trimIngestStream() } }
        }
    }

    public func shutdown() async {
        partitions.stop()
        trimming.stop()
    }

    /// Runs `bk_events_maintain` once; returns what it did (one line per partition created or dropped).
    @discardableResult
    public func maintainPartitions() async throws -> [String] {
        let rows = try await postgres.query(
            "SELECT bk_events_maintain($1, $2)", [configuration.retentionDays, configuration.partitionsAhead])
        let actions = try rows.map { try $0.decode(String.self, at: 0) }
        for action in actions { logger.info("events.partitions", metadata: ["action": action]) }
        try await recordStatus(dropped: actions.filter { $0.hasPrefix("dropped") }.count)
        return actions
    }

    /// Records what the events' partitions hold (`RetentionStatus`, for `GET /v1/retention` and the
    /// dashboard): the monthly partitions (the default one, for stray times, is not counted) and
    /// the lower bound of the oldest.
    private func recordStatus(dropped: Int) async throws {
        try await postgres.withConnection { connection in
            let row = try await connection.query(
                """
                SELECT count(*) FILTER (WHERE lower_bound IS NOT NULL), count(*) FILTER (WHERE lower_bound >= now()),
                       min(lower_bound)
                FROM bk_retention_partitions('events')
                """
            ).first
            try await RetentionStatus(
                table: "events", retention: .seconds(configuration.retentionDays * 86_400),
                oldestKept: try row?.decode(Date?.self, at: 2), partitions: try row?.decode(Int.self, at: 0) ?? 0,
                partitionsAhead: try row?.decode(Int.self, at: 1) ?? 0, droppedLastPass: dropped
            ).record(on: connection)
        }
    }

    /// Trims `bk:ingest` below the oldest entry a consumer group has not acknowledged (or not yet read).
    public func trimIngestStream() async throws {
        try await redis.trimAcknowledged(configuration.ingestStream.rawValue)
    }
}
