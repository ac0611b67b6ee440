import BuzzKitCore

/// Where a chunk's time goes, on `/metrics`, so a slow fan-out can be explained without a profiler:
/// `bk_sender_chunk_stage_seconds{stage}` (`claim`, `send` = every APNs attempt of the chunk,
/// `record` = the batched ledger write, `total`), `bk_sender_deliveries_total` (claimed and
/// sent), `bk_apns_requests_total` (attempts made) and `bk_fanout_page_seconds` (one page: insert,
/// XADD, cursor write) and `bk_sender_direct_batch_size` (messages per direct batch). Handles are
/// looked up once; recording is a lock-free add or a short lock.
struct SenderMetrics: Sendable {
    let claim: Histogram
    let send: Histogram
    let record: Histogram
    let total: Histogram
    let fanoutPage: Histogram
    let deliveries: Counter
    let requests: Counter
    /// Messages one direct batch took (`DirectMessages.take`: one claim statement, one ledger write
    /// per tenant); entries whose message was already taken count nothing.
    let directBatch: Histogram

    init(registry: MetricsRegistry) {
        let help = "Time one delivery chunk spends in each stage."
        claim = registry.histogram("bk_sender_chunk_stage_seconds", help: help, labels: [("stage", "claim")])
        send = registry.histogram("bk_sender_chunk_stage_seconds", help: help, labels: [("stage", "send")])
        record = registry.histogram("bk_sender_chunk_stage_seconds", help: help, labels: [("stage", "record")])
        total = registry.histogram("bk_sender_chunk_stage_seconds", help: help, labels: [("stage", "total")])
        fanoutPage = registry.histogram("bk_fanout_page_seconds", help: "Time to fan out one page of devices.")
        deliveries = registry.counter(
            "bk_sender_deliveries_total", help: "Deliveries claimed and ended by this replica.")
        requests = registry.counter("bk_apns_requests_total", help: "APNs attempts made by this replica.")
        directBatch = registry.histogram(
            "bk_sender_direct_batch_size", help: "Direct messages taken, sent and recorded together.",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    }

    /// For tests and tools that do not expose metrics.
    static func unregistered() -> SenderMetrics { SenderMetrics(registry: MetricsRegistry()) }
}
