import BuzzKitContracts
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing
@testable import APNsSenderApp

/// The sweeper's half of "a kill can lose a push, never double one": deliveries a stopped replica
/// left `sending` are found through their chunk's `delivery_claims` row once it is older than
/// `staleSending`, end failed / sender_lost (never re-sent), and the claim row goes; a recorded
/// delivery and a chunk still within its time are left alone.
@Suite("stale delivery claims")
struct StaleClaimSweepTests {
    @Test func staleClaimEndsItsSendingDeliveriesAsSenderLost() async throws {
        let schema = TestEnvironment.uniqueName("claims")
        let postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 2)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let redis = try RedisTestSupport.client(poolSize: 1)
        let tenant = UUID(), message = UUID()
        let lost = UUID(), recorded = UUID(), fresh = UUID()
        for (id, status) in [(lost, "sending"), (recorded, "sent"), (fresh, "sending")] {
            try await postgres.execute("""
                INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment, status,
                                        sending_by, sending_at)
                VALUES ($1::uuid, $2::uuid, $3::uuid, $4, 's', 'sandbox', $5, 'dead-replica', now() - interval '1 hour')
                """, [id, tenant, message, id.uuidString.lowercased(), status])
        }
        // The dead replica's chunk (lost + recorded) claimed an hour ago; a live replica's chunk just now.
        try await postgres.execute("""
            INSERT INTO delivery_claims (delivery_ids, sending_by, claimed_at)
            VALUES (ARRAY[$1::uuid, $2::uuid], 'dead-replica', now() - interval '1 hour'),
                   (ARRAY[$3::uuid], 'live-replica', now())
            """, [lost, recorded, fresh])
        let sweeper = OutboxSweeper(postgres: postgres, redis: redis, messages: StreamName(rawValue: schema),
                                    interval: .seconds(10), requeueAfter: .seconds(30), staleSending: .seconds(60),
                                    logger: .silent())
        try await sweeper.sweep()

        let rows = try await postgres.query("SELECT id, status, error_code FROM deliveries ORDER BY status")
        var byID: [UUID: (String, String?)] = [:]
        for row in rows { byID[try row.decode(UUID.self, at: 0)] = (try row.decode(String.self, at: 1), try row.decode(String?.self, at: 2)) }
        #expect(byID[lost]?.0 == "failed")
        #expect(byID[lost]?.1 == "sender_lost")
        #expect(byID[recorded]?.0 == "sent")
        #expect(byID[recorded]?.1 == nil)
        #expect(byID[fresh]?.0 == "sending")
        let claims = try await postgres.query("SELECT sending_by FROM delivery_claims")
        #expect(try claims.map { try $0.decode(String.self, at: 0) } == ["live-replica"])

        try await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
    }
}
