import BuzzKitCore
import Foundation

/// The `/metrics` of one table's retention, labelled `table`, the same for every owner:
/// `bk_retention_days` (the setting in force), `bk_retention_oldest_seconds` (the oldest data kept,
/// Unix time; 0: none), `bk_retention_partitions`, `bk_retention_partitions_ahead`,
/// `bk_retention_dropped_total` and, for a table whose weeks can be kept past their time for
/// what they still hold (runs), `bk_retention_partitions_kept`.
public struct RetentionMetrics: Sendable {
    private let oldest: Gauge
    private let partitions: Gauge
    private let ahead: Gauge
    private let kept: Gauge?
    private let dropped: Counter

    public init(_ registry: MetricsRegistry, table: String, retention: Duration, keepsLiveData: Bool = false) {
        let labels = [("table", table)]
        registry.gauge("bk_retention_days", help: "Retention in force, days", labels: labels)
            .set(Int(retention.components.seconds / 86_400))
        oldest = registry.gauge(
            "bk_retention_oldest_seconds", help: "Oldest data kept (lower bound of the oldest partition), Unix time",
            labels: labels)
        partitions = registry.gauge("bk_retention_partitions", help: "Partitions of the table", labels: labels)
        ahead = registry.gauge("bk_retention_partitions_ahead", help: "Partitions wholly in the future", labels: labels)
        kept =
            keepsLiveData
            ? registry.gauge(
                "bk_retention_partitions_kept", help: "Partitions past the retention kept because they hold live data",
                labels: labels)
            : nil
        dropped = registry.counter("bk_retention_dropped_total", help: "Partitions dropped", labels: labels)
    }

    /// What a pass that ran found.
    public func observe(
        dropped droppedCount: Int, oldest oldestKept: Date?, partitions count: Int, ahead: Int, kept: Int = 0
    ) {
        dropped.increment(by: droppedCount)
        oldest.set(Int(oldestKept?.timeIntervalSince1970 ?? 0))
        partitions.set(count)
        self.ahead.set(ahead)
        self.kept?.set(kept)
    }

    /// What a pass that ran did, the same for every owner: a log line per partition created
    /// (`retention.created`) and dropped (`retention.dropped`), and the gauges. `droppedOfTable`:
    /// the partitions of this table among `pass.dropped` when the pass keeps several tables (the
    /// ledger's); all of them otherwise.
    public func observe<Kept>(_ pass: RetentionPass<Kept>, logger: Logger, droppedOfTable: Int? = nil) {
        for name in pass.created { logger.info("retention.created", metadata: ["partition": name]) }
        for name in pass.dropped { logger.info("retention.dropped", metadata: ["partition": name]) }
        observe(
            dropped: droppedOfTable ?? pass.dropped.count, oldest: pass.oldest, partitions: pass.partitions,
            ahead: pass.partitionsAhead, kept: pass.kept.count)
    }
}
