import BuzzKitContracts
import BuzzKitCore
import Foundation

/// The workflow service's knobs, with their defaults. Tests pass their own stream names and clock.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_WORKFLOW_TIMER_WORKERS` | `2` | loops per process claiming due runs (each one transaction at a time) |
/// | `BUZZKIT_WORKFLOW_CLAIM_BATCH` | `100` | due runs claimed (and advanced) per transaction |
/// | `BUZZKIT_WORKFLOW_POLL_INTERVAL` | `100ms` | how long a worker that found nothing due waits before it looks again |
/// | `BUZZKIT_WORKFLOW_EVENTS_READ_BATCH` | `50` | `bk:events` entries (each one identity's batch) per read |
/// | `BUZZKIT_WORKFLOW_EVENTS_CONCURRENCY` | `2` | entries of different subscribers handled at once (each one transaction; one subscriber's stay in order) |
/// | `BUZZKIT_WORKFLOW_CLAIM_IDLE` | `60s` | a `bk:events` entry pending this long (a dead replica's, or one that failed) is taken over and retried |
/// | `BUZZKIT_WORKFLOW_RECLAIM_INTERVAL` | `15s` | how often such entries are looked for |
/// | `BUZZKIT_WORKFLOW_MAX_DELIVERIES` | `5` | deliveries after which a failing `bk:events` entry goes to `{bk:events}:dead` |
/// | `BUZZKIT_RUN_RETENTION_DAYS` | `30` | finished runs are kept at least this long after they ended; then their week's partition is dropped (docs/data-lifecycle.md) |
/// | `BUZZKIT_RUN_RETENTION_INTERVAL` | `1h` | how often the retention pass runs (also at start) |
/// | `BUZZKIT_WORKFLOW_CLOCK_OFFSET_FILE` | unset | tests only: a file holding seconds (a decimal number) added to the system clock, re-read as it changes |
public struct WorkflowConfiguration: Sendable {
    public var eventsStream: StreamName = .events
    public var messagesStream: StreamName = .messages
    public var group: String = ConsumerGroup.workflow
    /// This process's consumer name (the instance id).
    public var consumerName: String
    public var timerWorkers: Int = 2
    public var claimBatch: Int = 100
    public var pollInterval: Duration = .milliseconds(100)
    public var eventsReadBatch: Int = 50
    /// Entries of different subscribers handled at once (one subscriber's stay in order). Default 2.
    public var eventsConcurrency: Int = 2
    /// Entries pending this long with a dead consumer are taken over. Default 60 s.
    public var claimIdleTime: Duration = .seconds(60)
    /// How often entries pending longer than `claimIdleTime` are looked for. Default 15 s.
    public var reclaimInterval: Duration = .seconds(15)
    /// Deliveries after which a failing `bk:events` entry goes to `{bk:events}:dead`. Default 5.
    public var maxDeliveries: Int = 5
    /// How often runs of deleted workflows are swept for a cancel (also at start). Default 5 min.
    public var deletedSweepInterval: Duration = .seconds(300)
    /// Finished runs are kept at least this long after they ended. Default 30 days.
    public var runRetentionDays: Int = 30
    /// How often the retention pass runs (also at start). Default 1 h.
    public var retentionInterval: Duration = .seconds(3600)
    public var clock: WorkflowClock = .system

    public init(consumerName: String) {
        self.consumerName = consumerName
    }

    /// Reads the variables above (others keep their defaults).
    public init(consumerName: String, environment: [String: String]) throws(ConfigurationError) {
        self.init(consumerName: consumerName)
        var reader = ConfigReader(environment: environment)
        timerWorkers = reader.int("BUZZKIT_WORKFLOW_TIMER_WORKERS", default: timerWorkers, range: 1...64)
        claimBatch = reader.int("BUZZKIT_WORKFLOW_CLAIM_BATCH", default: claimBatch, range: 1...5000)
        pollInterval = reader.duration("BUZZKIT_WORKFLOW_POLL_INTERVAL", default: pollInterval)
        eventsReadBatch = reader.int("BUZZKIT_WORKFLOW_EVENTS_READ_BATCH", default: eventsReadBatch, range: 1...1000)
        eventsConcurrency = reader.int(
            "BUZZKIT_WORKFLOW_EVENTS_CONCURRENCY", default: eventsConcurrency, range: 1...64)
        claimIdleTime = reader.duration("BUZZKIT_WORKFLOW_CLAIM_IDLE", default: claimIdleTime)
        reclaimInterval = reader.duration("BUZZKIT_WORKFLOW_RECLAIM_INTERVAL", default: reclaimInterval)
        maxDeliveries = reader.int("BUZZKIT_WORKFLOW_MAX_DELIVERIES", default: maxDeliveries, range: 1...1000)
        runRetentionDays = reader.int("BUZZKIT_RUN_RETENTION_DAYS", default: runRetentionDays, range: 1...36_500)
        retentionInterval = reader.duration("BUZZKIT_RUN_RETENTION_INTERVAL", default: retentionInterval)
        if let path = reader.raw("BUZZKIT_WORKFLOW_CLOCK_OFFSET_FILE"), !path.isEmpty {
            clock = .offsetFile(path)
        }
        try reader.validate()
    }
}
