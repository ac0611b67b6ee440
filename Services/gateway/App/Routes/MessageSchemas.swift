import BuzzKitContracts
import BuzzKitIntake
import BuzzKitWire

/// JSON schemas of messages and their deliveries, for the OpenAPI document: what
/// `POST /v1/messages` and its preview take (`MessageIntake.validate` and `MessageContent.validate`
/// check it) and what the message and delivery routes answer.
///
/// The request is one object with typed members; the rules across members (exactly one target,
/// something to show or carry, what needs a title or body, what a silent push may be) are JSON
/// Schema conditionals in `allOf`, so a generator that makes types of objects reads the members
/// and a validator or a test generator reads the rules. What JSON Schema cannot state is listed
/// in words in `x-rules`.
enum MessageSchemas {
    static let targets = ["to", "topic", "segment", "where"]
    /// A message without any of these is silent (a background push).
    static let visibleMembers = ["title", "subtitle", "body", "sound", "badge"]

    static var components: [String: JSONValue] {
        [
            "SendMessageRequest": request(targetRequired: true),
            "PreviewMessageRequest": request(targetRequired: false),
            "PushButton": button, "PushAction": action, "PushPriority": priority,
            "InterruptionLevel": Schema.string(
                "How the notification interrupts (iOS 15)", enumeration: InterruptionLevel.allCases.map(\.rawValue)),
            "APNsEnvironment": Schema.string("An APNs environment", enumeration: ["sandbox", "production"]),
            "MessageAccepted": accepted, "Message": message, "MessageSummary": summary,
            "MessageTarget": target, "MessageContent": storedContent, "MessageWorkflowOrigin": workflowOrigin,
            "DeliveryCounts": deliveryCounts, "ReceiptCounts": receiptCounts, "MessageError": messageError,
            "Delivery": delivery, "DeliveryAttempt": attempt, "DeliveryDetail": deliveryDetail,
            "DeliveryReceipts": deliveryReceipts, "MessagePreview": preview
        ]
    }

    // MARK: - Requests

    /// Rules of the content that JSON Schema cannot state; the document lists them in words
    /// (`x-rules`) and `MessageContent.validate` checks them (422 validation_failed).
    static let contentRules = [
        "button ids are unique within actions",
        "the APNs payload built from the content is at most 4096 bytes",
        "collapseId, action.name and button ids are at most 64, 128 and 64 bytes of UTF-8 (x-max-utf8-bytes)"
    ]

    /// `POST /v1/messages` (`targetRequired`) or its preview (a target is optional there, and a
    /// saved segment's existence is not checked).
    static func request(targetRequired: Bool) -> JSONValue {
        let subscriber = Schema.string(FieldRules.identifierRule)
        let text = Schema.nullable(Schema.string(.length(1, Int.max)))
        var properties: [String: JSONValue] = [
            "to": Schema.nullable([
                "description": .string("A subscriber id or a list of 1 to \(MessageIntake.maxSubscribersPerMessage)"),
                "oneOf": [
                    subscriber,
                    Schema.array(subscriber, minItems: 1, maxItems: MessageIntake.maxSubscribersPerMessage)
                ]
            ]),
            "topic": Schema.nullable(Schema.string(FieldRules.keyRule, "A topic's key")),
            "segment": Schema.nullable(
                Schema.string(
                    FieldRules.keyRule,
                    targetRequired ? "A saved segment's key (404 not_found when there is none)" : "A segment key")),
            "where": Schema.nullable(SegmentRoutes.whereSchema),
            "environment": Schema.nullable(
                Schema.adding(["description": "Only devices of this environment"], to: Schema.ref("APNsEnvironment")))
        ]
        for (name, schema) in contentProperties(text: text) { properties[name] = schema }
        var rules: [JSONValue] = []
        if targetRequired {
            // At least one target.
            rules.append(["if": Schema.absent(targets), "then": false])
        }
        // At most one: each given target leaves the others absent.
        for name in targets {
            rules.append(["if": Schema.given(name), "then": Schema.absent(targets.filter { $0 != name })])
        }
        rules += contentConditions
        let rulesInWords =
            (targetRequired
                ? ["exactly one target: to, topic, segment or where (a null member counts as absent)"]
                : ["at most one target: to, topic, segment or where"]) + contentRules
        return Schema.adding(
            ["allOf": .array(rules), "x-rules": .array(rulesInWords.map(JSONValue.string))],
            to: Schema.object(
                properties,
                description: targetRequired
                    ? "A message: one target and its content. A null member counts as absent"
                    : "A message body as POST /v1/messages takes it, with or without a target"))
    }

    /// The content members, nullable (null counts as absent), as the request takes them.
    static func contentProperties(text: JSONValue) -> [String: JSONValue] {
        [
            "title": text, "subtitle": text, "body": text,
            "data": Schema.nullable(
                Schema.adding(["description": "Custom data, delivered as sent (bk.data)"], to: Schema.anyObject)),
            "deepLink": Schema.nullable(Schema.string(MessageContent.deepLinkRule)),
            "action": Schema.nullable(Schema.ref("PushAction")),
            "actions": Schema.nullable(Schema.array(Schema.ref("PushButton"), maxItems: MessageContent.maxButtons)),
            "category": Schema.nullable(
                CategoryRoutes.reference("The send policy's category, also the notification's aps.category")),
            "image": Schema.nullable(Schema.string(MessageContent.imageRule)),
            "sound": text,
            "badge": Schema.nullable(["type": "integer", "minimum": 0, "maximum": .int(Int64(Int32.max))]),
            "threadId": text,
            "interruptionLevel": Schema.nullable(Schema.ref("InterruptionLevel")),
            "priority": Schema.nullable(Schema.ref("PushPriority")),
            "expiresAt": Schema.nullable(futureTime),
            "collapseId": Schema.nullable(Schema.string(MessageContent.collapseIdRule))
        ]
    }

    /// `expiresAt`: a moment not yet passed. JSON Schema cannot compare with the server's clock, so
    /// the rule is a format of its own (the value is an RFC 3339 date-time all the same).
    static let futureTime = Schema.custom(
        format: "buzzkit-future-date-time",
        """
        An RFC 3339 date-time with an offset (2030-01-31T18:00:00Z) not before the server's clock: once it \
        passed, APNs stops trying. A moment already past is 422 validation_failed
        """, example: "2030-01-31T18:00:00Z")

    /// `"high"`/`"normal"` or APNs's own `10`/`5`.
    static let priority: JSONValue = [
        "description": "high or normal, or APNs's own 10 or 5 (default: high, normal for a silent push)",
        "oneOf": [Schema.string(enumeration: ["high", "normal"]), ["type": "integer", "enum": [10, 5]]]
    ]

    /// The rules between content members (`MessageContent.issues`), as JSON Schema.
    static var contentConditions: [JSONValue] {
        let visible: JSONValue = ["anyOf": [Schema.given("title"), Schema.given("body")]]
        return [
            // Buttons, an image and an interruption level show on a title or body.
            [
                "if": ["required": ["actions"], "properties": ["actions": ["type": "array", "minItems": 1]]],
                "then": visible
            ],
            ["if": Schema.given("image"), "then": visible],
            ["if": Schema.given("interruptionLevel"), "then": visible],
            // A silent push is not high priority and carries something: data, an action or a deep link.
            [
                "if": Schema.absent(visibleMembers),
                "then": [
                    "properties": ["priority": ["enum": ["normal", 5, nil]]],
                    "anyOf": [
                        ["required": ["data"], "properties": ["data": ["type": "object", "minProperties": 1]]],
                        Schema.given("action"), Schema.given("deepLink")
                    ]
                ]
            ]
        ]
    }

    /// A button's id: unique within its message's actions, which no schema of a single string can
    /// state, so a format of its own (as a workflow step's name). No example: a generator would put
    /// the same one on every button.
    static let uniqueButtonId = Schema.custom(
        format: "buzzkit-button-id",
        """
        1 to \(MessageContent.buttonIdRule.maxLength) characters and at most \(MessageContent.buttonIdRule.maxUTF8Bytes ?? 64) \
        bytes of UTF-8; unique within the message's actions (an id used twice is 422)
        """)

    static var button: JSONValue {
        Schema.adding(
            [
                "allOf": [
                    // A placeholder is for a text input.
                    [
                        "if": Schema.given("placeholder"),
                        "then": ["required": ["input"], "properties": ["input": ["const": true]]]
                    ]
                ]
            ],
            to: Schema.object(
                [
                    "id": uniqueButtonId,
                    "title": Schema.string(.length(1, Int.max)),
                    "destructive": Schema.nullable(Schema.boolean), "foreground": Schema.nullable(Schema.boolean),
                    "input": Schema.nullable(Schema.boolean),
                    "placeholder": Schema.nullable(Schema.string(.length(0, Int.max), "Only with input: true"))
                ], required: ["id", "title"], additional: true,
                description: "An action button (other members are ignored)"))
    }

    static let action = Schema.object(
        ["name": Schema.string(MessageContent.actionNameRule), "data": Schema.nullable(Schema.anyObject)],
        required: ["name"], additional: true, description: "What the SDK runs when the notification is opened")

    // MARK: - Answers

    static let accepted = Schema.object(
        [
            "id": Schema.uuid, "status": Schema.string(enumeration: MessageRoutes.messageStatuses),
            "audienceSize": Schema.nullable(Schema.integer)
        ], required: ["id", "status", "audienceSize"])

    /// `status`, as the message and the list show it.
    static let status = Schema.string(
        "queued, fanning_out (the audience is being resolved), fanned_out (every delivery exists, some pending), "
            + "completed (every delivery decided: final, see completedAt) or failed (final, see error)",
        enumeration: MessageRoutes.messageStatuses)
    /// When the message completed (null until then, and for a failed one).
    static let completedAt = Schema.nullable(
        Schema.string("when every delivery was decided (status completed)", format: "date-time"))
    /// Deliveries still pending (queued or sending).
    static let pending: JSONValue = [
        "type": "integer", "minimum": 0,
        "description": "deliveries not decided yet (counts.queued + counts.sending); 0 once completed"
    ]

    /// `messages.kind`: what the message is and how its `content` reads.
    static let kind = Schema.string(
        "push (content: what POST /v1/messages took); live_activity (content {liveActivity}); a workflow's local "
            + "window as a silent push: local_plan (content {local}: the plan under bk.local) or local_cancel "
            + "(content {cancel: {runId}}: bk.cancel)",
        enumeration: MessageKind.allCases.map(\.rawValue))

    /// `messages.target` as stored: one of `to`, `topic` or `where` (with `segment` when a saved
    /// segment was named: its expression at send time).
    static let target = Schema.object(
        [
            "to": Schema.array(Schema.string()), "topic": Schema.string(), "where": Schema.string(),
            "segment": Schema.string()
        ], description: "Who it went to: to, topic, or where (with segment when it named a saved segment)")

    /// `messages.content` as stored: the content members given (nulls left out), or what a
    /// Live Activity send or a workflow's local window recorded.
    static var storedContent: JSONValue {
        var properties = contentProperties(text: Schema.string())
        for (name, schema) in properties {
            // Stored without nulls: each member is its non-null form.
            if case .object(let o) = schema, case .array(let choices)? = o["oneOf"], choices.count == 2,
                choices[1] == ["type": "null"]
            {
                properties[name] = choices[0]
            }
        }
        properties["expiresAt"] = Schema.timestamp
        properties["liveActivity"] = Schema.adding(
            ["description": "kind live_activity: the send request"], to: Schema.anyObject)
        properties["local"] = Schema.adding(["description": "kind local_plan: the plan"], to: Schema.anyObject)
        properties["cancel"] = Schema.object(
            ["runId": Schema.string()], required: ["runId"], description: "kind local_cancel: the run")
        return Schema.object(properties, description: "What the message says (by kind)")
    }

    static let workflowOrigin = Schema.object(
        ["workflowKey": Schema.string(), "version": Schema.integer, "runId": Schema.uuid, "step": Schema.string()],
        required: ["workflowKey", "version", "runId", "step"],
        description: "The workflow run and send step that sent a message")

    static var deliveryCounts: JSONValue {
        Schema.object(
            Dictionary(uniqueKeysWithValues: MessageRoutes.deliveryStatuses.map { ($0, Schema.integer) }),
            required: MessageRoutes.deliveryStatuses, description: "Deliveries by status, recorded and pending")
    }

    static let receiptCounts = Schema.object(
        ["delivered": Schema.integer, "opened": Schema.integer, "dismissed": Schema.integer],
        required: ["delivered", "opened", "dismissed"],
        description: "Distinct subscribers whose devices reported each receipt")

    static let messageError = Schema.object(
        ["code": Schema.string(), "message": Schema.nullable(Schema.string())], required: ["code", "message"])

    /// The members a message and a list item share.
    static var summaryProperties: [String: JSONValue] {
        [
            "id": Schema.uuid, "status": status, "kind": kind,
            "target": Schema.ref("MessageTarget"), "content": Schema.ref("MessageContent"),
            "environment": Schema.nullable(Schema.ref("APNsEnvironment")),
            "audienceSize": Schema.nullable(Schema.integer),
            "counts": Schema.ref("DeliveryCounts"), "pending": pending, "completedAt": completedAt,
            "receipts": Schema.ref("ReceiptCounts"), "error": Schema.nullable(Schema.ref("MessageError")),
            "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
        ]
    }

    /// A list's item (`GET /v1/messages`).
    static var summary: JSONValue {
        Schema.object(summaryProperties, required: Array(summaryProperties.keys))
    }

    /// `GET /v1/messages/{id}`: a list item, the open rate and the workflow that sent it.
    static var message: JSONValue {
        var properties = summaryProperties
        properties["openRate"] = Schema.nullable(["type": "number"])
        properties["workflow"] = Schema.nullable(Schema.ref("MessageWorkflowOrigin"))
        return Schema.object(properties, required: Array(properties.keys))
    }

    static var delivery: JSONValue {
        let properties: [String: JSONValue] = [
            "id": Schema.uuid, "messageId": Schema.uuid, "subscriberId": Schema.string(),
            "deviceToken": Schema.string(),
            "environment": Schema.ref("APNsEnvironment"),
            "status": Schema.string(enumeration: MessageRoutes.deliveryStatuses),
            "attemptCount": Schema.integer,
            "apnsId": Schema.nullable(Schema.string()), "lastStatus": Schema.nullable(Schema.integer),
            "lastReason": Schema.nullable(Schema.string()), "errorCode": Schema.nullable(Schema.string()),
            "sentAt": Schema.nullable(Schema.timestamp), "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp,
            "suppressedReason": Schema.nullable(
                Schema.string(
                    "Why the send policy held it back (status suppressed, no APNs request); null otherwise",
                    enumeration: SuppressionReason.allCases.map(\.rawValue)))
        ]
        return Schema.object(properties, required: Array(properties.keys))
    }

    static var attempt: JSONValue {
        let properties: [String: JSONValue] = [
            "attempt": Schema.integer, "payload": Schema.string("The payload's JSON text as sent"),
            "headers": Schema.map(Schema.string(), description: "The request headers as sent (the JWT redacted)"),
            "status": ["type": "integer", "description": "HTTP status; 0 when no answer came (see error)"],
            "reason": Schema.nullable(Schema.string()), "apnsId": Schema.nullable(Schema.string()),
            "latencyMs": Schema.integer, "error": Schema.nullable(Schema.string()),
            "at": Schema.adding(["description": "When it was sent"], to: Schema.timestamp)
        ]
        return Schema.object(properties, required: Array(properties.keys))
    }

    static let deliveryReceipts = Schema.object(
        [
            "delivered": Schema.nullable(Schema.timestamp), "opened": Schema.nullable(Schema.timestamp),
            "dismissed": Schema.nullable(Schema.timestamp)
        ], required: ["delivered", "opened", "dismissed"],
        description: "When the subscriber's device reported each receipt for the message")

    static let deliveryDetail = Schema.object(
        [
            "delivery": Schema.ref("Delivery"), "attempts": Schema.array(Schema.ref("DeliveryAttempt")),
            "receipts": Schema.ref("DeliveryReceipts")
        ], required: ["delivery", "attempts", "receipts"])

    static let preview = Schema.object(
        [
            "payload": Schema.string("The payload's JSON text, byte for byte as it would be sent"),
            "size": Schema.integer, "maxSize": Schema.integer,
            "headers": Schema.map(Schema.string(), description: "apns-* headers (the JWT is added when sending)"),
            "messageId": Schema.uuid
        ], required: ["payload", "size", "maxSize", "headers", "messageId"])
}
