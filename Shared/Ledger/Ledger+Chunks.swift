import BuzzKitContracts
import BuzzKitPostgres
import Foundation

/// The `delivery_chunks` side of sending: claims (one small update per chunk), take-overs of
/// chunks whose replica stopped, orphans (queued chunks whose stream entry never came or was lost
/// with Redis), and stale Live Activity requests recorded as lost. Recording, which deletes a
/// chunk, is `Ledger.record`.
extension Ledger {
    /// The columns `chunk(_:)` reads, in its order. A chunk of one message (`message_id` set: a
    /// fan-out's, a Live Activity request's) answers no `message_ids`: every one is `message_id`,
    /// and writing a hundred of them out as text was a tenth of the claim's cost.
    static let chunkColumns = """
        id, tenant_id, message_id, kind, CASE WHEN message_id IS NULL THEN message_ids END, tokens, subscriber_ids,
        environments
        """

    /// Claims a queued chunk for `instance`. nil when another replica holds it or it was recorded
    /// already (a redelivered or duplicated entry): nothing to send.
    public func claim(_ id: UUID, tenant: UUID, instance: String) async throws -> ClaimedChunk? {
        let rows = try await postgres.query(Self.claimPlain, [id, instance, tenant])
        return try rows.first.map { try Self.chunk($0, lost: nil) }
    }

    /// `claim`, reading `alongside` in the same statement (what the sender asks about the chunk
    /// before sending it, without a round trip and a statement of its own).
    public func claim<Value: Sendable>(
        _ id: UUID, tenant: UUID, instance: String, alongside: ClaimAlongside<Value>
    ) async throws -> (chunk: ClaimedChunk, alongside: Value)? {
        let rows = try await postgres.query(alongside.claimSQL, [id, instance, tenant])
        guard let row = rows.first else { return nil }
        return (try Self.chunk(row, lost: nil), try alongside.decode(row, 8))
    }

    static let claimPlain = claimSQL(alongside: nil)

    /// The claim: `$1` the chunk, `$2` this replica, `$3` its tenant; `alongside` an expression
    /// answered after `chunkColumns`.
    ///
    /// "Not claimed yet" is written `num_nulls(sending_by) = 1`, not `sending_by IS NULL`: the
    /// latter is the predicate of `delivery_chunks_queued`, and with the table's statistics
    /// taken while it was empty (between sends, the usual case) the planner chose that index and
    /// filtered every queued chunk by id: 250 rows read per claim on average through a
    /// 100,000-device send, the backlog's size. Only the primary key can serve this form.
    static func claimSQL(alongside: String?) -> String {
        """
        UPDATE delivery_chunks SET sending_by = $2, claimed_at = now()
        WHERE id = $1::uuid AND tenant_id = $3::uuid AND num_nulls(sending_by) = 1
        RETURNING \(Self.chunkColumns)\(alongside.map { ", " + $0 } ?? "")
        """
    }

    /// Takes over up to `limit` push chunks claimed longer than `staleAfter` ago (their replica
    /// stopped before recording them): `instance` holds them now, and `lost` names the one that
    /// had them and since when. `FOR UPDATE SKIP LOCKED`: two sweepers never take the same chunk;
    /// if this replica dies too, the chunk goes stale again and a third takes it. Live Activity
    /// chunks are never sent again: see `recordLostLiveActivities`.
    public func takeOverStale(staleAfter: Duration, limit: Int, instance: String) async throws -> [ClaimedChunk] {
        let rows = try await postgres.query(
            """
            WITH stale AS (
                SELECT id, sending_by, claimed_at FROM delivery_chunks
                WHERE sending_by IS NOT NULL AND claimed_at < now() - make_interval(secs => $1)
                  AND kind = '\(ChunkKind.push.rawValue)'
                ORDER BY claimed_at LIMIT $3 FOR UPDATE SKIP LOCKED
            )
            UPDATE delivery_chunks c SET lost_with = stale.sending_by, sending_by = $2, claimed_at = now()
            FROM stale WHERE c.id = stale.id
            RETURNING c.id, c.tenant_id, c.message_id, c.kind, c.message_ids, c.tokens, c.subscriber_ids,
                      c.environments, stale.sending_by, stale.claimed_at
            """, [staleAfter.sqlSeconds, instance, limit])
        return try rows.map { row in
            try Self.chunk(row, lost: (try row.decode(String.self, at: 8), try row.decode(Date.self, at: 9)))
        }
    }

    /// Queued chunks put on the stream more than `olderThan` ago and before `before` (the time up
    /// to which the sending group has read and acknowledged `bk:deliveries`): their entry was never
    /// added (a crash between the fan-out's commit and its XADD) or was lost with Redis. Marks them
    /// enqueued now and answers them, to be added again; a duplicate entry finds the chunk claimed.
    public func orphans(olderThan: Duration, before: Date, limit: Int = 500) async throws -> [DeliveryChunk] {
        let rows = try await postgres.query(
            """
            UPDATE delivery_chunks c SET enqueued_at = now()
            FROM (SELECT id FROM delivery_chunks
                  WHERE sending_by IS NULL AND enqueued_at < least(now() - make_interval(secs => $1), $2::timestamptz)
                  ORDER BY enqueued_at LIMIT $3 FOR UPDATE SKIP LOCKED) o
            WHERE c.id = o.id
            RETURNING c.tenant_id, c.id
            """, [olderThan.sqlSeconds, before, limit])
        return try rows.map {
            DeliveryChunk(tenantId: try $0.decode(UUID.self, at: 0), chunkId: try $0.decode(UUID.self, at: 1))
        }
    }

    /// `chunkColumns` of a row (`message_ids` NULL: each device is `message_id`'s).
    static func chunk(_ row: PostgresRow, lost: (replica: String, claimedAt: Date)?) throws -> ClaimedChunk {
        let messageId = try row.decode(UUID?.self, at: 2)
        let tokens = try row.decode([String].self, at: 5)
        let messages =
            try row.decode([UUID]?.self, at: 4)
            ?? messageId.map { Array(repeating: $0, count: tokens.count) } ?? []
        let subscribers = try row.decode([String].self, at: 6)
        let environments = try row.decode([String].self, at: 7)
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
            id: try row.decode(UUID.self, at: 0), tenantId: try row.decode(UUID.self, at: 1),
            messageId: messageId,
            kind: ChunkKind(rawValue: try row.decode(String.self, at: 3)) ?? .push, devices: devices, lost: lost)
    }
}

/// A value read in the statement that claims a chunk: an SQL expression over the claimed row
/// (`delivery_chunks`' columns, named with the table: `delivery_chunks.tenant_id`, ...; a bare
/// column name inside a subquery of the expression is the subquery's own table's when it has
/// one of that name) and how to read it from the answer. Its owner writes it (the send policy's `uncategorizedSQL`); the ledger only
/// places it in its statement.
public struct ClaimAlongside<Value: Sendable>: Sendable {
    public let expression: String
    public let decode: @Sendable (PostgresRow, Int) throws -> Value
    /// The claim's statement with `expression` (built once: a service keeps its `ClaimAlongside`
    /// as a constant, so its statement is prepared once per connection).
    let claimSQL: String

    public init(expression: String, decode: @escaping @Sendable (PostgresRow, Int) throws -> Value) {
        self.expression = expression
        self.decode = decode
        claimSQL = Ledger.claimSQL(alongside: expression)
    }
}
