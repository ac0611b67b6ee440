import BuzzKitContracts
import BuzzKitHTTPServer
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitQueries
import BuzzKitWire
import Foundation

/// `GET /v1/messages`: a tenant's messages newest first, keyset-paged on `(createdAt, id)`
/// (`messages_tenant_recent`), each with its delivery counts by status and its receipts, so a
/// list shows where every send stands without one call per message.
extension MessageRoutes {
    static let statusParameter = QueryParameter(
        "status", "Only messages in this status (empty: every status)",
        schema: ["enum": .array(([""] + messageStatuses).map(JSONValue.string))])

    static var listRoute: GatewayRoute {
        GatewayRoute(
            "GET", "/v1/messages", id: "listMessages",
            "List messages newest first, each with its delivery counts by status, deliveries still pending, completedAt and receipts",
            access: .tenant(.messagesRead, clientKeys: false), query: [statusParameter],
            response: Schema.ref("MessageSummary"), paginated: true, handler: { g, c in try await g.listMessages(c) })
    }

    /// The cursor's key: the last row's `created_at` (ISO 8601 text as Postgres wrote it) and id.
    static func listKey(_ item: [String: JSONValue]) -> String {
        (item["createdAt"]?.stringValue ?? "") + "|" + (item["id"]?.stringValue ?? "")
    }

    /// Parses `listKey` back; nil when the cursor is not one this route made.
    static func parseListKey(_ key: String) -> (createdAt: String, id: UUID)? {
        guard let bar = key.lastIndex(of: "|"), let id = UUID(uuidText: String(key[key.index(after: bar)...])) else {
            return nil
        }
        let createdAt = String(key[..<bar])
        // Only a timestamp Postgres will read back (a bad one would fail the cast: a 500).
        guard createdAt.utf8.count <= 40, isTimestamp(createdAt) else { return nil }
        return (createdAt, id)
    }
}

extension MessageRoutes {
    /// Whether `text` is an ISO 8601 date-time with an offset, as `to_json(timestamptz)` writes it.
    static func isTimestamp(_ text: String) -> Bool {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if formatter.date(from: text) != nil { return true }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text) != nil
    }
}

extension Gateway {
    func listMessages(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let page = try Page(context.request)
        var issues: [ValidationIssue] = []
        var after: (createdAt: String, id: UUID)?
        if let key = page.after {
            after = MessageRoutes.parseListKey(key)
            if after == nil {
                issues.append(ValidationIssue(path: "cursor", message: "is not a cursor this API returned"))
            }
        }
        var status: MessageStatus?
        if let raw = context.request.query["status"], !raw.isEmpty {
            status = MessageStatus(rawValue: raw)
            if status == nil {
                issues.append(
                    ValidationIssue(
                        path: "status",
                        message: "must be one of: "
                            + MessageRoutes.messageStatuses.joined(separator: ", ")))
            }
        }
        try Validator.throwIfAny(issues)
        let rows = try await postgres.query(
            """
            SELECT m.id, m.status, m.kind, m.target, m.content, m.environment, m.audience_size, m.error_code, m.error_message,
                   \(isoColumn("m.created_at", as: "created_at")), \(isoColumn("m.updated_at", as: "updated_at")),
                   \(isoColumn("m.completed_at", as: "completed_at")),
                   \(LedgerReads.countsSQL(message: "m.id", messageTime: "m.message_time")) AS counts,
                   coalesce(r.delivered, 0) AS delivered, coalesce(r.opened, 0) AS opened, coalesce(r.dismissed, 0) AS dismissed
            FROM messages m
            LEFT JOIN message_receipt_counts r ON r.tenant_id = m.tenant_id AND r.message_id = m.id::text
            WHERE m.tenant_id = $1::uuid AND ($2::text IS NULL OR m.status = $2)
              AND ($3::timestamptz IS NULL OR m.created_at < $3::timestamptz
                   OR (m.created_at = $3::timestamptz AND m.id < $4::uuid))
              AND ($3::timestamptz IS NULL OR m.created_at <= $3::timestamptz)
            ORDER BY m.created_at DESC, m.id DESC LIMIT $5
            """, [tenant, status?.rawValue, after?.createdAt, after?.id, page.limit + 1])
        let items = try rows.map { row -> [String: JSONValue] in
            var json = try MessageRoutes.messageJSON(row)
            json["receipts"] =
                ReceiptCounts(
                    delivered: try row.decode(Int.self, named: "delivered"),
                    opened: try row.decode(Int.self, named: "opened"),
                    dismissed: try row.decode(Int.self, named: "dismissed")
                ).jsonValue
            return json
        }
        return page.response(items, key: MessageRoutes.listKey)
    }
}

extension MessageRoutes {
    /// The members a message and a list item share; `counts` has every delivery status (0 when
    /// none), `pending` the deliveries not decided yet.
    static func messageJSON(_ row: PostgresRow) throws -> [String: JSONValue] {
        var counts: [String: JSONValue] = [:]
        let found = try row.json("counts")
        for status in deliveryStatuses { counts[status] = found[status] ?? .int(0) }
        let pending = DeliveryStatus.allCases.filter { !$0.isDecided }.reduce(Int64(0)) {
            $0 + (counts[$1.rawValue]?.intValue ?? 0)
        }
        let errorCode = try row.text("error_code")
        return [
            "id": try row.uuid("id"), "status": try row.text("status"), "kind": try row.text("kind"),
            "target": try row.json("target"),
            "content": try row.json("content"), "environment": try row.text("environment"),
            "audienceSize": (try row.decode(Int?.self, named: "audience_size")).map { .int(Int64($0)) } ?? .null,
            "counts": .object(counts), "pending": .int(pending), "completedAt": try row.text("completed_at"),
            "error": errorCode.isNull ? .null : ["code": errorCode, "message": try row.text("error_message")],
            "createdAt": try row.text("created_at"), "updatedAt": try row.text("updated_at")
        ]
    }
}
