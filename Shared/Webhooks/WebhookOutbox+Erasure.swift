import BuzzKitPostgres
import Foundation

/// Erasure of a subscriber (issue 30): the tenant's webhook events not yet sent, and the messages
/// kept after sending, lose every string equal to one of the person's ids or device tokens (made
/// "" by `bk_erase_strings`). The events stay, so what was announced keeps its shape and count.
extension WebhookOutbox {
    /// Rewrites the tenant's outbox rows and webhook messages that mention one of `needles`;
    /// answers how many rows of each. Scans the tenant's rows (kept for the webhooks' retention).
    public static func eraseStrings(on connection: PostgresConnection, tenantId: UUID, needles: [String])
        async throws -> (outbox: Int, messages: Int)
    {
        let rows = try await connection.query(
            """
            WITH o AS (
                UPDATE webhook_outbox SET data = bk_erase_strings(data::text, $2::text[])::jsonb
                WHERE tenant_id = $1::uuid AND bk_mentions(data::text, $2::text[]) RETURNING 1),
            m AS (
                UPDATE webhook_messages SET data = bk_erase_strings(data::text, $2::text[])::jsonb
                WHERE tenant_id = $1::uuid AND bk_mentions(data::text, $2::text[]) RETURNING 1)
            SELECT (SELECT count(*) FROM o), (SELECT count(*) FROM m)
            """, [tenantId, needles])
        guard let row = rows.first else { return (0, 0) }
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }
}
