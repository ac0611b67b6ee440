import BuzzKitCore
import BuzzKitRedis
import Synchronization

/// The backlog of every stream consumer group a process consumes, on its `/metrics`, so an
/// autoscaler can act on work waiting instead of CPU:
///
/// | metric (labels `stream`, `group`) | meaning |
/// |---|---|
/// | `bk_stream_lag` | entries not yet delivered to the group (Redis's `lag`; the stream's length, an upper bound, when Redis cannot count) |
/// | `bk_stream_pending` | entries delivered to a consumer of the group and not acknowledged |
/// | `bk_stream_oldest_pending_age_seconds` | how long ago the oldest pending entry was added (0 when none) |
///
/// plus `bk_stream_status_errors_total`, the scrapes whose read failed (Redis down or slower than
/// `timeout`; the gauges keep their last values then). The figures are read from Redis on each
/// scrape (one pipelined round trip per group), so they are as fresh as the scrape and cost
/// nothing between scrapes. Every replica of a group reports the same figures: aggregate with
/// `max by (stream, group)`, not `sum`.
public final class StreamLagMetrics: Sendable {
    struct Watched: Sendable {
        var stream: String
        var group: String
        var lag: Gauge
        var pending: Gauge
        var oldestPendingAge: FloatGauge
    }

    let redis: RedisClient
    let metrics: MetricsRegistry
    let timeout: Duration
    let errors: Counter
    private let watched = Mutex<[Watched]>([])

    /// - Parameter timeout: how long a scrape waits for Redis before it renders the last values.
    public init(redis: RedisClient, metrics: MetricsRegistry, timeout: Duration = .seconds(1)) {
        self.redis = redis
        self.metrics = metrics
        self.timeout = timeout
        errors = metrics.counter(
            "bk_stream_status_errors_total",
            help: "Scrapes whose read of the consumer groups' lag failed or timed out (gauges kept their last values)")
    }

    /// Reports `group` on `stream` from now on; watching a pair twice changes nothing.
    public func watch(stream: String, group: String) {
        let labels = [("stream", stream), ("group", group)]
        let entry = Watched(
            stream: stream, group: group,
            lag: metrics.gauge(
                "bk_stream_lag", help: "Entries of the stream not yet delivered to the consumer group", labels: labels),
            pending: metrics.gauge(
                "bk_stream_pending", help: "Entries delivered to a consumer of the group and not acknowledged yet",
                labels: labels),
            oldestPendingAge: metrics.floatGauge(
                "bk_stream_oldest_pending_age_seconds",
                help: "Seconds since the oldest pending entry of the group was added (0 when none is pending)",
                labels: labels))
        watched.withLock { list in
            if !list.contains(where: { $0.stream == stream && $0.group == group }) { list.append(entry) }
        }
    }

    /// The (stream, group) pairs reported, in the order they were added.
    public var groups: [(stream: String, group: String)] { watched.withLock { $0.map { ($0.stream, $0.group) } } }

    /// Reads every watched group's status and sets the gauges; gives up after `timeout`.
    public func refresh() async {
        let list = watched.withLock { $0 }
        guard !list.isEmpty else { return }
        let redis = self.redis
        let completed = await withDeadline(timeout, onTimeout: false) {
            for item in list {
                guard let status = try? await redis.groupStatus(item.stream, group: item.group) else { return false }
                item.lag.set(status.lag)
                item.pending.set(status.pending)
                item.oldestPendingAge.set(Double(status.oldestPendingAgeMilliseconds) / 1000)
            }
            return true
        }
        if !completed { errors.increment() }
    }
}
