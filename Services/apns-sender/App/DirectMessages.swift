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
///    SKIP LOCKED`: a message another replica is taking is left to it), inserts its deliveries
///    already `sending` (claimed by this replica, with their apns-ids) and ONE `delivery_claims`
///    row for all of them, and marks the messages `fanned_out` with their audience size. No
///    fan-out page, no `bk:deliveries` entry, no second claim: a one-subscriber message costs
///    one row update, one delivery insert and its share of one claim row.
/// 2. Every push goes out at once, one batch per tenant and (team, environment) client (a device
///    named by several messages of the batch gets them in turn, in the order they were made).
/// 3. ONE statement records every outcome (`DeliverySender.sendAndRecord(_:claimID:started:)`).
///
/// A crash after 1 leaves the deliveries `sending` with their claim row: another replica's
/// sweeper sends them again after `BUZZKIT_SENDER_STALE_SENDING` under the same apns-id and
/// collapse id, as for any chunk. Entries this does not take (the message is done or being taken
/// elsewhere, its tenant cannot send, it was fanning out) go through `FanOut.handle`, which ends
/// them as before.
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
        metrics.directBatch.observe(Double(ids.count))
        let rows = try await postgres.query(
            Self.takeSQL, [ids.arrayParameter, instance, MessageTarget.maxDirectSubscribers])
        var taken = Set<UUID>()
        var groups: [UUID: DeliverySender.Group] = [:]
        var order: [UUID] = []
        var claimID: String?
        for row in rows {
            let message = try row.decode(UUID.self, at: 0)
            taken.insert(message)
            guard let deliveryId = try row.decode(String?.self, at: 5) else { continue }  // no active device
            claimID = try row.decode(String?.self, at: 10) ?? claimID
            if groups[message] == nil {
                let tenant = try row.decode(UUID.self, at: 1)
                guard let apns = tenants[tenant] else { continue }
                var prepared = DeliverySender.Prepared(tenant: apns)
                do {
                    prepared.message = try PreparedMessageCache.prepare(
                        id: message, contentJSON: try row.decode(JSONValue.self, at: 2),
                        createdAt: try row.decode(Date.self, at: 3), bundleId: apns.bundleId ?? "")
                } catch let error as UnsendableMessage {
                    prepared.unsendable = error.description
                }
                groups[message] = DeliverySender.Group(claimed: [], prepared: prepared, tenant: tenant)
                order.append(message)
            }
            groups[message]?.claimed.append(
                DeliverySender.Claimed(
                    id: deliveryId, token: try row.decode(String.self, at: 6),
                    environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 7)) ?? .production,
                    apnsId: try row.decode(String.self, at: 8), attemptCount: try row.decode(Int.self, at: 9)))
        }
        let claimed = order.compactMap { groups[$0] }
        if !claimed.isEmpty {
            try await sender.sendAndRecord(claimed, claimID: claimID, started: started)
        }
        return taken
    }

    /// $1 the batch's message ids (of tenants that can send), $2 this replica, $3 the most
    /// subscribers a direct message names. One row per delivery, plus one per message without an
    /// active device (delivery columns NULL), in the order of $1: message, tenant, content,
    /// created_at, kind, delivery id, token, environment, apns-id, attempt count, claim id.
    ///
    /// `m` locks the messages it takes (`SKIP LOCKED`: one replica per message); a message
    /// already past `queued` or naming more subscribers is not taken. The deliveries' UNIQUE
    /// (message, token) still guards against a second insert, as in the fan-out.
    static let takeSQL = """
        WITH m AS MATERIALIZED (
            SELECT x.id, x.tenant_id, x.target, x.environment, x.content, x.created_at, x.kind, w.n
            FROM unnest($1::uuid[]) WITH ORDINALITY AS w(id, n) JOIN messages x ON x.id = w.id
            WHERE x.status = 'queued'
              AND jsonb_typeof(x.target->'to') = 'array' AND jsonb_array_length(x.target->'to') <= $3
            FOR UPDATE OF x SKIP LOCKED
        ), devices_of AS MATERIALIZED (
            SELECT m.id AS message_id, m.tenant_id, d.subscriber_id, d.token, d.environment
            FROM m CROSS JOIN LATERAL jsonb_array_elements_text(m.target->'to') AS t(subscriber_id)
            JOIN devices d ON d.tenant_id = m.tenant_id AND d.subscriber_id = t.subscriber_id
            WHERE d.active AND (m.environment IS NULL OR d.environment = m.environment)
        ), inserted AS (
            INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment,
                                    status, sending_by, sending_at, apns_id)
            SELECT gen_random_uuid(), tenant_id, message_id, token, subscriber_id, environment,
                   'sending', $2, now(), gen_random_uuid()
            FROM devices_of
            ON CONFLICT (message_id, device_token) DO NOTHING
            RETURNING id, message_id, device_token, environment, apns_id, attempt_count
        ), claim AS (
            INSERT INTO delivery_claims (delivery_ids, sending_by)
            SELECT array_agg(id), $2 FROM inserted HAVING count(*) > 0
            RETURNING id
        ), sizes AS (
            SELECT message_id, count(*)::int AS n FROM devices_of GROUP BY message_id
        ), done AS (
            UPDATE messages x SET status = 'fanned_out', updated_at = now(),
                audience_size = coalesce(sizes.n, 0), fanout_count = coalesce(sizes.n, 0)
            FROM m LEFT JOIN sizes ON sizes.message_id = m.id
            WHERE x.id = m.id
            RETURNING x.id
        )
        SELECT m.id, m.tenant_id, m.content, m.created_at, m.kind,
               i.id::text, i.device_token, i.environment, i.apns_id::text, i.attempt_count, (SELECT id::text FROM claim)
        FROM m JOIN done ON done.id = m.id LEFT JOIN inserted i ON i.message_id = m.id
        ORDER BY m.n
        """
}
