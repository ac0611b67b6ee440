import BuzzKitPostgres
import Foundation

/// Erasure of a subscriber from the ledger (issue 30, `DELETE /v1/subscribers/{id}`): the rows stay,
/// so a tenant's counts and a message's totals do not change, but nothing in them names the person.
/// The gateway's erasure runs these inside its own transactions, each with the erasure's counts.
extension Ledger {
    /// What one page of the ledger walk did.
    public struct ErasurePage: Sendable, Equatable {
        /// Deliveries whose subscriber id and device token became `erased`.
        public var deliveries: Int
        /// Stored requests the person alone received, replaced by `erasedPayload` (a request shared
        /// with others is theirs too, and stays).
        public var payloads: Int
        /// Messages that reached or named the person: their id in the target's `to` (and a Live
        /// Activity request's) becomes `erased`; a push to them alone loses what it said
        /// (`personalContent`).
        public var messages: Int
        /// Where the next page starts; nil when this page was the last.
        public var next: (createdAt: Date, id: UUID)?

        public static func == (a: Self, b: Self) -> Bool {
            a.deliveries == b.deliveries && a.payloads == b.payloads && a.messages == b.messages
                && a.next?.createdAt == b.next?.createdAt && a.next?.id == b.next?.id
        }
    }

    /// The members of a push's content that say something to or about its reader, removed from a
    /// message that went to the person alone (its options, such as sound and priority, stay).
    public static let personalContent = [
        "title", "subtitle", "body", "data", "deepLink", "action", "actions", "image", "threadId", "collapseId"
    ]
    static var personalContentSQL: String {
        "'{" + personalContent.joined(separator: ",") + "}'::text[]"
    }

    /// What an erased person's subscriber id and device token become, wherever they are kept.
    public static let erased = "(erased)"

    /// The text a request the person alone received is replaced with.
    public static let erasedPayload = #"{"erased":true}"#

    /// Whether a send still holds the person: a chunk with one of their ids or tokens, or a fan-out
    /// resuming after them. The walk waits until they are recorded (rows written once are then
    /// rewritten once, never raced by a sender writing them).
    public static func erasureBlocked(
        on connection: PostgresConnection, tenantId: UUID, subjectIds: [String], tokens: [String]
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM delivery_chunks
                           WHERE tenant_id = $1::uuid AND (subscriber_ids && $2::text[] OR tokens && $3::text[]))
                OR EXISTS (SELECT 1 FROM messages
                           WHERE status IN ('queued', 'fanning_out') AND tenant_id = $1::uuid
                             AND fanout_after_subscriber = ANY ($2::text[]))
            """, [tenantId, subjectIds, tokens])
        return try rows.first?.decode(Bool.self, at: 0) ?? false
    }

    /// One page of the walk over the tenant's messages created up to `upTo`, in (created_at, id)
    /// order after `after`: `limit` messages, their deliveries read through `deliveries_message_id`
    /// (the table has no index by subscriber, and one would cost every send). One statement.
    public static func erasePage(
        on connection: PostgresConnection, tenantId: UUID, subjectIds: [String], tokens: [String],
        upTo: Date, after: (createdAt: Date, id: UUID)?, limit: Int
    ) async throws -> ErasurePage {
        let needles = subjectIds + tokens
        let rows = try await connection.query(
            """
            WITH page AS (
                SELECT id, message_time, created_at FROM messages
                WHERE tenant_id = $1::uuid AND created_at <= $4::timestamptz
                  AND ($5::timestamptz IS NULL OR (created_at, id) > ($5::timestamptz, $6::uuid))
                ORDER BY created_at, id LIMIT $7),
            theirs AS (
                SELECT d.id, d.message_id, d.message_time, d.payload_id, d.attempts FROM deliveries d
                WHERE (d.message_id, d.message_time) IN (SELECT id, message_time FROM page)
                  AND (d.subscriber_id = ANY ($2::text[]) OR d.device_token = ANY ($3::text[]))),
            requests AS (
                SELECT payload_id AS id, message_time FROM theirs WHERE payload_id IS NOT NULL
                UNION
                SELECT (a->>'p')::uuid, theirs.message_time FROM theirs, json_array_elements(theirs.attempts) AS a
                WHERE theirs.attempts IS NOT NULL AND a->>'p' IS NOT NULL),
            d AS (
                UPDATE deliveries d SET subscriber_id = $8, device_token = $8
                FROM theirs WHERE d.id = theirs.id AND d.message_time = theirs.message_time
                RETURNING d.id),
            p AS (
                UPDATE delivery_payloads p SET payload = $9, headers = (p.headers::jsonb - 'apns-collapse-id')::json
                WHERE (p.id, p.message_time) IN (SELECT id, message_time FROM requests)
                  AND NOT EXISTS (
                      SELECT 1 FROM deliveries o
                      WHERE o.message_id = p.message_id AND o.message_time = p.message_time
                        AND NOT (o.subscriber_id = ANY ($2::text[]) OR o.device_token = ANY ($3::text[]))
                        AND (o.payload_id = p.id OR position(p.id::text IN coalesce(o.attempts::text, '')) > 0))
                RETURNING p.id),
            legacy AS (
                UPDATE delivery_attempt_rows r SET payload = $9, headers = (r.headers::jsonb - 'apns-collapse-id')::json
                WHERE r.delivery_id IN (SELECT id FROM theirs)
                RETURNING 1),
            alone AS (
                SELECT m.id FROM messages m
                WHERE (m.id, m.message_time) IN (SELECT id, message_time FROM page) AND m.kind = 'push'
                  AND CASE WHEN jsonb_typeof(m.target->'to') = 'array'
                           THEN jsonb_array_length(m.target->'to') > 0
                                AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(m.target->'to') AS t(v)
                                                WHERE NOT t.v = ANY ($2::text[]))
                           ELSE false END),
            m AS (
                UPDATE messages m SET target = bk_erase_keys(m.target, '{to}', $10::text[]),
                    content = CASE WHEN m.id IN (SELECT id FROM alone) THEN m.content - \(Self.personalContentSQL)
                                   WHEN m.kind = 'live_activity' THEN bk_erase_keys(m.content, '{to}', $10::text[])
                                   ELSE m.content END,
                    fanout_after_subscriber = CASE WHEN m.fanout_after_subscriber = ANY ($2::text[])
                        THEN NULL ELSE m.fanout_after_subscriber END,
                    fanout_after_token = CASE WHEN m.fanout_after_subscriber = ANY ($2::text[])
                        THEN NULL ELSE m.fanout_after_token END
                WHERE (m.id, m.message_time) IN (SELECT id, message_time FROM page)
                  AND (m.id IN (SELECT message_id FROM theirs) OR m.id IN (SELECT id FROM alone)
                       OR m.target->'to' ?| $2::text[] OR m.target->>'to' = ANY ($2::text[])
                       OR m.fanout_after_subscriber = ANY ($2::text[]))
                RETURNING 1),
            last AS (SELECT created_at, id FROM page ORDER BY created_at DESC, id DESC LIMIT 1)
            SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM p), (SELECT count(*) FROM m),
                   (SELECT count(*) FROM page), (SELECT created_at FROM last), (SELECT id FROM last),
                   (SELECT count(*) FROM legacy)
            """,
            [
                tenantId, subjectIds, tokens, upTo, after?.createdAt, after?.id, limit, Self.erased,
                Self.erasedPayload, needles
            ])
        guard let row = rows.first else { return ErasurePage(deliveries: 0, payloads: 0, messages: 0, next: nil) }
        let walked = try row.decode(Int.self, at: 3)
        var next: (createdAt: Date, id: UUID)?
        if walked >= limit, let at = try row.decode(Date?.self, at: 4), let id = try row.decode(UUID?.self, at: 5) {
            next = (at, id)
        }
        return ErasurePage(
            deliveries: try row.decode(Int.self, at: 0), payloads: try row.decode(Int.self, at: 1),
            messages: try row.decode(Int.self, at: 2), next: next)
    }

    /// Deletes the person's Live Activities and push-to-start tokens (the registry's rows, which
    /// the subscriber's row would also take with it by cascade): their counts.
    public static func eraseLiveActivities(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String
    ) async throws -> (activities: Int, startTokens: Int) {
        let activities = try await connection.execute(
            "DELETE FROM live_activities WHERE tenant_id = $1::uuid AND subscriber_id = $2", [tenantId, subscriberId])
        let startTokens = try await connection.execute(
            "DELETE FROM live_activity_start_tokens WHERE tenant_id = $1::uuid AND subscriber_id = $2",
            [tenantId, subscriberId])
        return (activities, startTokens)
    }
}
