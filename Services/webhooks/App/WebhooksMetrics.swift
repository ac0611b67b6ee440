import BuzzKitCore

/// The webhooks service's series on `/metrics`.
public struct WebhooksMetrics: Sendable {
    /// Outbox events made into messages (an event of a batched type counts once).
    public let eventsTaken: Counter
    public let delivered: Counter
    public let retrying: Counter
    public let failed: Counter
    /// Attempts whose answer was lost with a replica that stopped mid-send.
    public let lost: Counter
    public let endpointsDisabled: Counter
    public let inFlight: Gauge
    public let attemptSeconds: Histogram

    public init(_ registry: MetricsRegistry) {
        eventsTaken = registry.counter(
            "buzzkit_webhooks_events_taken_total", help: "Outbox events made into webhook messages")
        delivered = registry.counter(
            "buzzkit_webhooks_attempts_total", help: "Webhook attempts by outcome", labels: [("outcome", "delivered")])
        retrying = registry.counter(
            "buzzkit_webhooks_attempts_total", help: "Webhook attempts by outcome", labels: [("outcome", "retrying")])
        failed = registry.counter(
            "buzzkit_webhooks_attempts_total", help: "Webhook attempts by outcome", labels: [("outcome", "failed")])
        lost = registry.counter(
            "buzzkit_webhooks_attempts_total", help: "Webhook attempts by outcome", labels: [("outcome", "lost")])
        endpointsDisabled = registry.counter(
            "buzzkit_webhooks_endpoints_disabled_total", help: "Endpoints disabled after failing too long")
        inFlight = registry.gauge("buzzkit_webhooks_in_flight", help: "Webhook attempts under way")
        attemptSeconds = registry.histogram(
            "buzzkit_webhooks_attempt_seconds", help: "Time of one webhook attempt",
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15])
    }
}
