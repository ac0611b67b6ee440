import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// Direct messages (a short `to` list: a transactional send, a workflow step, a fallback), many
/// at once: what the `bk:messages:direct` consumer does with a batch of entries.
///
/// 1. ONE statement takes every `queued` message of the batch whose tenant can send (`FOR UPDATE
///    SKIP LOCKED`: a message another replica is taking is left to it), writes their devices as ONE
///    chunk per tenant already claimed by this replica (`delivery_chunks`), and marks the messages
///    `fanned_out` with their audience size. No fan-out page, no `bk:deliveries` entry, no second
///    claim: a one-subscriber message costs its row's update and its share of one chunk row.
/// 2. Every push goes out at once, one batch per tenant and (team, environment) client (a device
///    named by several messages of the batch gets them in turn, in the order they were made).
/// 3. ONE statement per chunk records every delivery once, with its outcome (`LedgerWriter`).
///
/// A crash after 1 leaves the chunks claimed: another replica's sweeper takes them over after
/// `BUZZKIT_SENDER_STALE_SENDING` and sends them under the same apns-ids and collapse ids, as for
/// any chunk. Entries this does not take (the message is done or being taken elsewhere, its tenant
/// cannot send, it was fanning out) go through `FanOut.handle`, which ends them as before.
struct DirectMessages: Sendable {
    let postgres: PostgresClient
    let credentials: TenantCredentialStore
    let sender: DeliverySender
    let instance: String
    let logger: Logger
    var metrics: SenderMetrics = .unregistered()

    /// Takes what it can of `entries` (see the type); answers the message ids it took.
    func take(_ entries: [MessageEntry]) async throws -> Set<UUID> {
        let started = ContinuousClock.now
        var tenants: [UUID: TenantAPNs] = [:]
        for tenant in Set(entries.map(\.tenantId)) {
            let apns = try await credentials.get(tenant)
            if apns.problem == nil, apns.credentials != nil, apns.bundleId != nil { tenants[tenant] = apns }
        }
        var seen = Set<UUID>()  // an entry re-added by the outbox sweeper may repeat a message
        let ids = entries.filter { tenants[$0.tenantId] != nil && seen.insert($0.messageId).inserted }.map(\.messageId)
        guard !ids.isEmpty else { return [] }
        let rows = try await postgres.query(
            Self.takeSQL, [ids.arrayParameter, instance, MessageTarget.maxDirectSubscribers])
        var taken = Set<UUID>()
        var chunks: [UUID: ClaimedChunk] = [:]  // by tenant
        var order: [UUID] = []
        var known: [UUID: PreparedMessage] = [:]
        for row in rows {
            let message = try row.decode(UUID.self, at: 0)
            taken.insert(message)
            guard let chunkId = try row.decode(UUID?.self, at: 5) else { continue }  // no active device
            let tenant = try row.decode(UUID.self, at: 1)
            let tokens = try row.decode([String].self, at: 6)
            let subscribers = try row.decode([String].self, at: 7)
            let environments = try row.decode([String].self, at: 8)
            if let apns = tenants[tenant] {
                // Unsendable content is the ledger's to record per device (message_invalid).
                known[message] = try? PreparedMessageCache.prepare(
                    id: message, kind: try row.decode(String.self, at: 4),
                    contentJSON: try row.decode(JSONValue.self, at: 2),
                    createdAt: try row.decode(Date.self, at: 3), bundleId: apns.bundleId ?? "")
            }
            if chunks[tenant] == nil {
                chunks[tenant] = ClaimedChunk(id: chunkId, tenantId: tenant, devices: [], lostWith: nil)
                order.append(tenant)
            }
            for index in tokens.indices where index < subscribers.count && index < environments.count {
                chunks[tenant]?.devices.append(
                    ChunkDevice(
                        messageId: message, token: tokens[index], subscriberId: subscribers[index],
                        environment: environments[index]))
            }
        }
        if !taken.isEmpty { metrics.directBatch.observe(Double(taken.count)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for tenant in order {
                guard let chunk = chunks[tenant] else { continue }
                group.addTask { [known] in try await sender.send(chunk, known: known, started: started) }
            }
            try await group.waitForAll()
        }
        return taken
    }

    /// $1 the batch's message ids (of tenants that can send), $2 this replica, $3 the most
    /// subscribers a direct message names. One row per message taken, in the order of $1: id,
    /// tenant, content, created_at, kind, its tenant's chunk (NULL without an active device), and
    /// its devices' tokens, subscriber ids and environments (in the chunk's order).
    ///
    /// `m` locks the messages it takes (`SKIP LOCKED`: one replica per message); a message
    /// already past `queued` or naming more subscribers is not taken.
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
            SELECT x.id, x.tenant_id, x.target, x.environment, x.content, x.created_at, x.kind,
                   array_position($1::uuid[], x.id) AS n
            FROM messages x
            WHERE x.id = ANY($1::uuid[]) AND (x.status = 'queued') IS TRUE
              AND jsonb_typeof(x.target->'to') = 'array' AND jsonb_array_length(x.target->'to') <= $3
            FOR UPDATE SKIP LOCKED
        ), devices_of AS MATERIALIZED (
            SELECT m.id AS message_id, m.tenant_id, m.n, t.k, d.subscriber_id, d.token, d.environment
            FROM m CROSS JOIN LATERAL jsonb_array_elements_text(m.target->'to') WITH ORDINALITY AS t(subscriber_id, k)
            CROSS JOIN LATERAL (
                SELECT d.subscriber_id, d.token, d.environment FROM devices d
                WHERE d.tenant_id = m.tenant_id AND d.subscriber_id = t.subscriber_id AND d.active
                  AND (m.environment IS NULL OR d.environment = m.environment)
                OFFSET 0
            ) d
        ), chunks AS (
            INSERT INTO delivery_chunks (id, tenant_id, message_ids, tokens, subscriber_ids, environments,
                                         sending_by, claimed_at)
            SELECT gen_random_uuid(), tenant_id, array_agg(message_id ORDER BY n, k, token),
                   array_agg(token ORDER BY n, k, token), array_agg(subscriber_id ORDER BY n, k, token),
                   array_agg(environment ORDER BY n, k, token), $2, now()
            FROM devices_of GROUP BY tenant_id
            RETURNING id, tenant_id
        ), per_message AS (
            SELECT message_id, count(*)::int AS size, array_agg(token ORDER BY k, token) AS tokens,
                   array_agg(subscriber_id ORDER BY k, token) AS subscribers,
                   array_agg(environment ORDER BY k, token) AS environments
            FROM devices_of GROUP BY message_id
        ), done AS (
            UPDATE messages x SET status = 'fanned_out', updated_at = now(),
                audience_size = coalesce(p.size, 0), fanout_count = coalesce(p.size, 0)
            FROM m LEFT JOIN per_message p ON p.message_id = m.id
            WHERE x.id = m.id
            RETURNING x.id
        )
        SELECT m.id, m.tenant_id, m.content, m.created_at, m.kind,
               CASE WHEN p.message_id IS NOT NULL THEN c.id END, p.tokens, p.subscribers, p.environments
        FROM m JOIN done ON done.id = m.id
        LEFT JOIN per_message p ON p.message_id = m.id
        LEFT JOIN chunks c ON c.tenant_id = m.tenant_id
        ORDER BY m.n
        """
}
