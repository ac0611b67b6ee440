import BuzzKitContracts
import BuzzKitCrypto
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitTestSupport
import Foundation
import Testing
@testable import APNsSenderApp

/// The sweeper's half of "a kill loses nothing": deliveries a stopped replica left `sending` are
/// found through their chunk's `delivery_claims` row once it is older than `staleSending`, taken
/// over by the sweeping replica and sent again (here their tenant has no credentials, so the
/// re-send ends `failed` / `apns_credentials_missing` without an APNs call: what is checked is
/// which rows are taken and what the ledger says), the lost attempt first as unknown; a recorded
/// delivery and a chunk still within its time are left alone, and a stale claim row whose
/// deliveries all ended is deleted. Never `sender_lost`.
@Suite("stale delivery claims", .requiresTestStack)
struct StaleClaimSweepTests {
    @Test func staleClaimIsTakenOverAndSentAgain() async throws {
        let schema = TestEnvironment.uniqueName("claims")
        let postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 2)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let redis = try RedisTestSupport.client(poolSize: 1)
        let tenant = UUID(), message = UUID()
        let lost = UUID(), recorded = UUID(), fresh = UUID(), done = UUID()
        for (id, status) in [(lost, "sending"), (recorded, "sent"), (fresh, "sending"), (done, "sent")] {
            try await postgres.execute(
                """
                INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment, status,
                                        sending_by, sending_at, apns_id)
                VALUES ($1::uuid, $2::uuid, $3::uuid, $4, 's', 'sandbox', $5, 'dead-replica', now() - interval '1 hour',
                        gen_random_uuid())
                """, [id, tenant, message, id.uuidString.lowercased(), status])
        }
        // The dead replica's chunks (lost + recorded; done alone) claimed an hour ago; a live replica's just now.
        try await postgres.execute(
            """
            INSERT INTO delivery_claims (delivery_ids, sending_by, claimed_at)
            VALUES (ARRAY[$1::uuid, $2::uuid], 'dead-replica', now() - interval '1 hour'),
                   (ARRAY[$4::uuid], 'dead-replica', now() - interval '1 hour'),
                   (ARRAY[$3::uuid], 'live-replica', now())
            """, [lost, recorded, fresh, done])
        let apnsIDBefore = try await postgres.query("SELECT apns_id::text FROM deliveries WHERE id = $1::uuid", [lost])[
            0
        ]
        .decode(String.self, at: 0)
        let configuration = SenderConfiguration(secretKey: SecureRandom.bytes(32), staleSending: .seconds(60))
        let sender = DeliverySender(
            postgres: postgres,
            credentials: try TenantCredentialStore(
                postgres: postgres, secretKey: configuration.secretKey, ttl: .seconds(60)),
            messages: PreparedMessageCache(postgres: postgres),
            clients: APNsClientPool(settings: configuration.clientSettings, logger: .silent()),
            configuration: configuration, instance: "sweeping-replica", logger: .silent())
        let sweeper = OutboxSweeper(
            postgres: postgres, redis: redis, messages: StreamName(rawValue: schema),
            interval: .seconds(10), requeueAfter: .seconds(30),
            takeOver: { try await sender.takeOverStaleClaims() }, logger: .silent())
        try await sweeper.sweep()

        let rows = try await postgres.query(
            "SELECT id, status, error_code, sending_by, attempt_count, apns_id::text FROM deliveries")
        var byID: [UUID: (status: String, code: String?, by: String?, attempts: Int, apnsID: String?)] = [:]
        for row in rows {
            let (id, status, code, by, attempts, apnsID) = try row.decode(
                (UUID, String, String?, String?, Int, String?).self)
            byID[id] = (status, code, by, attempts, apnsID)
        }
        // Sent again by the sweeping replica: its own answer ends it, never sender_lost.
        #expect(byID[lost]?.status == "failed")
        #expect(byID[lost]?.code == "apns_credentials_missing")
        #expect(byID[lost]?.by == "sweeping-replica")
        #expect(byID[lost]?.attempts == 1)
        #expect(byID[lost]?.apnsID == apnsIDBefore)
        let attempts = try await postgres.query(
            "SELECT attempt, status, apns_id, error FROM delivery_attempts WHERE delivery_id = $1::uuid ORDER BY attempt",
            [lost])
        try #require(attempts.count == 1)
        let (number, status, apnsID, error) = try attempts[0].decode((Int, Int, String?, String?).self)
        #expect(number == 1)
        #expect(status == 0)
        #expect(apnsID == apnsIDBefore)
        #expect(error?.hasPrefix("unknown:") == true)
        #expect(error?.contains("dead-replica") == true)
        // Left alone.
        #expect(byID[recorded]?.status == "sent")
        #expect(byID[recorded]?.code == nil)
        #expect(byID[done]?.status == "sent")
        #expect(byID[fresh]?.status == "sending")
        #expect(byID[fresh]?.by == "dead-replica")
        #expect(
            try await postgres.query("SELECT 1 FROM delivery_attempts WHERE delivery_id <> $1::uuid", [lost]).isEmpty)
        // The taken-over chunk's row went with its record, the one with nothing left is deleted.
        let claims = try await postgres.query("SELECT sending_by FROM delivery_claims")
        #expect(try claims.map { try $0.decode(String.self, at: 0) } == ["live-replica"])

        try await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
    }
}
