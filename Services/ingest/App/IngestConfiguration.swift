import BuzzKitContracts
import BuzzKitCore

/// The ingest service's knobs, with their defaults. Tests pass their own stream names.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_EVENT_RETENTION_DAYS` | `395` | months entirely older than this are dropped |
/// | `BUZZKIT_EVENT_PARTITIONS_AHEAD` | `2` | monthly partitions created ahead of this month |
/// | `BUZZKIT_INGEST_CONSUMERS` | `2` | consumer loops (parallel Postgres writers) per process |
/// | `BUZZKIT_INGEST_READ_BATCH` | `50` | `bk:ingest` entries (each up to 100 events) per read, one transaction |
/// | `BUZZKIT_EVENTS_STREAM_MAXLEN` | `100000` | approximate cap of `bk:events` in entries (each up to 100 events; 0: uncapped); its events are already in Postgres |
public struct IngestConfiguration: Sendable {
    public var ingestStream: StreamName = .ingest
    public var eventsStream: StreamName = .events
    public var group: String = ConsumerGroup.ingest
    /// Prefix of this process's consumer names (`<prefix>-1`, `<prefix>-2`, ...); the instance id.
    public var consumerName: String
    public var consumers: Int = 2
    public var readBatchSize: Int = 50
    public var eventsMaxLength: Int? = 100_000
    public var retentionDays: Int = 395
    public var partitionsAhead: Int = 2
    /// How often partitions are maintained (also once at start). Default 24 h.
    public var maintenanceInterval: Duration = .seconds(86_400)
    /// How often `bk:ingest` is trimmed below the group's oldest unprocessed entry. Default 10 s.
    public var trimInterval: Duration = .seconds(10)
    /// Attempts at one batch's transaction (deadlocks, a Postgres restart) before its entries are
    /// left pending for redelivery. Default 5, backing off from 50 ms.
    public var writeAttempts: Int = 5
    /// Entries pending this long with a dead consumer are taken over. Default 60 s.
    public var claimIdleTime: Duration = .seconds(60)

    public init(consumerName: String) {
        self.consumerName = consumerName
    }

    /// Reads the variables above (others keep their defaults).
    public init(consumerName: String, environment: [String: String]) throws(ConfigurationError) {
        self.init(consumerName: consumerName)
        var reader = ConfigReader(environment: environment)
        retentionDays = reader.int("BUZZKIT_EVENT_RETENTION_DAYS", default: retentionDays, range: 1...36_500)
        partitionsAhead = reader.int("BUZZKIT_EVENT_PARTITIONS_AHEAD", default: partitionsAhead, range: 1...24)
        consumers = reader.int("BUZZKIT_INGEST_CONSUMERS", default: consumers, range: 1...64)
        readBatchSize = reader.int("BUZZKIT_INGEST_READ_BATCH", default: readBatchSize, range: 1...1000)
        let cap = reader.int("BUZZKIT_EVENTS_STREAM_MAXLEN", default: eventsMaxLength ?? 0, range: 0...Int.max)
        eventsMaxLength = cap == 0 ? nil : cap
        try reader.validate()
    }
}
