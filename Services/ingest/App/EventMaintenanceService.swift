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
        while !stopped.isFulfilled {
            if clock.now >= nextMaintenance {
                await maintainPartitions()
                nextMaintenance = clock.now + configuration.maintenanceInterval
            }
            await trimIngestStream()
            let wait = min(configuration.trimInterval, nextMaintenance - clock.now)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [stopped] in await stopped.value }
                group.addTask { try? await Task.sleep(for: wait) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    public func shutdown() async { stopped.fulfill(()) }

    /// Runs `bk_events_maintain` once; returns what it did (one line per partition created or dropped).
    @discardableResult
    public func maintainPartitions() async -> [String] {
        do {
            let rows = try await postgres.query("SELECT bk_events_maintain($1, $2)", [configuration.retentionDays, configuration.partitionsAhead])
            let actions = try rows.map { try $0.decode(String.self, at: 0) }
            for action in actions { logger.info("events.partitions", metadata: ["action": action]) }
            return actions
        } catch {
            logger.warning("events.partitions.failed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Trims `bk:ingest` to the oldest entry the group has not acknowledged (or not yet read).
    public func trimIngestStream() async {
        let stream = configuration.ingestStream.rawValue
        do {
            let groups = try await redis.send("XINFO", "GROUPS", stream)
            var lastDelivered: String?
            for group in groups.array ?? [] {
                let fields = group.array ?? []
                var info: [String: RedisValue] = [:]
                var i = 0
                while i + 1 < fields.count {
                    if let key = fields[i].string { info[key] = fields[i + 1] }
                    i += 2
                }
                // With several groups on the stream, only trim below the slowest one.
                guard let id = info["last-delivered-id"]?.string else { continue }
                if lastDelivered == nil || (StreamEntryID(id) ?? .zero) < (StreamEntryID(lastDelivered!) ?? .zero) { lastDelivered = id }
            }
            guard var minID = lastDelivered.flatMap(StreamEntryID.init), minID != .zero else { return }
            let summary = try await redis.send("XPENDING", stream, configuration.group)
            if let parts = summary.array, parts.count >= 2, (parts[0].int ?? 0) > 0,
               let oldest = parts[1].string.flatMap(StreamEntryID.init), oldest < minID {
                minID = oldest
            }
            _ = try await redis.send("XTRIM", stream, "MINID", "~", minID.description)
        } catch {
            logger.debug("ingest.trim.failed", metadata: ["error": error.description])
        }
    }
}
