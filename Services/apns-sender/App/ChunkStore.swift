import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCrypto
import BuzzKitPostgres
import Foundation

/// One device of a chunk: where one push goes.
struct ChunkDevice: Sendable, Hashable {
    var messageId: UUID
    var token: String
    var subscriberId: String
    var environment: String
    /// The delivery's id, and the `apns-id` of every push of it: `DeliveryID.make` (the same as
    /// SQL's `bk_delivery_id`).
    var deliveryId: String

    init(messageId: UUID, token: String, subscriberId: String, environment: String) {
        self.messageId = messageId
        self.token = token
        self.subscriberId = subscriberId
        self.environment = environment
        deliveryId = DeliveryID.make(message: messageId, token: token)
    }

    var apnsEnvironment: APNsEnvironment { APNsEnvironment(rawValue: environment) ?? .production }
}

/// A chunk this replica holds (`delivery_chunks.sending_by` is its name): it sends every device,
/// then records them and deletes the chunk in one statement (`LedgerWriter`).
struct ClaimedChunk: Sendable {
    var id: UUID
    var tenantId: UUID
    /// In the order they were queued (a device named twice gets its pushes in that order).
    var devices: [ChunkDevice]
    /// Set when this replica took the chunk over from one that stopped mid-send (its name): that
    /// replica's attempts are recorded as unknown before this one's.
    var lostWith: String?
}

/// Delivery ids: name-based on (message, device token), so a message reaches a device once by the
/// primary key alone and every push of a delivery carries the same `apns-id`, whoever sends it.
enum DeliveryID {
    /// The lowercase text of `bk_delivery_id(message, token)`.
    static func make(message: UUID, token: String) -> String {
        UUID.nameBased("\(message.lowercasedText):\(token)").lowercasedText
    }
}

/// The `delivery_chunks` side of sending: claims (one small update per chunk), take-overs of
/// chunks whose replica stopped, and orphans (queued chunks whose stream entry never came or was
/// lost with Redis) put on `bk:deliveries` again. Recording, which deletes a chunk, is the ledger
/// writer's.
struct ChunkStore: Sendable {
    let postgres: PostgresClient
    /// This replica's name (`sending_by`).
    let instance: String

    /// Claims a queued chunk. nil when another replica holds it or it was recorded already (a
    /// redelivered or duplicated entry): nothing to send.
    func claim(_ id: UUID, tenant: UUID) async throws -> ClaimedChunk? {
        let rows = try await postgres.query(
            """
            UPDATE delivery_chunks SET sending_by = $2, claimed_at = now()
            WHERE id = $1::uuid AND tenant_id = $3::uuid AND sending_by IS NULL
            RETURNING id, tenant_id, lost_with, message_ids, tokens, subscriber_ids, environments
            """, [id, instance, tenant])
        return try rows.first.map(Self.chunk)
    }

    /// Takes over up to `limit` chunks claimed longer than `staleAfter` ago (their replica stopped
    /// before recording them): this replica holds them now, and `lostWith` names the one that had
    /// them. `FOR UPDATE SKIP LOCKED`: two sweepers never take the same chunk; if this replica dies
    /// too, the chunk goes stale again and a third takes it.
    func takeOverStale(staleAfter: Duration, limit: Int) async throws -> [ClaimedChunk] {
        let rows = try await postgres.query(
            """
            WITH stale AS (
                SELECT id FROM delivery_chunks
                WHERE sending_by IS NOT NULL AND claimed_at < now() - make_interval(secs => $1)
                ORDER BY claimed_at LIMIT $3 FOR UPDATE SKIP LOCKED
            )
            UPDATE delivery_chunks c SET lost_with = c.sending_by, sending_by = $2, claimed_at = now()
            FROM stale WHERE c.id = stale.id
            RETURNING c.id, c.tenant_id, c.lost_with, c.message_ids, c.tokens, c.subscriber_ids, c.environments
            """, [staleAfter.seconds, instance, limit])
        return try rows.map(Self.chunk)
    }

    /// Queued chunks put on the stream more than `olderThan` ago and before `before` (the time up
    /// to which the sending group has read and acknowledged `bk:deliveries`): their entry was never
    /// added (a crash between the fan-out's commit and its XADD) or was lost with Redis. Marks them
    /// enqueued now and answers them, to be added again; a duplicate entry finds the chunk claimed.
    func orphans(olderThan: Duration, before: Date, limit: Int = 500) async throws -> [DeliveryChunk] {
        let rows = try await postgres.query(
            """
            UPDATE delivery_chunks c SET enqueued_at = now()
            FROM (SELECT id FROM delivery_chunks
                  WHERE sending_by IS NULL AND enqueued_at < least(now() - make_interval(secs => $1), $2::timestamptz)
                  ORDER BY enqueued_at LIMIT $3 FOR UPDATE SKIP LOCKED) o
            WHERE c.id = o.id
            RETURNING c.tenant_id, c.id
            """, [olderThan.seconds, before, limit])
        return try rows.map {
            DeliveryChunk(tenantId: try $0.decode(UUID.self, at: 0), chunkId: try $0.decode(UUID.self, at: 1))
        }
    }

    /// id, tenant_id, lost_with, message_ids, tokens, subscriber_ids, environments.
    static func chunk(_ row: PostgresRow) throws -> ClaimedChunk {
        let messages = try row.decode([UUID].self, at: 3)
        let tokens = try row.decode([String].self, at: 4)
        let subscribers = try row.decode([String].self, at: 5)
        let environments = try row.decode([String].self, at: 6)
        var devices: [ChunkDevice] = []
        devices.reserveCapacity(tokens.count)
        for index in tokens.indices
        where index < messages.count && index < subscribers.count && index < environments.count {
            devices.append(
                ChunkDevice(
                    messageId: messages[index], token: tokens[index], subscriberId: subscribers[index],
                    environment: environments[index]))
        }
        return ClaimedChunk(
            id: try row.decode(UUID.self, at: 0), tenantId: try row.decode(UUID.self, at: 1), devices: devices,
            lostWith: try row.decode(String?.self, at: 2))
    }
}
