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
            m AS (
                UPDATE webhook_messages SET data = bk_erase_keys(data, $3::text[], $2::text[])
                WHERE tenant_id = $1::uuid AND bk_mentions(data::text, $2::text[])
                  AND bk_erase_keys(data, $3::text[], $2::text[]) <> data
                RETURNING 1)
            SELECT (SELECT count(*) FROM o), (SELECT count(*) FROM m)
            """, [tenantId, needles, personKeys])
        guard let row = rows.first else { return (0, 0) }
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }
}
