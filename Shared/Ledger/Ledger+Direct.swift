import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Direct messages (a short `to` list), many at once: apns-sender's `DirectMessages` takes a
/// batch here, sends the chunks and records them with `record`.
extension Ledger {
    /// One message `takeDirect` took: what it is, and its devices in its tenant's chunk.
    public struct DirectMessage: Sendable {
        public var id: UUID
        public var tenantId: UUID
        public var content: JSONValue
        public var createdAt: Date
        public var kind: String
        /// Its tenant's chunk, claimed by the caller; nil when the message has no active device.
        public var chunkId: UUID?
        public var devices: [ChunkDevice]
        /// The send policy decided by its sender already (a workflow's send step): nil, or
        /// `(suppressed reason or nil)` to apply to every device without deciding again.
        public var decided: SuppressionReason?? = nil
    }

    /// ONE statement takes every `queued` message of `ids` (of tenants that can send) naming at
    /// most `maxSubscribers` subscribers (a message another replica took first is left to it),
    /// writes their devices as ONE chunk per tenant already claimed by
    /// `instance` (`delivery_chunks`, `push`), and marks the messages `fanned_out` with their
    /// audience size. Answers the messages taken, in the order of `ids`; those without any active
    /// device have nothing pending and are completed right after (`completeIfDone`; the outbox
    /// sweeper's `completeStragglers` if that fails).
    public func takeDirect(_ ids: [UUID], instance: String, maxSubscribers: Int) async throws -> [DirectMessage] {
        var parameter = PostgresArrayText(capacity: 2 + ids.count * 37)
        for id in ids { parameter.append(id) }
        let range = LedgerTime.Range(of: ids)
        let rows = try await postgres.query(
            Self.takeSQL, [parameter.value, instance, maxSubscribers, range.lower, range.upper])
        var taken: [DirectMessage] = []
        taken.reserveCapacity(rows.count)
        for row in rows {
            let message = try row.decode(UUID.self, at: 0)
            let chunkId = try row.decode(UUID?.self, at: 5)
            var devices: [ChunkDevice] = []
            if chunkId != nil {
                let tokens = try row.decode([String].self, at: 6)
                let subscribers = try row.decode([String].self, at: 7)
                let environments = try row.decode([String].self, at: 8)
                for index in tokens.indices where index < subscribers.count && index < environments.count {
                    devices.append(
                        ChunkDevice(
                            messageId: message, token: tokens[index], subscriberId: subscribers[index],
                            environment: environments[index]))
                }
            }
            taken.append(
                DirectMessage(
                    id: message, tenantId: try row.decode(UUID.self, at: 1),
                    content: try row.decode(JSONValue.self, at: 2), createdAt: try row.decode(Date.self, at: 3),
                    kind: try row.decode(String.self, at: 4), chunkId: chunkId, devices: devices,
                    decided: try Self.decidedPolicy(row, at: 9)))
        }
        // Committed already, their chunks claimed: a failure here must not stop the sends. The
        // outbox sweeper completes what this leaves (`completeStragglers`).
        let deviceless = taken.filter { $0.chunkId == nil }.map(\.id)
        if !deviceless.isEmpty {
            do { try await completeIfDone(deviceless) } catch {
                logger.warning("messages without devices not completed yet", metadata: ["error": "\(error)"])
            }
        }
        return taken
    }

    /// `messages.policy_decided_at` and `suppressed_reason` at `index` and the next column: nil
    /// when the sender did not decide, else its decision (nil: let through).
    public static func decidedPolicy(_ row: PostgresRow, at index: Int) throws -> SuppressionReason?? {
        guard try row.decode(Date?.self, at: index) != nil else { return nil }
        return .some(try row.decode(String?.self, at: index + 1).flatMap(SuppressionReason.init(rawValue:)))
    }

    /// $1 the batch's message ids (of tenants that can send), $2 this replica, $3 the most
    /// subscribers a direct message names. One row per message taken, in the order of $1: id,
    /// tenant, content, created_at, kind, its tenant's chunk (NULL without an active device), its
    /// devices' tokens, subscriber ids and environments (in the chunk's order), and the policy its
    /// sender decided (`policy_decided_at`, `suppressed_reason`).
    ///
    /// `done` takes the messages: its `UPDATE` locks each row and checks `queued` again on the
    /// row as it stands then (a message another replica took meanwhile is waited for, then left
    /// out), and the chunk holds only the devices of the messages it took, so a message is taken
    /// once. A message already past `queued` or naming more subscribers is not taken. (`m` used to
    /// lock the rows itself, `FOR UPDATE SKIP LOCKED`: a second lock record per message, about 57
    /// bytes of WAL, and a quarter of the statement's execution time.)
    ///
    /// Plans: `id = ANY($1)` reads the messages by primary key (a join with `unnest` let the
    /// planner hash the whole `messages` table; the `IS TRUE` keeps the status test off the
    /// partial index of unfinished messages, which a backlog makes long); the devices of each named
    /// subscriber come from a correlated subquery kept apart by `OFFSET 0`, so it runs as an index
    /// scan of `devices_subscriber` per subscriber. Joined plainly, the planner (which guesses 100
    /// subscribers per message) chose a sequential scan of `devices` per message: 540 ms for a
    /// batch of 200 with 20,000 devices, where this takes a few.
    static let takeSQL = """
        WITH m AS MATERIALIZED (
            SELECT x.id, x.message_time, x.tenant_id, x.target, x.environment, x.content, x.created_at, x.kind,
                   x.policy_decided_at, x.suppressed_reason, array_position($1::uuid[], x.id) AS n
            FROM messages x
            WHERE x.id = ANY($1::uuid[]) AND \(LedgerTime.prune("x.message_time", lower: "$4", upper: "$5")) AND (x.status = 'queued') IS TRUE
              AND jsonb_typeof(x.target->'to') = 'array' AND jsonb_array_length(x.target->'to') <= $3
        ), devices_of AS MATERIALIZED (
            SELECT m.id AS message_id, m.tenant_id, m.n, t.k, d.subscriber_id, d.token, d.environment
            FROM m CROSS JOIN LATERAL jsonb_array_elements_text(m.target->'to') WITH ORDINALITY AS t(subscriber_id, k)
            CROSS JOIN LATERAL (
                SELECT d.subscriber_id, d.token, d.environment FROM devices d
                WHERE d.tenant_id = m.tenant_id AND d.subscriber_id = t.subscriber_id AND d.active
                  AND (m.environment IS NULL OR d.environment = m.environment)
                OFFSET 0
            ) d
        ), per_message AS (
            SELECT message_id, count(*)::int AS size, array_agg(token ORDER BY k, token) AS tokens,
                   array_agg(subscriber_id ORDER BY k, token) AS subscribers,
                   array_agg(environment ORDER BY k, token) AS environments
            FROM devices_of GROUP BY message_id
        ), done AS (
            UPDATE messages x SET status = 'fanned_out', updated_at = now(),
                audience_size = coalesce(p.size, 0), fanout_count = coalesce(p.size, 0)
            FROM m LEFT JOIN per_message p ON p.message_id = m.id
            WHERE x.id = m.id AND x.message_time = m.message_time AND (x.status = 'queued') IS TRUE
              AND \(LedgerTime.prune("x.message_time", lower: "$4", upper: "$5"))
            RETURNING x.id
        ), chunks AS (
            INSERT INTO delivery_chunks (id, tenant_id, message_ids, tokens, subscriber_ids, environments,
                                         sending_by, claimed_at)
            SELECT gen_random_uuid(), tenant_id, array_agg(message_id ORDER BY n, k, token),
                   array_agg(token ORDER BY n, k, token), array_agg(subscriber_id ORDER BY n, k, token),
                   array_agg(environment ORDER BY n, k, token), $2, now()
            FROM devices_of WHERE message_id IN (SELECT id FROM done) GROUP BY tenant_id
            RETURNING id, tenant_id
        )
        SELECT m.id, m.tenant_id, m.content, m.created_at, m.kind,
               CASE WHEN p.message_id IS NOT NULL THEN c.id END, p.tokens, p.subscribers, p.environments,
               m.policy_decided_at, m.suppressed_reason
        FROM m JOIN done ON done.id = m.id
        LEFT JOIN per_message p ON p.message_id = m.id
        LEFT JOIN chunks c ON c.tenant_id = m.tenant_id
        ORDER BY m.n
        """
}
