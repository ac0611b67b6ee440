import BuzzKitPostgres
import Foundation

/// Erasure of a subscriber (issue 30): in the tenant's webhook events not yet sent, and the messages
/// kept after sending, the person's ids and device tokens become "(erased)" where an event names a
/// subscriber or a token (`keys`, through `bk_erase_keys`). The events stay, so what was announced
/// keeps its shape and count.
extension WebhookOutbox {
    /// The members of an event's data that name a subscriber or a device (at any depth, so the
    /// deliveries of a batch too).
    public static let personKeys = ["subscriberId", "deviceToken", "token", "anonymousId", "to"]

    /// Rewrites the tenant's outbox rows and webhook messages that mention one of `needles`;
    /// answers how many rows of each. Scans the tenant's rows (kept for the webhooks' retention).
    /// A `delivery.sent` batch stored as columns (`WebhookDeliveryBatch`) has its subscriber ids
    /// and device tokens replaced element by element; a row holds data or a batch, never both, so
    /// each row is rewritten by one of the two updates.
    public static func eraseStrings(on connection: PostgresConnection, tenantId: UUID, needles: [String])
        async throws -> (outbox: Int, messages: Int)
    {
        let rows = try await connection.query(
            """
            WITH o AS (
                UPDATE webhook_outbox SET data = bk_erase_keys(data, $3::text[], $2::text[])
                WHERE tenant_id = $1::uuid AND bk_mentions(data::text, $2::text[])
                  AND bk_erase_keys(data, $3::text[], $2::text[]) <> data
                RETURNING 1),
            ob AS (\(eraseBatches("webhook_outbox"))),
            m AS (
                UPDATE webhook_messages SET data = bk_erase_keys(data, $3::text[], $2::text[])
                WHERE tenant_id = $1::uuid AND bk_mentions(data::text, $2::text[])
                  AND bk_erase_keys(data, $3::text[], $2::text[]) <> data
                RETURNING 1),
            mb AS (\(eraseBatches("webhook_messages")))
            SELECT (SELECT count(*) FROM o) + (SELECT count(*) FROM ob), (SELECT count(*) FROM m) + (SELECT count(*) FROM mb)
            """, [tenantId, needles, personKeys])
        guard let row = rows.first else { return (0, 0) }
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }

    /// The UPDATE of `table`'s batches of tenant $1 that hold one of $2 as a subscriber id or a
    /// device token: those elements become "(erased)", in place.
    private static func eraseBatches(_ table: String) -> String {
        func erased(_ column: String) -> String {
            """
            (SELECT array_agg(CASE WHEN x = ANY ($2::text[]) THEN '(erased)' ELSE x END ORDER BY n)
             FROM unnest(\(column)) WITH ORDINALITY AS u(x, n))
            """
        }
        return """
            UPDATE \(table) SET batch_subscriber_ids = \(erased("batch_subscriber_ids")),
                batch_device_tokens = \(erased("batch_device_tokens"))
            WHERE tenant_id = $1::uuid
              AND (batch_subscriber_ids && $2::text[] OR batch_device_tokens && $2::text[])
            RETURNING 1
            """
    }
}
