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
    static let idPath: [String: TextRule] = ["id": .uuid]

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/messages", id: "sendMessage",
                "Send a push to subscribers (to), a topic, a saved segment or an inline expression (where); 202 with the message id",
                access: .tenant(.messagesSend, clientKeys: false), body: Schema.ref("SendMessageRequest"),
                response: Schema.ref("MessageAccepted"), status: 202, errors: [.notFound],
                handler: { g, c in try await g.sendMessage(c) },
                deferred: { g, c, done in g.sendMessage(c, done) }),
            listRoute,
            previewRoute,
            GatewayRoute(
                "GET", "/v1/messages/{id}", id: "getMessage",
                "A message with its audience size, delivery counts by status, deliveries still pending and, once every delivery is decided, completedAt",
                access: .tenant(.messagesRead, clientKeys: false), path: idPath, response: Schema.ref("Message"),
                errors: [.notFound],
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
                response: Schema.ref("Delivery"), paginated: true,
                errors: [.notFound], handler: { g, c in try await g.listMessageDeliveries(c) }),
            GatewayRoute(
                "GET", "/v1/deliveries/{id}", id: "getDelivery",
                "One delivery with every APNs attempt (payload, headers, status, reason, apns-id, latency)",
                access: .tenant(.messagesRead, clientKeys: false), path: idPath,
                response: Schema.ref("DeliveryDetail"),
                errors: [.notFound], handler: { g, c in try await g.getDelivery(c) })
        ]
    }

    static let deliveryColumns = """
        id, message_id, subscriber_id, device_token, environment, status, attempt_count,
        CASE WHEN status IN ('\(DeliveryStatus.suppressed.rawValue)', '\(DeliveryStatus.expired.rawValue)') THEN NULL
             ELSE coalesce(apns_id, id) END AS apns_id, last_status, last_reason, error_code, \(isoColumn("sent_at")),
        \(isoColumn("created_at")), \(isoColumn("updated_at")), suppressed_reason
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
            "updatedAt": try row.text("updated_at"), "suppressedReason": try row.text("suppressed_reason")
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

    /// The same without a task of its own: validated on the network thread, the request joins a
    /// write batch and is answered from the thread that finished it (`MessageIntake.store`'s
    /// callback). A message naming a segment or a category reads them first, as a task.
    func sendMessage(_ context: RequestContext, _ done: @escaping @Sendable (Result<Response, any Error>) -> Void) {
        let message: MessageIntake.Prepared
        do {
            let tenant = try context.tenant
            let request = try MessageIntake.validate(try context.request.jsonBody())
            guard let prepared = MessageIntake.prepared(tenantId: tenant, request: request) else {
                Task { [self] in
                    do {
                        let message = try await messageIntake.resolve(tenantId: tenant, request: request)
                        let accepted = try await messageWrites.submit(key: message.id, message)
                        done(.success(.json(accepted.jsonValue, status: 202)))
                    } catch {
                        done(.failure(error))
                    }
                }
                return
            }
            message = prepared
        } catch {
            return done(.failure(error))
        }
        messageWrites.submit(key: message.id, message) { result in
            done(result.map { .json($0.jsonValue, status: 202) })
        }
    }

    func getMessage(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try Gateway.uuidParameter(context, "id", notFound: .notFound("message"))
        let rows = try await postgres.query(
            """
            SELECT id, status, kind, target, content, environment, audience_size, error_code, error_message,
                   \(isoColumn("created_at")), \(isoColumn("updated_at")), \(isoColumn("completed_at")),
                   \(LedgerReads.countsSQL(message: "$1::uuid", messageTime: "messages.message_time")) AS counts,
                   (SELECT count(DISTINCT subscriber_id) FROM deliveries
                      WHERE message_id = $1::uuid AND message_time = messages.message_time AND status = 'sent')
                       AS sent_subscribers,
                   workflow_key, workflow_version, workflow_run_id, workflow_step
            FROM messages
            WHERE id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid")) AND tenant_id = $2::uuid
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
            """
            SELECT 1 FROM messages
            WHERE id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid")) AND tenant_id = $2::uuid
            """, [id, tenant])
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
