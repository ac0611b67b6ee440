import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// What the producers' seam wrote, for tests of the statements that enqueue webhook events: an
/// endpoint subscribed to some types (written straight into the tables, as the gateway's store
/// would, with a placeholder secret: nothing is sent), and the outbox's rows.
extension MigratedSchema {
    /// An enabled endpoint of `tenant` subscribed to `types` (raw values); answers its id.
    @discardableResult
    public func subscribeWebhooks(tenant: UUID, types: [String]) async throws -> UUID {
        let id = UUID()
        try await postgres.execute(
            """
            INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, secret_sealed)
            VALUES ($1::uuid, $2::uuid, 'https://example.com/hook', $3::text[], '\\x00'::bytea)
            """, [id, tenant, types])
        try await postgres.execute(
            """
            INSERT INTO webhook_subscriptions (tenant_id, event_type, endpoint_id)
            SELECT $1::uuid, unnest($2::text[]), $3::uuid
            """, [tenant, types, id])
        return id
    }

    /// One outbox row: its type, event id, time and data.
    public struct OutboxEvent: Sendable {
        public var type: String
        public var eventId: UUID
        public var occurredAt: Date
        public var data: JSONValue
    }

    /// The outbox's rows (oldest first), of `type` when given. A batch stored as columns has its
    /// data written the way the webhooks service writes it (`WebhookDeliveryBatch`).
    public func outbox(_ type: String? = nil) async throws -> [OutboxEvent] {
        try await postgres.query(
            """
            SELECT event_type, event_id, occurred_at, data, \(WebhookDeliveryBatch.columnList())
            FROM webhook_outbox WHERE $1::text IS NULL OR event_type = $1 ORDER BY seq
            """, [type]
        ).map { row in
            let occurredAt = try row.decode(Date.self, at: 2)
            let data: JSONValue
            if let stored = try row.decode(JSONValue?.self, at: 3) {
                data = stored
            } else {
                let batch = try WebhookDeliveryBatch(row: row, from: 4)
                data = try JSONValue.parse(batch.dataJSON(sentAt: occurredAt))
            }
            return OutboxEvent(
                type: try row.decode(String.self, at: 0), eventId: try row.decode(UUID.self, at: 1),
                occurredAt: occurredAt, data: data)
        }
    }
}
