import BuzzKitContracts
import BuzzKitCore
import BuzzKitCrypto
import BuzzKitLedger
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitTestSupport
import Foundation
import Testing

@testable import APNsSenderApp

/// The sweeper's half of "a kill loses nothing": a chunk a stopped replica left claimed is found
/// once its claim is older than `staleSending`, taken over by the sweeping replica and sent again
/// (here its tenant has no credentials, so the re-send ends `failed` / `apns_credentials_missing`
/// without an APNs call: what is checked is which chunks are taken and what the ledger says), the
/// lost attempt first as unknown, under the delivery's own apns-id; a recorded delivery and a chunk
/// still within its time are left alone. Never `sender_lost`.
@Suite("stale delivery claims", .requiresTestStack)
struct StaleClaimSweepTests {
    @Test func staleClaimIsTakenOverAndSentAgain() async throws {
        let schema = TestEnvironment.uniqueName("claims")
        let postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 2)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let redis = try RedisTestSupport.client(poolSize: 1)
        let tenant = UUID()
        let message = UUID()
        let lostToken = "aa01"
        let freshToken = "aa02"
        let recordedToken = "aa03"
        let recorded = try await postgres.query("SELECT bk_delivery_id($1::uuid, $2)", [message, recordedToken])[0]
            .decode(UUID.self, at: 0)
        try await postgres.execute(
            """
            INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id, environment,
                                    status, apns_id)
            VALUES ($1::uuid, $2::uuid, $3::uuid, now(), $4, 's', 'sandbox', 'sent', $1::uuid)
            """, [recorded, tenant, message, recordedToken])
        // The dead replica's chunk claimed an hour ago; a live replica's just now.
        try await postgres.execute(
            """
            INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments,
                                         sending_by, claimed_at)
            VALUES (gen_random_uuid(), $1::uuid, $2::uuid, ARRAY[$2::uuid], ARRAY[$3], ARRAY['s'], ARRAY['sandbox'],
                    'dead-replica', now() - interval '1 hour'),
                   (gen_random_uuid(), $1::uuid, $2::uuid, ARRAY[$2::uuid], ARRAY[$4], ARRAY['s'], ARRAY['sandbox'],
                    'live-replica', now())
            """, [tenant, message, lostToken, freshToken])
        let configuration = SenderConfiguration(secretKey: SecureRandom.bytes(32), staleSending: .seconds(60))
        let ledger = Ledger(postgres: postgres, logger: .silent())
        let sender = DeliverySender(
            ledger: ledger,
            credentials: try TenantCredentialStore(
                postgres: postgres, secretKey: configuration.secretKey, ttl: .seconds(60)),
            messages: PreparedMessageCache(postgres: postgres),
            clients: APNsClientPool(settings: configuration.clientSettings, logger: .silent()),
            configuration: configuration, instance: "sweeping-replica", logger: .silent())
        let sweeper = OutboxSweeper(
            ledger: ledger, redis: redis, messages: StreamName(rawValue: schema),
            interval: .seconds(10), requeueAfter: .seconds(30),
            takeOver: { try await sender.takeOverStaleClaims() }, logger: .silent(), metrics: MetricsRegistry())
        try await sweeper.sweep()

        let rows = try await postgres.query(
            "SELECT device_token, status, error_code, sending_by, attempt_count, coalesce(apns_id, id)::text, id::text FROM deliveries"
        )
        var byToken:
            [String: (status: String, code: String?, by: String?, attempts: Int, apnsID: String?, id: String)] =
                [:]
        for row in rows {
            let (token, status, code, by, attempts, apnsID, id) = try row.decode(
                (String, String, String?, String?, Int, String?, String).self)
            byToken[token] = (status, code, by, attempts, apnsID, id)
        }
        // Sent again by the sweeping replica: its own answer ends it, never sender_lost.
        let lost = try #require(byToken[lostToken])
        #expect(lost.status == "failed")
        #expect(lost.code == "apns_credentials_missing")
        #expect(lost.by == "sweeping-replica")
        #expect(lost.attempts == 1)
        let expectedID = try await postgres.query("SELECT bk_delivery_id($1::uuid, $2)::text", [message, lostToken])[0]
            .decode(String.self, at: 0)
        #expect(lost.id == expectedID)
        #expect(lost.apnsID == expectedID)
        let attempts = try await postgres.query(
            """
            SELECT attempt, status, apns_id, error, extract(epoch FROM now() - at)::float8 FROM delivery_attempts
            WHERE delivery_id = $1::uuid ORDER BY attempt
            """, [UUID(uuidString: lost.id)!])
        try #require(attempts.count == 1)
        let (number, status, apnsID, error) = try attempts[0].decode((Int, Int, String?, String?).self)
        // The lost attempt is dated when the dead replica claimed the chunk (an hour ago).
        let age = try attempts[0].decode(Double.self, at: 4)
        #expect(age > 3590 && age < 3700, "the lost attempt's time: \(age) s ago")
        #expect(number == 1)
        #expect(status == 0)
        #expect(apnsID == expectedID)
        #expect(error?.hasPrefix("unknown:") == true)
        #expect(error?.contains("dead-replica") == true)
        // Left alone.
        #expect(byToken[recordedToken]?.status == "sent")
        #expect(byToken[recordedToken]?.code == nil)
        #expect(byToken[freshToken] == nil)
        #expect(
            try await postgres.query(
                "SELECT 1 FROM delivery_attempts WHERE delivery_id <> $1::uuid", [UUID(uuidString: lost.id)!]
            ).isEmpty)
        // The taken-over chunk went with its record; the live replica's is still its own.
        let chunks = try await postgres.query("SELECT sending_by FROM delivery_chunks")
        #expect(try chunks.map { try $0.decode(String.self, at: 0) } == ["live-replica"])

        try await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
    }

    /// A queued chunk whose `bk:deliveries` entry never came (a crash between the fan-out's commit
    /// and its XADD) or was lost with Redis is put on the stream again, once per `requeueAfter`;
    /// a claimed chunk and one enqueued just now are left alone.
    @Test func orphanChunksArePutOnTheStreamAgain() async throws {
        let schema = TestEnvironment.uniqueName("orphans")
        let postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 2)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let redis = try RedisTestSupport.client(poolSize: 1)
        let stream = StreamName(rawValue: TestEnvironment.uniqueName("bk:deliveries"))
        let tenant = UUID()
        let message = UUID()
        let orphan = UUID()
        let fresh = UUID()
        let claimed = UUID()
        for (id, by, enqueued) in [
            (orphan, nil, "now() - interval '1 hour'"), (fresh, nil, "now()"),
            (claimed, "live-replica", "now() - interval '1 hour'")
        ] as [(UUID, String?, String)] {
            try await postgres.execute(
                """
                INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments,
                                             sending_by, claimed_at, enqueued_at)
                VALUES ($1::uuid, $2::uuid, $3::uuid, ARRAY[$3::uuid], ARRAY['aa'], ARRAY['s'], ARRAY['sandbox'],
                        $4, CASE WHEN $4::text IS NULL THEN NULL ELSE now() END, \(enqueued))
                """, [id, tenant, message, by])
        }
        let ledger = Ledger(postgres: postgres, logger: .silent())
        // No consumer group yet (Redis lost everything): every chunk older than 30 s is an orphan.
        let first = try await APNsSender.requeueOrphans(
            ledger: ledger, redis: redis, stream: stream, olderThan: .seconds(30))
        #expect(first == 1)
        let entries = try await redis.xrange(stream.rawValue)
        #expect(entries.count == 1)
        let entry = try DeliveryChunk(entry: try #require(entries.first))
        #expect(entry.chunkId == orphan && entry.tenantId == tenant)
        // Put on the stream just now: not again until requeueAfter has passed.
        let second = try await APNsSender.requeueOrphans(
            ledger: ledger, redis: redis, stream: stream, olderThan: .seconds(30))
        #expect(second == 0)
        #expect(try await redis.xlen(stream.rawValue) == 1)

        _ = try await redis.del(keys: [stream.rawValue])
        try await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
    }
}
