import BuzzKitContracts
import BuzzKitWebhooks

/// The webhook events of the ledger's deliveries (`delivery.sent`, `delivery.failed`), enqueued
/// through the seam (`WebhookOutbox`) by the statements that write a delivery with its outcome
/// (`record`, `recordLostLiveActivities`), from the `RETURNING` of their insert: a delivery is
/// written once, so its event is enqueued once, committed with it or not at all. A statement run
/// again (a blip, a replica recording a chunk another replica recorded first) inserts nothing for
/// a delivery that exists, and so enqueues nothing.
///
/// A Live Activity send (start, update, end) is a delivery like a push's: its token's outcome
/// reports the same way, its `messageId` naming a message of kind `live_activity`.
extension Ledger {
    /// What a delivery insert returns for its events, in this order.
    static let deliveryReturning = """
        id, tenant_id, message_id, device_token, subscriber_id, environment, status, last_status, last_reason,
        error_code, sent_at
        """

    /// Two CTEs (`delivery_sent_events`, `delivery_failed_events`) over `recorded`, a CTE whose
    /// rows have the columns of `deliveryReturning`. `delivery.sent` for `sent` deliveries, one
    /// outbox row per endpoint and up to 100 of them (`insertBatchesSQL`: one request each);
    /// `delivery.failed` for the others, with APNs's status and reason when APNs answered (a
    /// reason without an answer, a transport error's text, is not APNs's), `invalidToken` for
    /// `invalid_token`, its id the delivery's. A `suppressed` delivery (the send policy held it
    /// back, nothing went to APNs) announces neither.
    ///
    /// `tenants` (a uuid[] expression naming every tenant of `recorded`'s rows) gates each CTE:
    /// when no endpoint of those tenants wants the type, the CTE reads none of the rows.
    static func deliveryEvents(recorded: String, tenants: String) -> String {
        let sent = WebhookOutbox.insertBatchesSQL(
            WebhookBatchSource(
                from: "\(recorded) d", tenantId: "d.tenant_id", type: WebhookEventSource.literal(.deliverySent),
                eventId: "d.id", occurredAt: "d.sent_at",
                item: WebhookEventData.deliverySent(
                    deliveryId: "d.id", messageId: "d.message_id", subscriberId: "d.subscriber_id",
                    deviceToken: "d.device_token", environment: "d.environment"),
                filter: "d.status = '\(DeliveryStatus.sent.rawValue)'",
                gate: WebhookEventSource.subscribed(tenants: tenants, to: .deliverySent)))
        let failed = WebhookOutbox.insertSQL(
            WebhookEventSource(
                from: "\(recorded) d", tenantId: "d.tenant_id", type: WebhookEventSource.literal(.deliveryFailed),
                eventId: "d.id", occurredAt: "now()",
                data: WebhookEventData.deliveryFailed(
                    deliveryId: "d.id", messageId: "d.message_id", subscriberId: "d.subscriber_id",
                    deviceToken: "d.device_token", environment: "d.environment", status: "d.status",
                    reason: "CASE WHEN d.last_status > 0 THEN d.last_reason END",
                    httpStatus: "NULLIF(d.last_status, 0)", errorCode: "d.error_code", failedAt: "now()"),
                filter:
                    "d.status NOT IN ('\(DeliveryStatus.sent.rawValue)', '\(DeliveryStatus.suppressed.rawValue)')",
                gate: WebhookEventSource.subscribed(tenants: tenants, to: .deliveryFailed)))
        return """
            delivery_sent_events AS (
                \(sent)
            ), delivery_failed_events AS (
                \(failed)
            )
            """
    }
}
