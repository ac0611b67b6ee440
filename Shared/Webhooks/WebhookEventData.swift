/// Each event type's `data` as a jsonb expression over a producer's columns, for
/// `WebhookEventSource.data`: one definition per type, the shape the gateway's OpenAPI document
/// states (`WebhookSchemas` there; a test holds the two equal by validating bodies the service
/// sent against the document). Arguments are SQL expressions of the producer's statement.
public enum WebhookEventData {
    /// `receipt.delivered` / `receipt.opened`: the first receipt of a message for a subscriber.
    public static func receipt(messageId: String, subscriberId: String, eventId: String, occurredAt: String) -> String {
        "jsonb_build_object('messageId', \(messageId), 'subscriberId', \(subscriberId), 'eventId', \(eventId), 'occurredAt', \(occurredAt))"
    }

    /// `device.unregistered`. `source`: `'apns'` (APNs called the token invalid: `reason` is its
    /// reason) or `'api'` (removed through the API: reason `'deleted'`).
    public static func deviceUnregistered(
        token: String, subscriberId: String, environment: String, source: String, reason: String, at: String
    ) -> String {
        """
        jsonb_build_object('token', \(token), 'subscriberId', \(subscriberId), 'environment', \(environment), \
        'source', \(source), 'reason', \(reason), 'unregisteredAt', \(at))
        """
    }

    /// One item of `delivery.sent`'s `data.deliveries` (batched): its columns, stored as the
    /// batch's arrays (`WebhookDeliveryBatch`, which writes the JSON; `sentAt` is the batch's time).
    public struct DeliveryItem: Sendable {
        /// uuid expressions.
        public var deliveryId: String
        public var messageId: String
        /// text expressions.
        public var subscriberId: String
        public var deviceToken: String
        public var environment: String
    }

    public static func deliverySent(
        deliveryId: String, messageId: String, subscriberId: String, deviceToken: String, environment: String
    ) -> DeliveryItem {
        DeliveryItem(
            deliveryId: deliveryId, messageId: messageId, subscriberId: subscriberId, deviceToken: deviceToken,
            environment: environment)
    }

    /// `delivery.failed`: `status` the delivery's final status (`failed`, `expired`, `invalid_token`),
    /// `reason` APNs's reason or NULL, `httpStatus` its status or NULL, `errorCode` BuzzKit's code or NULL.
    public static func deliveryFailed(
        deliveryId: String, messageId: String, subscriberId: String, deviceToken: String, environment: String,
        status: String, reason: String, httpStatus: String, errorCode: String, failedAt: String
    ) -> String {
        """
        jsonb_build_object('deliveryId', \(deliveryId), 'messageId', \(messageId), 'subscriberId', \(subscriberId), \
        'deviceToken', \(deviceToken), 'environment', \(environment), 'status', \(status), 'reason', \(reason), \
        'httpStatus', \(httpStatus), 'errorCode', \(errorCode), 'invalidToken', (\(status)) = 'invalid_token', \
        'failedAt', \(failedAt))
        """
    }

    /// `message.completed`: the message's final counts, once no delivery is queued or sending
    /// (`status` `completed`), or once it failed as a whole before any delivery (`failed`, with
    /// `errorCode` and `errorMessage`; NULL for a completed one).
    public static func messageCompleted(
        messageId: String, kind: String, status: String, sent: String, failed: String, expired: String,
        invalidToken: String, errorCode: String, errorMessage: String, completedAt: String
    ) -> String {
        """
        jsonb_build_object('messageId', \(messageId), 'kind', \(kind), 'status', \(status), 'counts', \
        jsonb_build_object('sent', \(sent), 'failed', \(failed), 'expired', \(expired), 'invalidToken', \(invalidToken), \
        'total', (\(sent)) + (\(failed)) + (\(expired)) + (\(invalidToken))), 'error', \
        CASE WHEN (\(errorCode)) IS NOT NULL THEN jsonb_build_object('code', \(errorCode), 'message', \(errorMessage)) END, \
        'completedAt', \(completedAt))
        """
    }

    /// `workflow_run.completed|failed|cancelled`: `failureCode` (failed) and `reason` (cancelled) or NULL.
    public static func workflowRun(
        runId: String, workflowKey: String, version: String, subscriberId: String, status: String,
        failureCode: String, reason: String, startedAt: String, endedAt: String
    ) -> String {
        """
        jsonb_build_object('runId', \(runId), 'workflowKey', \(workflowKey), 'version', \(version), \
        'subscriberId', \(subscriberId), 'status', \(status), 'failureCode', \(failureCode), 'reason', \(reason), \
        'startedAt', \(startedAt), 'endedAt', \(endedAt))
        """
    }

    /// `live_activity.ended`: `endedBy` `'send'` (an `end` through the API) or `'device'`.
    public static func liveActivityEnded(
        activityId: String, subscriberId: String, attributesType: String, endedBy: String, endedAt: String
    ) -> String {
        """
        jsonb_build_object('activityId', \(activityId), 'subscriberId', \(subscriberId), \
        'attributesType', \(attributesType), 'endedBy', \(endedBy), 'endedAt', \(endedAt))
        """
    }
}
