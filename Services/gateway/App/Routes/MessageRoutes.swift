import BuzzKitContracts
import BuzzKitHTTPServer
import BuzzKitIntake
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitQueries
import BuzzKitWire
import BuzzKitWorkflowRuns
import Foundation

/// Sending push: `POST /v1/messages` stores and queues a message (`MessageIntake`); apns-sender
/// fans it out and writes the delivery ledger, which the GET routes read.
enum MessageRoutes {
    static let deliveryStatuses = DeliveryStatus.allCases.map(\.rawValue)
    static let messageStatuses = MessageStatus.allCases.map(\.rawValue)
    /// `messages.kind`: what the message is and how its `content` reads.
    static let kind = Schema.string(
        "push (content: what POST /v1/messages took); live_activity (content {liveActivity}); a workflow's local "
            + "window as a silent push: local_plan (content {local}: the plan under bk.local) or local_cancel "
            + "(content {cancel: {runId}}: bk.cancel)",
        enumeration: MessageKind.allCases.map(\.rawValue))

    static let accepted = Schema.object([
        "id": Schema.uuid, "status": Schema.string(enumeration: messageStatuses),
        "audienceSize": Schema.nullable(Schema.integer)
    ])
    /// `status`, as the message and the list show it.
    static let status = Schema.string(
        "queued, fanning_out (the audience is being resolved), fanned_out (every delivery exists, some pending), "
            + "completed (every delivery decided: final, see completedAt) or failed (final, see error)",
        enumeration: messageStatuses)
    /// When the message completed (null until then, and for a failed one).
    static let completedAt = Schema.nullable(
        Schema.string("when every delivery was decided (status completed)", format: "date-time"))
    /// Deliveries still pending (queued or sending).
    static let pending: JSONValue = [
        "type": "integer", "minimum": 0,
        "description": "deliveries not decided yet (counts.queued + counts.sending); 0 once completed"
    ]
    static let message = Schema.object([
        "id": Schema.uuid, "status": status, "kind": kind,
        "target": Schema.anyObject, "content": Schema.anyObject,
        "environment": Schema.nullable(Schema.string()), "audienceSize": Schema.nullable(Schema.integer),
        "counts": Schema.anyObject, "pending": pending, "completedAt": completedAt, "receipts": Schema.anyObject,
        "openRate": Schema.nullable(["type": "number"]), "error": Schema.nullable(Schema.anyObject),
        "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp,
        "workflow": Schema.nullable(
            Schema.object(
                [
                    "workflowKey": Schema.string(), "version": Schema.integer, "runId": Schema.uuid,
                    "step": Schema.string()
                ], required: ["workflowKey", "version", "runId", "step"],
                description:
                    "GET /v1/messages/{id}: the workflow run and send step that sent it (null: POST /v1/messages)"))
    ])
    static let delivery = Schema.object([
        "id": Schema.uuid, "messageId": Schema.uuid, "subscriberId": Schema.string(), "deviceToken": Schema.string(),
        "environment": Schema.string(), "status": Schema.string(enumeration: deliveryStatuses),
        "attemptCount": Schema.integer,
        "apnsId": Schema.nullable(Schema.string()), "lastStatus": Schema.nullable(Schema.integer),
        "lastReason": Schema.nullable(Schema.string()), "errorCode": Schema.nullable(Schema.string()),
        "sentAt": Schema.nullable(Schema.timestamp), "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])
    static let attempt = Schema.object([
        "attempt": Schema.integer, "payload": Schema.string(), "headers": Schema.anyObject, "status": Schema.integer,
        "reason": Schema.nullable(Schema.string()), "apnsId": Schema.nullable(Schema.string()),
        "latencyMs": Schema.integer, "error": Schema.nullable(Schema.string()), "at": Schema.timestamp
    ])

    static let idPath: [String: TextRule] = ["id": .uuid]

    /// Rules of the content that JSON Schema cannot state; the document lists them in words
    /// (`x-rules`) and `MessageContent.validate` checks them (422 validation_failed).
    static let contentRules = [
        "exactly one target: to, topic, segment or where (a null member counts as absent)",
        "segment names a saved segment of the tenant",
        "actions (buttons), image and interruptionLevel need a title or body",
        "a silent push (no title, subtitle, body, sound or badge) has priority normal (or none) and says something: data, action or deepLink",
        "button ids are unique within actions; placeholder only with input: true",
        "expiresAt is not in the past",
        "the APNs payload built from the content is at most 4096 bytes"
    ]

    /// `POST /v1/messages`: the target and the content (`MessageContent`).
    static var sendBody: JSONValue { messageBody(targetRequired: true) }

    /// A message body; `targetRequired: false` (the preview) also takes one with no target at all.
    static func messageBody(targetRequired: Bool) -> JSONValue {
        func nonEmpty(_ description: String? = nil) -> JSONValue {
            Schema.nullable(Schema.string(.length(1, Int.max), description))
        }
        let subscriber = Schema.string(FieldRules.identifierRule)
        let button = Schema.object(
            [
                "id": Schema.string(MessageContent.buttonIdRule), "title": Schema.string(.length(1, Int.max)),
                "destructive": Schema.nullable(Schema.boolean), "foreground": Schema.nullable(Schema.boolean),
                "input": Schema.nullable(Schema.boolean), "placeholder": Schema.nullable(["type": "string"])
            ], required: ["id", "title"], additional: true)
        let body = Schema.object([
            "to": Schema.nullable([
                "oneOf": [
                    subscriber,
                    Schema.array(
                        subscriber, minItems: 1,
                        maxItems: MessageIntake.maxSubscribersPerMessage)
                ]
            ]),
            "topic": Schema.nullable(Schema.string(FieldRules.keyRule)),
            "segment": Schema.nullable(Schema.string(FieldRules.keyRule, "A saved segment's key")),
            "where": Schema.nullable(SegmentRoutes.whereSchema),
            "environment": Schema.nullable(Schema.string(enumeration: ["sandbox", "production"])),
            "title": nonEmpty(), "subtitle": nonEmpty(), "body": nonEmpty(),
            "data": Schema.nullable(Schema.anyObject),
            "deepLink": Schema.nullable(Schema.string(MessageContent.deepLinkRule)),
            "action": Schema.nullable(
                Schema.object(
                    [
                        "name": Schema.string(MessageContent.actionNameRule), "data": Schema.nullable(Schema.anyObject)
                    ], required: ["name"], additional: true)),
            "actions": Schema.nullable(Schema.array(button, maxItems: MessageContent.maxButtons)),
            "category": nonEmpty(), "image": Schema.nullable(Schema.string(MessageContent.imageRule)),
            "sound": nonEmpty(),
            "badge": Schema.nullable(["type": "integer", "minimum": 0, "maximum": .int(Int64(Int32.max))]),
            "threadId": nonEmpty(),
            "interruptionLevel": Schema.nullable(
                Schema.string(enumeration: InterruptionLevel.allCases.map(\.rawValue))),
            "priority": Schema.nullable(["enum": ["high", "normal", 10, 5]]),
            "expiresAt": Schema.nullable(
                Schema.string("Not in the past (RFC 3339 with an offset)", format: "date-time")),
            "collapseId": Schema.nullable(Schema.string(MessageContent.collapseIdRule))
        ])
        func only(_ target: String) -> JSONValue {
            var properties: [String: JSONValue] = [:]
            for other in ["to", "topic", "segment", "where"] where other != target {
                properties[other] = ["type": "null"]
            }
            properties[target] = ["not": ["type": "null"]]
            return ["required": [.string(target)], "properties": .object(properties)]
        }
        var targets = [only("to"), only("topic"), only("segment"), only("where")]
        if !targetRequired {
            targets.append([
                "properties": [
                    "to": ["type": "null"], "topic": ["type": "null"], "segment": ["type": "null"],
                    "where": ["type": "null"]
                ]
            ])
        }
        var rules = contentRules
        if !targetRequired {
            rules = rules.map {
                $0.hasPrefix("exactly one target") ? "at most one target: to, topic, segment or where" : $0
            }
        }
        rules.removeAll { $0.hasPrefix("segment names") && !targetRequired }
        return Schema.adding(["oneOf": .array(targets), "x-rules": .array(rules.map(JSONValue.string))], to: body)
    }

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/messages", id: "sendMessage",
                "Send a push to subscribers (to), a topic, a saved segment or an inline expression (where); 202 with the message id",
                access: .tenant(.messagesSend, clientKeys: false), body: sendBody,
                response: accepted, status: 202, handler: { g, c in try await g.sendMessage(c) }),
            listRoute,
            previewRoute,
            GatewayRoute(
                "GET", "/v1/messages/{id}", id: "getMessage",
                "A message with its audience size, delivery counts by status, deliveries still pending and, once every delivery is decided, completedAt",
                access: .tenant(.messagesRead, clientKeys: false), path: idPath, response: message, errors: [.notFound],
                handler: { g, c in try await g.getMessage(c) }),
            GatewayRoute(
                "GET", "/v1/messages/{id}/deliveries", id: "listMessageDeliveries",
                "A message's deliveries in id order (filter with ?status=)",
                access: .tenant(.messagesRead, clientKeys: false), path: idPath,
                query: [
                    QueryParameter(
                        "status", "Only deliveries in this status (empty: every status)",
                        schema: ["enum": .array(([""] + deliveryStatuses).map(JSONValue.string))])
                ],
                response: delivery, paginated: true,
                errors: [.notFound], handler: { g, c in try await g.listMessageDeliveries(c) }),
            GatewayRoute(
                "GET", "/v1/deliveries/{id}", id: "getDelivery",
                "One delivery with every APNs attempt (payload, headers, status, reason, apns-id, latency)",
                access: .tenant(.messagesRead, clientKeys: false), path: idPath,
                response: Schema.object([
                    "delivery": delivery, "attempts": Schema.array(attempt),
                    "receipts": Schema.anyObject
                ]),
                errors: [.notFound], handler: { g, c in try await g.getDelivery(c) })
        ]
    }

    static let deliveryColumns = """
        id, message_id, subscriber_id, device_token, environment, status, attempt_count,
        coalesce(apns_id, id) AS apns_id, last_status, last_reason, error_code, \(isoColumn("sent_at")),
        \(isoColumn("created_at")), \(isoColumn("updated_at"))
        """

    static func deliveryJSON(_ row: PostgresRow) throws -> [String: JSONValue] {
        [
            "id": try row.uuid("id"), "messageId": try row.uuid("message_id"),
            "subscriberId": try row.text("subscriber_id"),
            "deviceToken": try row.text("device_token"), "environment": try row.text("environment"),
            "status": try row.text("status"),
            "attemptCount": .int(Int64(try row.decode(Int.self, named: "attempt_count"))),
            "apnsId": try row.uuid("apns_id"),
            "lastStatus": (try row.decode(Int?.self, named: "last_status")).map { .int(Int64($0)) } ?? .null,
            "lastReason": try row.text("last_reason"), "errorCode": try row.text("error_code"),
            "sentAt": try row.text("sent_at"), "createdAt": try row.text("created_at"),
            "updatedAt": try row.text("updated_at")
        ]
    }
}

extension Gateway {
    func sendMessage(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let body = try context.request.jsonBody()
        let message = try await messageIntake.prepare(tenantId: tenant, json: body)
        let accepted = try await messageWrites.submit(key: message.id, message)
        return .json(accepted.jsonValue, status: 202)
    }

    func getMessage(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try Gateway.uuidParameter(context, "id", notFound: .notFound("message"))
        let rows = try await postgres.query(
            """
            SELECT id, status, kind, target, content, environment, audience_size, error_code, error_message,
                   \(isoColumn("created_at")), \(isoColumn("updated_at")), \(isoColumn("completed_at")),
                   \(LedgerReads.countsSQL(message: "$1::uuid")) AS counts,
                   (SELECT count(DISTINCT subscriber_id) FROM deliveries
                      WHERE message_id = $1::uuid AND status = 'sent') AS sent_subscribers,
                   workflow_key, workflow_version, workflow_run_id, workflow_step
            FROM messages WHERE id = $1::uuid AND tenant_id = $2::uuid
            """, [id, tenant])
        guard let row = rows.first else { throw APIError.notFound("message") }
        // Receipts are the devices' view (distinct subscribers), kept by the ingest service.
        let receipts = try await ReceiptQueries.counts(
            postgres: postgres, tenantId: tenant, messageId: id.lowercasedText)
        let sentSubscribers = try row.decode(Int.self, named: "sent_subscribers")
        var json = try MessageRoutes.messageJSON(row)
        json["receipts"] = receipts.jsonValue
        json["openRate"] = receipts.openRate(audience: sentSubscribers).map(JSONValue.double) ?? .null
        json["workflow"] = .null
        if let key = try row.decode(String?.self, named: "workflow_key"),
            let version = try row.decode(Int?.self, named: "workflow_version"),
            let run = try row.decode(UUID?.self, named: "workflow_run_id"),
            let step = try row.decode(String?.self, named: "workflow_step")
        {
            json["workflow"] =
                WorkflowRunStore.MessageOrigin(workflowKey: key, version: version, runId: run, step: step).jsonValue
        }
        return .json(.object(json))
    }

    func listMessageDeliveries(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try Gateway.uuidParameter(context, "id", notFound: .notFound("message"))
        let page = try Page(context.request)
        var status: DeliveryStatus?
        if let raw = context.request.query["status"], !raw.isEmpty {
            guard let known = DeliveryStatus(rawValue: raw) else {
                try Validator.throwIfAny([
                    ValidationIssue(
                        path: "status",
                        message: "must be one of: "
                            + MessageRoutes.deliveryStatuses.joined(separator: ", "))
                ])
                return .json(nil)
            }
            status = known
        }
        var after: UUID?
        if let text = page.after {
            guard let value = UUID(uuidString: text) else {
                try Validator.throwIfAny([ValidationIssue(path: "cursor", message: "is not a cursor this API returned")]
                )
                return .json(nil)
            }
            after = value
        }
        let message = try await postgres.query(
            "SELECT 1 FROM messages WHERE id = $1::uuid AND tenant_id = $2::uuid", [id, tenant])
        guard !message.isEmpty else { throw APIError.notFound("message") }
        let rows = try await postgres.query(
            """
            SELECT \(MessageRoutes.deliveryColumns) FROM (\(LedgerReads.deliveriesSQL)) d
            WHERE ($3::text IS NULL OR status = $3) AND ($4::uuid IS NULL OR id > $4::uuid)
            ORDER BY id LIMIT $5
            """, [id, tenant, status?.rawValue, after, page.limit + 1])
        let items = try rows.map(MessageRoutes.deliveryJSON)
        return page.response(items) { $0["id"]?.stringValue ?? "" }
    }

    func getDelivery(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try Gateway.uuidParameter(context, "id", notFound: .notFound("delivery"))
        var rows = try await postgres.query(
            "SELECT \(MessageRoutes.deliveryColumns) FROM deliveries WHERE id = $1::uuid AND tenant_id = $2::uuid",
            [id, tenant])
        if rows.isEmpty {
            // Not sent yet: a device of a pending chunk (its id is bk_delivery_id of message and token).
            rows = try await postgres.query(
                """
                SELECT \(MessageRoutes.deliveryColumns) FROM (\(LedgerReads.pendingDeliverySQL)) d
                """, [id, tenant])
        }
        guard let row = rows.first else { throw APIError.notFound("delivery") }
        let attempts = try await postgres.query(
            """
            SELECT attempt, payload, headers, status, reason, apns_id, latency_ms, error, \(isoColumn("at"))
            FROM delivery_attempts WHERE delivery_id = $1::uuid ORDER BY attempt
            """, [id])
        let list: [JSONValue] = try attempts.map { a in
            [
                "attempt": .int(Int64(try a.decode(Int.self, named: "attempt"))), "payload": try a.text("payload"),
                "headers": try a.json("headers"), "status": .int(Int64(try a.decode(Int.self, named: "status"))),
                "reason": try a.text("reason"), "apnsId": try a.text("apns_id"),
                "latencyMs": .int(Int64(try a.decode(Int.self, named: "latency_ms"))), "error": try a.text("error"),
                "at": try a.text("at")
            ]
        }
        // The device's view next to the server's: the receipts its subscriber reported for this message.
        let receipts = try await postgres.query(
            """
            SELECT r.kind, \(isoColumn("r.occurred_at", as: "at")) FROM message_receipts r
            JOIN deliveries d ON d.tenant_id = r.tenant_id AND d.message_id::text = lower(r.message_id)
                             AND d.subscriber_id = r.subscriber_id
            WHERE d.id = $1::uuid AND d.tenant_id = $2::uuid ORDER BY r.occurred_at
            """, [id, tenant])
        var receiptTimes: [String: JSONValue] = ["delivered": .null, "opened": .null, "dismissed": .null]
        for receipt in receipts { receiptTimes[try receipt.text("kind").stringValue ?? ""] = try receipt.text("at") }
        return .json([
            "delivery": .object(try MessageRoutes.deliveryJSON(row)), "attempts": .array(list),
            "receipts": .object(receiptTimes)
        ])
    }
}
