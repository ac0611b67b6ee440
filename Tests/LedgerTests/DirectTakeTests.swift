import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import BuzzKitLedger

/// `Ledger.takeDirect` takes a queued direct message once however many replicas reach it at the
/// same moment (a message the outbox sweeper queued again, an entry another replica claimed): the
/// second replica's statement waits for the first's row locks, then leaves out every message the
/// first took, and writes no chunk for them. Against a real Postgres.
@Suite("direct take", .serialized, .requiresPostgres)
struct DirectTakeTests {
    @Test func twoReplicasTakingTheSameMessagesAtOnceTakeEachOnce() async throws {
        let schema = try await MigratedSchema.start("directtake")
        try await withCleanup {
            let tenant = try await schema.makeTenant()
            let postgres = schema.postgres
            let ledger = Ledger(postgres: postgres, logger: .silent())
            let subscribers = ["s1", "s2", "s3"]
            for (n, subscriber) in subscribers.enumerated() {
                try await postgres.execute(
                    "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2)", [tenant, subscriber])
                try await postgres.execute(
                    """
                    INSERT INTO devices (tenant_id, token, subscriber_id, environment)
                    VALUES ($1::uuid, $2, $3, 'sandbox')
                    """, [tenant, "aa0\(n)", subscriber])
            }
            let messages = subscribers.map {
                NewMessage(
                    id: UUID.timeOrdered(), tenantId: tenant, target: .subscribers([$0]), content: ["body": "b"],
                    environment: nil)
            }
            try await ledger.insertMessages(messages)
            let ids = messages.map(\.id)
            let range = LedgerTime.Range(of: ids)

            let (first, second) = try await postgres.withTransaction { tx in
                // r1's take has run and holds its rows, not committed yet.
                let first = try await tx.query(Ledger.takeSQL, [ids, "r1", 100, range.lower, range.upper])
                    .map { try $0.decode(UUID.self, at: 0) }
                let r1 = try await tx.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
                let r2 = Task { try await ledger.takeDirect(ids, instance: "r2", maxSubscribers: 100) }
                // r2's statement reaches the same rows and waits for r1.
                var waiting = false
                for _ in 0..<1000 where !waiting {
                    waiting =
                        try await postgres.query(
                            "SELECT count(*)::int FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))",
                            [r1]
                        )[0].decode(Int.self, at: 0) > 0
                    if !waiting { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(waiting, "r2's take never waited for r1's")
                return (first, r2)
            }
            // r1 committed: r2 sees every message taken and takes none of them.
            let taken = try await second.value
            #expect(first == ids)
            #expect(taken.isEmpty)
            let chunks = try await postgres.query(
                "SELECT count(*)::int, sum(cardinality(message_ids))::int, min(sending_by) FROM delivery_chunks")
            #expect(try chunks[0].decode(Int.self, at: 0) == 1)
            #expect(try chunks[0].decode(Int.self, at: 1) == ids.count)
            #expect(try chunks[0].decode(String.self, at: 2) == "r1")
            let statuses = try await postgres.query(
                "SELECT status, audience_size FROM messages WHERE id = ANY($1::uuid[])", [ids])
            #expect(statuses.count == ids.count)
            for row in statuses {
                #expect(try row.decode(String.self, at: 0) == "fanned_out")
                #expect(try row.decode(Int.self, at: 1) == 1)
            }
        } finally: {
            await schema.stop()
        }
    }
}
