import BuzzKitContracts
import BuzzKitPolicy
import BuzzKitWebhooks
import BuzzKitWire

/// The webhooks API's shapes, and every event type's body with its `data`: the document's
/// top-level `webhooks` (OpenAPI 3.1: what BuzzKit POSTs to a tenant's endpoint) and
/// `components.schemas.WebhookEvent*`. The producers build `data` with `WebhookEventData`
/// (Shared/Webhooks); the end-to-end tests validate the bodies the service sent against these.
enum WebhookSchemas {
    static let urlRule = TextRule(
        maxLength: WebhookURL.maxLength, pattern: "^[Hh][Tt][Tt][Pp][Ss]?://",
        problem: "must be an https:// URL (http:// only where the operator allows private addresses)"
    ) { text in
        let lower = text.prefix(8).lowercased()
        return lower.hasPrefix("https://") || lower.hasPrefix("http://")
    }

    /// The endpoint URL: JSON Schema states its length and scheme; the rest is named (a format).
    static let url = Schema.custom(
        format: "buzzkit-webhook-url",
        """
        The endpoint's URL, 1 to \(WebhookURL.maxLength) ASCII characters without spaces: https://, a host, no user \
        name, password or #fragment. Its host must resolve only to public addresses: loopback, private, link-local, \
        reserved and cloud metadata addresses are refused (422 at save time, and again before every send, since DNS \
        can change); an operator who sets BUZZKIT_WEBHOOKS_ALLOW_PRIVATE=true allows every one of them but the cloud \
        metadata services, and http:// too. Redirects are never followed. For example \
        https://api.example.com/buzzkit/webhooks (no example value: one that resolves cannot be named for every network)
        """)

    static let eventTypes = WebhookEventType.subscribable.map(\.rawValue)

    static let events = Schema.adding(
        ["uniqueItems": true],
        to: Schema.array(
            Schema.string(
                "An event type (delivery.sent is opt-in: sent only when listed, in batches of up to 100)",
                enumeration: eventTypes), minItems: 1, maxItems: eventTypes.count))

    static let descriptionRule = TextRule.noControlCharacters(1, 500)

    static let createRequest = Schema.object(
        [
            "url": url, "events": events, "description": Schema.nullable(Schema.string(descriptionRule)),
            "enabled": Schema.nullable(Schema.boolean)
        ], required: ["url", "events"])

    static let updateRequest = Schema.object([
        "url": url, "events": events, "description": Schema.nullable(Schema.string(descriptionRule)),
        "enabled": Schema.boolean
    ])

    static let replayRequest = Schema.object(
        ["since": WorkflowSchemas.dateTime(maxLength: 64)], required: ["since"],
        description: "Messages made since this moment are sent again with their original ids")

    static var endpointProperties: [String: JSONValue] {
        [
            "id": Schema.uuid, "url": Schema.string(), "description": Schema.nullable(Schema.string()),
            "events": Schema.array(Schema.string(enumeration: eventTypes)), "enabled": Schema.boolean,
            "disabledReason": Schema.nullable(
                Schema.string(
                    "api: disabled through the API; failing: every attempt failed for 5 days",
                    enumeration: ["api", "failing"])),
            "disabledAt": Schema.nullable(Schema.timestamp),
            "failingSince": Schema.nullable(Schema.timestamp), "lastSuccessAt": Schema.nullable(Schema.timestamp),
            "lastFailureAt": Schema.nullable(Schema.timestamp),
            "previousSecretExpiresAt": Schema.nullable(
                Schema.string("after a rotation: until when the previous secret signs too", format: "date-time")),
            "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
        ]
    }

    static var endpoint: JSONValue {
        Schema.object(endpointProperties, required: Array(endpointProperties.keys))
    }

    /// An endpoint with its secret (create, rotate): the secret is in this answer only.
    static var endpointWithSecret: JSONValue {
        var properties = endpointProperties
        properties["secret"] = Schema.string(
            "whsec_ + base64 of 32 random bytes: configure your verifier with it (shown only in this answer)",
            pattern: "^whsec_[A-Za-z0-9+/=]+$")
        return Schema.object(properties, required: Array(properties.keys))
    }

    static var attempt: JSONValue {
        let properties: [String: JSONValue] = [
            "id": Schema.string("The attempt's id (newest first)"),
            "webhookId": Schema.nullable(
                Schema.string("The webhook-id header the attempt carried (null: webhook.disabled)", format: "uuid")),
            "eventType": Schema.string("The event type, or webhook.disabled"),
            "attemptedAt": Schema.timestamp,
            "outcome": Schema.string(enumeration: ["delivered", "retrying", "failed", "lost", "disabled"]),
            "httpStatus": Schema.nullable(Schema.integer), "latencyMs": Schema.nullable(Schema.integer),
            "response": Schema.nullable(Schema.string("The first 1 kB of the answer's body")),
            "error": Schema.nullable(Schema.string()), "nextAttemptAt": Schema.nullable(Schema.timestamp),
            "attempt": Schema.nullable(Schema.integer)
        ]
        return Schema.object(properties, required: Array(properties.keys))
    }

    static let testQueued = Schema.object(
        [
            "webhookId": Schema.uuid, "endpointId": Schema.uuid,
            "eventType": Schema.string(enumeration: ["webhook.test"])
        ],
        required: ["webhookId", "endpointId", "eventType"])

    static let replayed = Schema.object(
        ["endpointId": Schema.uuid, "queued": Schema.integer, "since": Schema.timestamp],
        required: ["endpointId", "queued", "since"])

    static let deleted = Schema.object(["id": Schema.uuid, "deleted": Schema.boolean], required: ["id", "deleted"])

    // MARK: - Events

    static let timestamp = Schema.string(format: "date-time")
    static let nullableText = Schema.nullable(Schema.string())

    /// Each type's `data`.
    static var data: [WebhookEventType: JSONValue] {
        let delivery: [String: JSONValue] = [
            "deliveryId": Schema.uuid, "messageId": Schema.uuid, "subscriberId": Schema.string(),
            "deviceToken": Schema.string(), "environment": Schema.string(enumeration: ["sandbox", "production"])
        ]
        let run: [String: JSONValue] = [
            "runId": Schema.uuid, "workflowKey": Schema.string(), "version": Schema.integer,
            "subscriberId": Schema.string(), "status": Schema.string(enumeration: ["completed", "failed", "cancelled"]),
            "failureCode": nullableText, "reason": nullableText, "startedAt": Schema.nullable(timestamp),
            "endedAt": timestamp
        ]
        let receipt: [String: JSONValue] = [
            "messageId": Schema.string("The message the receipt is about"), "subscriberId": Schema.string(),
            "eventId": Schema.string("The id of the SDK's $notification event"), "occurredAt": timestamp
        ]
        func object(_ properties: [String: JSONValue], _ description: String) -> JSONValue {
            Schema.object(properties, required: Array(properties.keys), description: description)
        }
        let sentItem = object(
            delivery.merging(["sentAt": timestamp]) { a, _ in a }, "A delivery APNs accepted")
        return [
            .messageCompleted: object(
                [
                    "messageId": Schema.uuid,
                    "kind": Schema.string(enumeration: MessageKind.allCases.map(\.rawValue)),
                    "status": Schema.string(
                        "completed: every delivery ended; failed: the message could not be sent at all (error says why)",
                        enumeration: [MessageStatus.completed.rawValue, MessageStatus.failed.rawValue]),
                    "counts": object(
                        [
                            "sent": Schema.integer, "failed": Schema.integer, "expired": Schema.integer,
                            "invalidToken": Schema.integer, "total": Schema.integer
                        ], "Deliveries by final status"),
                    "error": Schema.nullable(
                        object(
                            ["code": Schema.string(), "message": Schema.string()],
                            "Why a failed message could not be sent (invalid_target, apns_credentials_missing, ...)")),
                    "completedAt": timestamp
                ], "A message whose every delivery ended (or that failed as a whole), with its final counts"),
            .deliveryFailed: object(
                delivery.merging([
                    "status": Schema.string(enumeration: ["failed", "expired", "invalid_token"]),
                    "reason": Schema.nullable(Schema.string("APNs's reason, e.g. BadDeviceToken")),
                    "httpStatus": Schema.nullable(Schema.integer), "errorCode": nullableText,
                    "invalidToken": Schema.boolean, "failedAt": timestamp
                ]) { a, _ in a }, "A delivery that ended without reaching APNs's acceptance"),
            .deliverySent: object(
                ["deliveries": Schema.array(sentItem, minItems: 1, maxItems: WebhookEventType.batchLimit)],
                "Deliveries APNs accepted, up to 100 a request (opt-in)"),
            .deviceUnregistered: object(
                [
                    "token": Schema.string(), "subscriberId": Schema.string(),
                    "environment": Schema.string(enumeration: ["sandbox", "production"]),
                    "source": Schema.string(
                        "apns: APNs called the token invalid; api: removed through the API",
                        enumeration: ["apns", "api"]),
                    "reason": Schema.string("APNs's reason (Unregistered, BadDeviceToken, ...) or deleted"),
                    "unregisteredAt": timestamp
                ], "A device that gets no more pushes"),
            .receiptDelivered: object(receipt, "The first delivered receipt of a message for a subscriber"),
            .receiptOpened: object(receipt, "The first opened receipt of a message for a subscriber"),
            .workflowRunCompleted: object(run, "A workflow run that completed"),
            .workflowRunFailed: object(run, "A workflow run that failed"),
            .workflowRunCancelled: object(run, "A workflow run that was cancelled"),
            .liveActivityEnded: object(
                [
                    "activityId": Schema.string(), "subscriberId": Schema.string(), "attributesType": Schema.string(),
                    "endedBy": Schema.string(enumeration: ["send", "device"]), "endedAt": timestamp
                ], "A Live Activity that ended"),
            .subscriberPreferencesChanged: object(
                [
                    "subscriberId": Schema.string(), "changeId": Schema.string("The change's id in the history"),
                    "source": Schema.string(enumeration: PreferenceSource.allCases.map(\.rawValue)),
                    "all": Schema.nullable(PreferenceRoutes.change),
                    "categories": Schema.adding(
                        ["additionalProperties": PreferenceRoutes.change], to: ["type": "object"]),
                    "changedAt": timestamp
                ], "A subscriber's preferences changed: what changed, from what to what (null: the default)"),
            .webhookTest: object(
                ["endpointId": Schema.uuid, "message": Schema.string()], "Sent by POST /v1/webhooks/{id}/test")
        ]
    }

    static func componentName(_ type: WebhookEventType) -> String {
        "WebhookEvent_" + type.rawValue.replacingOccurrences(of: ".", with: "_")
    }

    /// `components.schemas`: one body schema per type.
    static var components: [String: JSONValue] {
        var schemas: [String: JSONValue] = [:]
        for (type, data) in data {
            schemas[componentName(type)] = Schema.object(
                ["type": ["const": .string(type.rawValue)], "timestamp": timestamp, "data": data],
                required: ["type", "timestamp", "data"])
        }
        return schemas
    }

    /// The document's `webhooks`: what BuzzKit POSTs to an endpoint, per event type.
    static var webhooks: JSONValue {
        var items: [String: JSONValue] = [:]
        for type in WebhookEventType.allCases {
            items[type.rawValue] = [
                "post": [
                    "operationId": .string("webhook_" + type.rawValue.replacingOccurrences(of: ".", with: "_")),
                    "summary": .string(
                        (data[type]?["description"]?.stringValue ?? type.rawValue)
                            + (type.isBatched ? " (batched: up to 100 per request)" : "")),
                    "description": """
                    Signed as Standard Webhooks defines: headers webhook-id (the same on every retry), webhook-timestamp \
                    (Unix seconds of this attempt) and webhook-signature (v1,<base64 HMAC-SHA256 of \
                    "<webhook-id>.<webhook-timestamp>.<body>"> with the endpoint's whsec_ secret; during a rotation's \
                    24 h two signatures, space-separated). Any 2xx acknowledges it; anything else is retried.
                    """,
                    "parameters": [
                        ["name": "webhook-id", "in": "header", "required": true, "schema": Schema.uuid],
                        [
                            "name": "webhook-timestamp", "in": "header", "required": true,
                            "schema": ["type": "string", "pattern": "^[0-9]+$"]
                        ],
                        [
                            "name": "webhook-signature", "in": "header", "required": true,
                            "schema": ["type": "string", "pattern": "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$"]
                        ]
                    ],
                    "requestBody": [
                        "required": true,
                        "content": ["application/json": ["schema": Schema.ref(componentName(type))]]
                    ],
                    "responses": ["2XX": ["description": "Acknowledged"]]
                ]
            ]
        }
        return .object(items)
    }
}
