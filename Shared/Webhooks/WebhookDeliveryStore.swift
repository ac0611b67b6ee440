import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// A message a replica claimed to send: what to send, where, with which secrets.
public struct ClaimedWebhookMessage: Sendable {
    public var endpointId: UUID
    /// The `webhook-id`.
    public var id: UUID
    public var tenantId: UUID
    public var eventType: String
    public var occurredAt: Date
    /// The body's `data`: the stored jsonb text, or written from a batch's columns
    /// (`WebhookDeliveryBatch`); deterministic either way, so every attempt sends the same bytes.
    public var dataJSON: String
    /// Attempts already made in this round.
    public var attempts: Int
    /// This claim's token: the outcome is recorded only while it is still the message's claim.
    public var claim: UUID
    public var url: String
    public var secretSealed: [UInt8]
    /// While a rotation's overlap lasts: the previous secret, which signs too.
    public var previousSecretSealed: [UInt8]?
    /// Set when the message was claimed before by a replica that never recorded its answer (it
    /// stopped mid-send): that replica's name.
    public var lostWith: String?
}

/// What one attempt came to, for `WebhookDeliveryStore.record`.
public struct WebhookAttemptOutcome: Sendable {
    public enum Kind: String, Sendable {
        /// A 2xx: the message is delivered.
        case delivered
        /// Another attempt is due at `nextAttemptAt`.
        case retrying
        /// The schedule is exhausted: the message is failed (a replay sends it again).
        case failed
        /// Not an attempt of this replica: the answer of an earlier claim was lost (its replica
        /// stopped). Recorded as an attempt; the message itself is left to this claim's outcome.
        case lost
    }

    public var endpointId: UUID
    public var messageId: UUID
    public var claim: UUID
    public var eventType: String
    public var kind: Kind
    /// The attempt's number in its round (1-based).
    public var attempt: Int
    public var attemptedAt: Date
    public var nextAttemptAt: Date?
    public var httpStatus: Int?
    public var latencyMs: Int?
    /// The first 1 kB of the answer's body.
    public var response: String?
    public var error: String?

    public init(
        endpointId: UUID, messageId: UUID, claim: UUID, eventType: String, kind: Kind, attempt: Int,
        attemptedAt: Date, nextAttemptAt: Date? = nil, httpStatus: Int? = nil, latencyMs: Int? = nil,
        response: String? = nil, error: String? = nil
    ) {
        self.endpointId = endpointId
        self.messageId = messageId
        self.claim = claim
        self.eventType = eventType
        self.kind = kind
        self.attempt = attempt
        self.attemptedAt = attemptedAt
        self.nextAttemptAt = nextAttemptAt
        self.httpStatus = httpStatus
        self.latencyMs = latencyMs
        self.response = response
        self.error = error
    }
}

/// The webhooks service's statements (migration 0020): make messages from the outbox, claim due
/// messages, record what their attempts came to, disable endpoints failing too long and drop
/// what is past retention.
///
/// What each leaves behind if the process dies there: `form` is one statement (the outbox rows
/// and the messages made of them commit together, or neither). A `claim` commits the lease: a
/// replica that dies before `record` leaves the message due again when the lease ends, and the
/// next claim records the lost attempt and sends it again under the same `webhook-id`. `record`
/// is one statement, applied only where the claim is still the message's own (a replica whose
/// lease ran out and was overtaken records its attempt but changes nothing).
public enum WebhookDeliveryStore {
    /// What one `form` took.
    public struct Formed: Sendable, Hashable {
        /// Events taken from the outbox (a batch row counts its items).
        public var events: Int
        /// The statement stopped at its bounds: there may be more to take at once.
        public var more: Bool
    }

    /// Turns outbox rows (oldest first, rows other replicas hold skipped) into messages: one per
    /// event; for batched types, a row the producer batched already (the batch's columns,
    /// `WebhookOutbox.insertBatchesSQL`, or `{"deliveries": [...]}` from builds before migration
    /// 0030) is one message as it is, and single items (those builds' too) are made one message per
    /// up to `batchLimit` of an endpoint and type (a new id). Rows of deleted endpoints are dropped.
    ///
    /// Bounded twice: at most `limit` rows, and rows only while their stored size adds up to
    /// `limit` × `bytesPerEvent` (about what `limit` single events weigh; a batch of 100
    /// deliveries, compressed, weighs about 25), always at least one. The size is read from the
    /// rows' headers (`pg_column_size`), not from their data.
    @discardableResult
    public static func form(
        on postgres: PostgresClient, limit: Int, batchLimit: Int = WebhookEventType.batchLimit,
        bytesPerEvent: Int = 300
    ) async throws -> Formed {
        let batched = WebhookEventType.allCases.filter(\.isBatched).map(\.rawValue)
        let rows = try await postgres.query(
            """
            WITH candidates AS MATERIALIZED (
                SELECT seq, coalesce(pg_column_size(data), 0) + coalesce(\(batchSize), 0) AS size
                FROM webhook_outbox ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED
            ), chosen AS MATERIALIZED (
                SELECT seq FROM (SELECT seq, sum(size) OVER (ORDER BY seq) AS upto FROM candidates) c
                WHERE upto <= $4 OR seq = (SELECT min(seq) FROM candidates)
            ), taken AS (
                DELETE FROM webhook_outbox WHERE seq IN (SELECT seq FROM chosen)
                RETURNING seq, endpoint_id, tenant_id, event_id, event_type, occurred_at, data, \(batchColumns),
                          data IS NOT NULL AND event_type = ANY ($2::text[]) AND NOT (data ? $5::text) AS item
            ), live AS (
                SELECT t.*, e.enabled,
                       CASE WHEN t.item
                            THEN (row_number() OVER (PARTITION BY t.endpoint_id, t.event_type, t.item ORDER BY t.seq) - 1) / $3
                       END AS batch
                FROM taken t JOIN webhook_endpoints e ON e.id = t.endpoint_id
            ), made AS (
                INSERT INTO webhook_messages (endpoint_id, id, tenant_id, event_type, occurred_at, data, \(batchColumns),
                                              next_attempt_at)
                SELECT endpoint_id, event_id, tenant_id, event_type, occurred_at, data, \(batchColumns),
                       CASE WHEN enabled THEN now() END
                FROM live WHERE batch IS NULL
                UNION ALL
                SELECT endpoint_id, gen_random_uuid(), tenant_id, event_type, max(occurred_at),
                       jsonb_build_object($5::text, jsonb_agg(data ORDER BY seq)), \(noBatch),
                       CASE WHEN bool_and(enabled) THEN now() END
                FROM live WHERE batch IS NOT NULL GROUP BY endpoint_id, tenant_id, event_type, batch
                ON CONFLICT DO NOTHING
                RETURNING 1
            )
            SELECT (SELECT coalesce(sum(CASE WHEN batch_delivery_ids IS NOT NULL THEN cardinality(batch_delivery_ids)
                                             WHEN event_type = ANY ($2::text[]) AND NOT item
                                             THEN jsonb_array_length(data->$5::text) ELSE 1 END), 0)::int FROM taken),
                   (SELECT count(*) FROM candidates) = $1 OR (SELECT count(*) FROM chosen) < (SELECT count(*) FROM candidates),
                   (SELECT count(*) FROM made)
            """, [limit, batched, batchLimit, limit * bytesPerEvent, WebhookEventType.batchMember])
        guard let row = rows.first else { return Formed(events: 0, more: false) }
        return Formed(events: try row.decode(Int.self, at: 0), more: try row.decode(Bool.self, at: 1))
    }

    /// Claims up to `limit` due messages (oldest due first; rows another replica holds, and
    /// endpoints in `excluding`, skipped) for `lease`: they are due again when it ends unless
    /// recorded before.
    public static func claim(
        on postgres: PostgresClient, limit: Int, replica: String, lease: Duration, excluding: [UUID] = []
    ) async throws -> [ClaimedWebhookMessage] {
        let rows = try await postgres.query(
            """
            WITH due AS (
                SELECT m.endpoint_id, m.id, CASE WHEN m.claim IS NOT NULL THEN coalesce(m.claimed_by, '?') END AS lost_with
                FROM webhook_messages m
                WHERE m.next_attempt_at <= now() AND NOT (m.endpoint_id = ANY ($3::uuid[]))
                  AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = m.endpoint_id AND e.enabled)
                ORDER BY m.next_attempt_at LIMIT $1 FOR UPDATE OF m SKIP LOCKED
            )
            UPDATE webhook_messages m SET claim = gen_random_uuid(), claimed_by = $2, claimed_at = now(),
                next_attempt_at = now() + $4::int8 * interval '1 millisecond'
            FROM due JOIN webhook_endpoints e ON e.id = due.endpoint_id
            WHERE m.endpoint_id = due.endpoint_id AND m.id = due.id
            RETURNING m.endpoint_id, m.id, m.tenant_id, m.event_type, m.occurred_at, m.data::text, m.attempts, m.claim,
                      e.url, e.secret_sealed,
                      CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret_sealed END, due.lost_with,
                      \(WebhookDeliveryBatch.columnList("m"))
            """, [limit, replica, excluding, lease.milliseconds])
        return try rows.map { row in
            let occurredAt = try row.decode(Date.self, at: 4)
            let stored = try row.decode(String?.self, at: 5)
            return ClaimedWebhookMessage(
                endpointId: try row.decode(UUID.self, at: 0), id: try row.decode(UUID.self, at: 1),
                tenantId: try row.decode(UUID.self, at: 2), eventType: try row.decode(String.self, at: 3),
                occurredAt: occurredAt,
                dataJSON: try stored ?? WebhookDeliveryBatch(row: row, from: 12).dataJSON(sentAt: occurredAt),
                attempts: try row.decode(Int.self, at: 6), claim: try row.decode(UUID.self, at: 7),
                url: try row.decode(String.self, at: 8), secretSealed: Array(try row.decode(Data.self, at: 9)),
                previousSecretSealed: try row.decode(Data?.self, at: 10).map { Array($0) },
                lostWith: try row.decode(String?.self, at: 11))
        }
    }

    /// Records attempts in one statement: the attempts' rows, each message's new state (where its
    /// claim is still the one that sent it; a disabled endpoint's retry waits, paused), and each
    /// endpoint's health (`failing_since` set by a failure, cleared by a success).
    public static func record(on postgres: PostgresClient, _ outcomes: [WebhookAttemptOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        try await postgres.execute(
            """
            WITH r AS (
                SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::int[],
                                     $7::timestamptz[], $8::timestamptz[], $9::int[], $10::int[], $11::text[], $12::text[])
                    AS r(endpoint_id, id, claim, event_type, outcome, attempt, attempted_at, next_at, http_status,
                         latency, response, error)
                WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = r.endpoint_id)
            ), m AS (
                UPDATE webhook_messages m SET
                    status = CASE r.outcome WHEN 'delivered' THEN 'delivered' WHEN 'failed' THEN 'failed' ELSE 'pending' END,
                    attempts = r.attempt,
                    next_attempt_at = CASE WHEN r.outcome = 'retrying' AND e.enabled THEN r.next_at END,
                    claim = NULL, claimed_by = NULL, claimed_at = NULL, last_status = r.http_status, last_error = r.error,
                    delivered_at = CASE WHEN r.outcome = 'delivered' THEN r.attempted_at ELSE m.delivered_at END
                FROM r JOIN webhook_endpoints e ON e.id = r.endpoint_id
                WHERE r.outcome <> 'lost' AND m.endpoint_id = r.endpoint_id AND m.id = r.id AND m.claim = r.claim
                RETURNING m.id
            ), a AS (
                INSERT INTO webhook_attempts (endpoint_id, message_id, event_type, attempted_at, outcome, http_status,
                                              latency_ms, response, error, next_attempt_at, attempt)
                SELECT endpoint_id, id, event_type, attempted_at, outcome, http_status, latency, response, error,
                       next_at, attempt
                FROM r ORDER BY attempted_at, outcome <> 'lost'
            ), health AS (
                SELECT endpoint_id,
                       max(attempted_at) FILTER (WHERE outcome = 'delivered') AS last_success,
                       max(attempted_at) FILTER (WHERE outcome IN ('retrying', 'failed')) AS last_failure,
                       min(attempted_at) FILTER (WHERE outcome IN ('retrying', 'failed')) AS first_failure
                FROM r WHERE outcome <> 'lost' GROUP BY endpoint_id
            )
            UPDATE webhook_endpoints e SET
                last_success_at = greatest(e.last_success_at, h.last_success),
                last_failure_at = greatest(e.last_failure_at, h.last_failure),
                failing_since = CASE
                    WHEN h.last_failure IS NULL THEN NULL
                    WHEN h.last_success IS NOT NULL THEN
                        CASE WHEN h.last_success >= h.last_failure THEN NULL ELSE h.last_failure END
                    ELSE coalesce(e.failing_since, h.first_failure) END
            FROM health h WHERE e.id = h.endpoint_id
            """,
            [
                outcomes.map(\.endpointId), outcomes.map(\.messageId), outcomes.map(\.claim), outcomes.map(\.eventType),
                outcomes.map(\.kind.rawValue), outcomes.map(\.attempt), outcomes.map(\.attemptedAt),
                outcomes.map(\.nextAttemptAt), outcomes.map(\.httpStatus), outcomes.map(\.latencyMs),
                outcomes.map(\.response), outcomes.map(\.error)
            ])
    }

    /// Disables every enabled endpoint whose attempts have all failed for longer than `after`:
    /// its subscriptions go (no new events), its pending messages wait, and a `webhook.disabled`
    /// attempt records why. Answers the endpoints disabled.
    public static func disableFailing(on postgres: PostgresClient, after: Duration) async throws -> [UUID] {
        try await postgres.withTransaction { tx in
            let rows = try await tx.query(
                """
                UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing', disabled_at = now(), updated_at = now()
                WHERE enabled AND failing_since < now() - $1::int8 * interval '1 millisecond'
                RETURNING id, failing_since
                """, [after.milliseconds])
            let ids = try rows.map { try $0.decode(UUID.self, at: 0) }
            guard !ids.isEmpty else { return [] }
            try await tx.execute("DELETE FROM webhook_subscriptions WHERE endpoint_id = ANY ($1::uuid[])", [ids])
            try await tx.execute(
                """
                UPDATE webhook_messages SET next_attempt_at = NULL
                WHERE endpoint_id = ANY ($1::uuid[]) AND status = 'pending' AND claim IS NULL
                """, [ids])
            try await tx.execute(
                """
                INSERT INTO webhook_attempts (endpoint_id, event_type, attempted_at, outcome, error)
                SELECT id, '\(WebhookEventType.disabledAttempt)', now(), 'disabled',
                       'disabled: every attempt has failed since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                       || ' (longer than ' || $2 || '); enable it with PATCH {"enabled": true} to send its pending events again'
                FROM webhook_endpoints WHERE id = ANY ($1::uuid[])
                """, [ids, Self.words(after)])
            return ids
        }
    }

    /// Deletes messages that ended (delivered or failed) older than `retention`, at most `limit`
    /// per call; answers how many went. Attempts go by whole weeks (`WebhookAttemptRetention`).
    @discardableResult
    public static func purge(on postgres: PostgresClient, retention: Duration, limit: Int = 10_000) async throws -> Int
    {
        let messages = try await postgres.execute(
            """
            DELETE FROM webhook_messages WHERE (endpoint_id, id) IN (
                SELECT endpoint_id, id FROM webhook_messages
                WHERE created_at < now() - $1::int8 * interval '1 millisecond' AND status <> 'pending' LIMIT $2)
            """, [retention.milliseconds, limit])
        return messages
    }

    /// The batch's columns as a select list.
    static let batchColumns = WebhookDeliveryBatch.columnList()
    static let noBatch = WebhookDeliveryBatch.columns.map { _ in "NULL" }.joined(separator: ", ")
    /// The stored size of a row's batch columns (NULL without a batch).
    static let batchSize = WebhookDeliveryBatch.columns.map { "pg_column_size(\($0))" }.joined(separator: " + ")

    static func words(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds >= 86400, seconds % 86400 == 0 { return "\(seconds / 86400) days" }
        if seconds >= 3600, seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        return "\(seconds) s"
    }
}
