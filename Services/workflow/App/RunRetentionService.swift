import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitWorkflowRuns
import Foundation

/// Retention of workflow runs (docs/data-lifecycle.md, "Retention"): one `BackgroundLoop`,
/// `workflow.retention`, at start and every `retentionInterval` (1 h), runs a
/// `WorkflowRunRetention` pass: creates the coming weeks' partitions of `workflow_runs` and drops
/// the weeks past `BUZZKIT_RUN_RETENTION_DAYS` that hold no live run. Safe with several replicas
/// (one pass at a time holds the advisory lock; the others skip). Never blocks a run's step: the
/// drop is a concurrent detach, then a drop of the detached table.
///
/// On `/metrics`, labelled `table="workflow_runs"`: `bk_retention_days` (the setting in force),
/// `bk_retention_oldest_seconds` (the oldest data kept, Unix time; 0: none), `bk_retention_partitions`,
/// `bk_retention_partitions_kept` (past their time, kept for a live or recently ended run),
/// `bk_retention_partitions_ahead` (weeks made ahead of now) and `bk_retention_dropped_total`.
/// A pass that keeps a week logs `retention.kept` with its counts.
public final class RunRetentionService: Service {
    public let name = "workflow.retention"
    let retention: WorkflowRunRetention
    let logger: Logger
    private let loop: BackgroundLoop
    private let metrics: RetentionMetrics

    public init(
        postgres: PostgresClient, configuration: WorkflowConfiguration, logger: Logger, metrics: MetricsRegistry
    ) {
        retention = WorkflowRunRetention(postgres: postgres, retentionDays: configuration.runRetentionDays)
        self.logger = logger
        loop = BackgroundLoop(
            name: "workflow.retention", interval: configuration.retentionInterval, logger: logger, metrics: metrics)
        self.metrics = RetentionMetrics(
            metrics, table: "workflow_runs", retention: .seconds(configuration.runRetentionDays * 86_400),
            keepsLiveData: true)
    }

    public func run() async throws { await loop.run { try await self.pass() } }
    public func shutdown() async { loop.stop() }

    /// One pass; throws on failure (the loop logs, counts and retries it).
    @discardableResult
    public func pass(now: Date? = nil) async throws -> WorkflowRunRetention.Pass {
        let pass = try await retention.maintain(now: now)
        guard pass.ran else { return pass }
        for week in pass.kept {
            logger.info(
                "retention.kept",
                metadata: [
                    "partition": week.partition, "runs.live": String(week.liveRuns),
                    "runs.recently_ended": String(week.recentlyEnded)
                ])
        }
        metrics.observe(pass, logger: logger)
        return pass
    }
}
