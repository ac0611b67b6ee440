/// The events a tenant's endpoint can receive (`events` of `POST /v1/webhooks`), each body
/// `{type, timestamp, data}`; the gateway's OpenAPI document holds each type's `data` schema
/// (`components.schemas.WebhookEvent_<type>` and the document's `webhooks`).
///
/// Where each is produced is in docs/webhooks.md; every producer enqueues through `WebhookOutbox`
/// inside its own statement, so an event is committed with what it reports.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Comparable {
    /// A message's final counts, once its last delivery ended.
    case messageCompleted = "message.completed"
    /// A delivery APNs refused for good (with its reason; an invalid token says so).
    case deliveryFailed = "delivery.failed"
    /// Deliveries APNs accepted. Opt-in (never implied) and batched: one request carries up to
    /// `WebhookEventType.batchLimit` deliveries as `data.deliveries`.
    case deliverySent = "delivery.sent"
    /// A device that will receive no more pushes: APNs called its token invalid, or it was
    /// removed through the API.
    case deviceUnregistered = "device.unregistered"
    /// `$notification.delivered` reached ingest: the first for a message and subscriber.
    case receiptDelivered = "receipt.delivered"
    /// `$notification.opened` reached ingest: the first for a message and subscriber.
    case receiptOpened = "receipt.opened"
    case workflowRunCompleted = "workflow_run.completed"
    case workflowRunFailed = "workflow_run.failed"
    case workflowRunCancelled = "workflow_run.cancelled"
    /// A Live Activity ended (by an `end` send or on the device).
    case liveActivityEnded = "live_activity.ended"
    /// A subscriber's notification preferences changed (the API, the SDK or the dashboard), with
    /// what changed from what to what.
    case subscriberPreferencesChanged = "subscriber.preferences_changed"
    /// `POST /v1/webhooks/{id}/test`: sent to that endpoint only, whatever it subscribed to.
    case webhookTest = "webhook.test"

    /// Deliveries per request of a batched type.
    public static let batchLimit = 100

    /// The member of a batched type's `data` that holds its items (`{"deliveries": [...]}`).
    public static let batchMember = "deliveries"

    /// Types an endpoint may list in `events` (all but `webhook.test`, which it always accepts).
    public static let subscribable: [WebhookEventType] = allCases.filter { $0 != .webhookTest }

    /// Whether events of this type travel in batches (`data.deliveries`, up to `batchLimit`).
    public var isBatched: Bool { self == .deliverySent }

    /// The attempt recorded when an endpoint is disabled for failing (not an event: nothing is sent).
    public static let disabledAttempt = "webhook.disabled"

    public static func < (a: WebhookEventType, b: WebhookEventType) -> Bool { a.rawValue < b.rawValue }
}
