import BuzzKitCore

/// Where a Live Activity batch's time goes, on `/metrics`, so latency can be explained without a
/// profiler: `bk_la_stage_seconds{stage}`: `queue` (from the gateway's `XADD`, the entry id's
/// time, to the batch starting: waiting for a lane), `decide` (the deciding statement), `send`
/// (every APNs attempt), `record` (the ledger write), `total` (the batch, to its answers handed to
/// the consumer, which sends them in the round trip of its `XACK`); `bk_la_batch_requests`
/// (requests per batch) and `bk_la_requests_total`.
struct LiveActivityMetrics: Sendable {
    let queue: Histogram
    let decide: Histogram
    let send: Histogram
    let record: Histogram
    let total: Histogram
    let batchSize: Histogram
    let requests: Counter

    init(registry: MetricsRegistry) {
        let help = "Time a Live Activity batch spends in each stage."
        func stage(_ name: String) -> Histogram {
            registry.histogram("bk_la_stage_seconds", help: help, labels: [("stage", name)])
        }
        queue = stage("queue")
        decide = stage("decide")
        send = stage("send")
        record = stage("record")
        total = stage("total")
        batchSize = registry.histogram(
            "bk_la_batch_requests", help: "Requests per Live Activity batch.",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000])
        requests = registry.counter("bk_la_requests_total", help: "Live Activity requests answered by this replica.")
    }
}
