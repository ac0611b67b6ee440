import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRetention
import Foundation

/// Idempotency records leave a day at a time (migration 0028; docs/data-lifecycle.md, "Retention"):
/// one `BackgroundLoop`, `idempotency.retention`, in every gateway replica, at start and hourly,
/// makes the coming week's daily partitions of `idempotency_records` and drops each day wholly
/// older than the 24 hours a record is replayed for (by a concurrent detach then a drop: a claim is
/// never held up). Several replicas: the pass holds the table's advisory lock; the others skip.
///
/// On `/metrics`, labelled `table="idempotency_records"`: the `bk_retention_*` gauges of every
/// retention (`RetentionMetrics`); `GET /v1/retention` lists it too.
public final class IdempotencyRetention: Service {
    public let name = "idempotency.retention"
    /// How long a record is replayed (and kept): 24 hours, as the API documents.
    static let retention: Duration = .seconds(86_400)
    /// Days of partitions made ahead: the gateway may be stopped that long before a claim finds
    /// no partition for its day.
    static let daysAhead = 7
    static let partitions = TimePartitions(parent: "idempotency_records", period: .day)

    let postgres: PostgresClient
    let logger: Logger
    private let loop: BackgroundLoop
    private let metrics: RetentionMetrics

    init(postgres: PostgresClient, interval: Duration = .seconds(3600), logger: Logger, metrics: MetricsRegistry) {
        self.postgres = postgres
        self.logger = logger
        loop = BackgroundLoop(name: "idempotency.retention", interval: interval, logger: logger, metrics: metrics)
        self.metrics = RetentionMetrics(metrics, table: "idempotency_records", retention: Self.retention)
    }

    public func run() async throws { await loop.run { try await self.pass() } }
    public func shutdown() async { loop.stop() }

    /// One pass as of `now` (the database's clock when nil; tests move it).
    @discardableResult
    public func pass(now: Date? = nil) async throws -> TimePartitions.Pass {
        let pass = try await postgres.withConnection { connection in
            try await Self.partitions.maintain(
                on: connection, now: now, retention: Self.retention, ahead: Self.daysAhead, oldestColumn: "created_at")
        }
        guard pass.ran else { return pass }
        metrics.observe(pass, logger: logger)
        return pass
    }
}
