import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitTestSupport
import BuzzKitWebhooks
import Foundation
import Testing

/// Retention of webhook attempts (migration 0025): whole weeks past `BUZZKIT_WEBHOOKS_RETENTION`
/// are dropped, the attempts made before the migration with the legacy partition; the ids go on.
/// Time is moved by passing the pass its `now` (the partitions are made around it).
@Suite("Webhook attempt retention", .requiresPostgres)
struct WebhookAttemptRetentionTests {
    @Test func weeksPastTheRetentionAreDroppedAndAttemptsGoOn() async throws {
        let schema = try await MigratedSchema.start("whret")
        try await withCleanup {
            let postgres = schema.postgres
            let tenant = try await schema.makeTenant()
            let endpoint = UUID()
            try await postgres.execute(
                """
                INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, secret_sealed)
                VALUES ($1::uuid, $2::uuid, 'https://example.com/hook', '{}', '\\x00')
                """, [endpoint, tenant])
            let insert = """
                INSERT INTO webhook_attempts (endpoint_id, event_type, attempted_at, outcome)
                VALUES ($1::uuid, 'delivery.sent', now() + make_interval(days => $2), 'delivered') RETURNING id
                """
            var ids: [Int] = []
            for days in [-10, -1, 0] {
                ids.append(try await postgres.query(insert, [endpoint, days])[0].decode(Int.self, at: 0))
            }
            let retention = WebhookAttemptRetention(postgres: postgres, retention: .seconds(30 * 86_400))

            // Today nothing is past the retention.
            var pass = try await retention.maintain()
            #expect(pass.ran)
            #expect(pass.dropped == [])
            #expect(pass.partitionsAhead == 4)
            #expect(try #require(pass.oldest) <= Date().addingTimeInterval(-9 * 86_400))

            // 60 days on, everything before 30 days on goes: the legacy partition and the empty weeks.
            pass = try await retention.maintain(now: Date().addingTimeInterval(60 * 86_400))
            #expect(pass.dropped.first == "webhook_attempts_legacy")
            #expect(pass.dropped.count > 1)
            #expect(try await postgres.query("SELECT count(*) FROM webhook_attempts")[0].decode(Int.self, at: 0) == 0)
            #expect(try #require(pass.oldest) > Date().addingTimeInterval(22 * 86_400))
            let status = try #require(try await RetentionStatus.all(on: postgres).first)
            #expect(status.table == "webhook_attempts" && status.retention == .seconds(30 * 86_400))
            #expect(status.oldestKept == pass.oldest && status.droppedLastPass == pass.dropped.count)
            // The id sequence outlived the legacy partition that owned it first.
            let next = try await postgres.query(insert, [endpoint, 61])[0].decode(Int.self, at: 0)
            #expect(next > ids.max()!)
        } finally: {
            await schema.stop()
        }
    }
}
