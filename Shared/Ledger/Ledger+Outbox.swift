import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The outbox rule's repair side (apns-sender's `OutboxSweeper`).
extension Ledger {
    /// A message whose `bk:messages` entry may have been lost.
    public struct UnfinishedMessage: Sendable {
        public var id: UUID
        public var tenantId: UUID
        public var target: MessageTarget?
        public var status: MessageStatus?
    }

    /// Takes up to `limit` messages untouched for `olderThan` in `queued` or `fanning_out`,
    /// whatever their age (a message accepted is sent however late its sender comes back, or a
    /// backup is restored; one whose `expiresAt` passed ends its deliveries `expired`), touches
    /// them in the same statement (`FOR UPDATE SKIP LOCKED`, so concurrent replicas never pick the
    /// same one) and answers them, to be put on their stream again. Read through
    /// `messages_unfinished`, which holds only unfinished messages.
    public func touchUnfinished(olderThan: Duration, limit: Int = 500) async throws -> [UnfinishedMessage] {
        let rows = try await postgres.query(
            """
            UPDATE messages m SET updated_at = now()
            FROM (SELECT id, message_time FROM messages
                  WHERE status IN ('queued', 'fanning_out') AND updated_at < now() - make_interval(secs => $1)
                  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED) stale
            WHERE m.id = stale.id AND m.message_time = stale.message_time
            RETURNING m.id, m.tenant_id, m.target, m.status
            """, [olderThan.sqlSeconds, limit])
        return try rows.map { row in
            UnfinishedMessage(
                id: try row.decode(UUID.self, at: 0), tenantId: try row.decode(UUID.self, at: 1),
                target: MessageTarget(json: try row.decode(JSONValue.self, at: 2)),
                status: MessageStatus(rawValue: try row.decode(String.self, at: 3)))
        }
    }
}
