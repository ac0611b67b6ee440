import BuzzKitCore
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitRetention
import Foundation

/// Retention of the ledger (docs/data-lifecycle.md, "Retention"): one `BackgroundLoop`,
/// `ledger.retention`, at start and every `ledgerRetentionInterval` (1 h), runs a
/// `LedgerRetention` pass: creates the coming weeks' partitions of `messages`, `deliveries` and
/// `delivery_payloads` and drops the weeks past `BUZZKIT_LEDGER_RETENTION_DAYS` that hold nothing
/// in use. Safe with several replicas (one pass at a time holds the advisory lock; the others
/// skip). Never blocks a send: the drop is a concurrent detach, then a drop of the detached table.
///
/// On `/metrics`, labelled `table="messages"`: `bk_retention_days`, `bk_retention_oldest_seconds`,
/// `bk_retention_partitions`, `bk_retention_partitions_kept` (past their time, kept for a send or a
/// run still going), `bk_retention_partitions_ahead` and `bk_retention_dropped_total`. A pass that
/// keeps a week logs `retention.kept` with what keeps it.
final class LedgerRetentionService: Service {
    let name = "ledger.retention"
    let retention: LedgerRetention
    let logger: Logger
    private let loop: BackgroundLoop
    private let metrics: RetentionMetrics

    init(postgres: PostgresClient, configuration: SenderConfiguration, logger: Logger, metrics: MetricsRegistry) {
        retention = LedgerRetention(postgres: postgres, retentionDays: configuration.ledgerRetentionDays)
        self.logger = logger
        loop = BackgroundLoop(
            name: "ledger.retention", interval: configuration.ledgerRetentionInterval, logger: logger,
            metrics: metrics)
        self.metrics = RetentionMetrics(
            metrics, table: "messages", retention: .seconds(configuration.ledgerRetentionDays * 86_400),
            keepsLiveData: true)
    }

    func run() async throws { await loop.run { try await self.pass() } }
    func shutdown() async { loop.stop() }

    /// One pass; throws on failure (the loop logs, counts and retries it).
    @discardableResult
    func pass(now: Date? = nil) async throws -> LedgerRetention.Pass {
        let pass = try await retention.maintain(now: now)
        guard pass.ran else { return pass }
        for week in pass.kept {
            logger.info(
                "retention.kept",
                metadata: [
                    "partition": week.week, "messages": String(week.messages), "chunks": String(week.chunks),
                    "runs": String(week.runs)
                ])
        }
        metrics.observe(pass, logger: logger, droppedOfTable: LedgerRetention.weeksDropped(pass))
        return pass
    }
}
