import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The frequency-cap counter row itself (migration 0029): what `Policy.decide` keeps in it, and
/// that `Policy.evaluate` answers as `decide` would without keeping anything.
@Suite("Frequency cap counters", .serialized, .requiresTestStack)
struct FrequencyCapCounterTests {
    /// A rewrite drops the pushes older than the longest window and appends the new one after the
    /// newest (a replica whose clock is behind cannot put a push before one already there).
    @Test("a counter row drops pushes older than the longest window and stays in time order")
    func rewriteDropsExpiredPushes() async throws {
        try await withSchema("capprune") { schema, tenant in
            let postgres = schema.postgres
            try await Self.caps(
                postgres, tenant,
                [
                    FrequencyCap(category: "news", limit: 3, window: .hour),
                    FrequencyCap(limit: 5, window: .day)
                ])
            let now = Date()
            let old = [UUID(), UUID(), UUID()]
            try await postgres.execute(
                """
                INSERT INTO frequency_cap_counters (tenant_id, subscriber_id, sent_at, messages, categories)
                VALUES ($1::uuid, 'a', ARRAY[$2::timestamptz - interval '2 days', $2::timestamptz - interval '30 hours',
                                             $2::timestamptz + interval '1 second'],
                        $3::uuid[], '{news,news,news}')
                """, [tenant, now, old])
            let next = PolicyCandidate(messageId: UUID(), subscriberId: "a", category: "news")
            let verdicts = try await Policy(postgres: postgres).decide([next], tenant: tenant, now: now)
            #expect(verdicts[next] == PolicyVerdict(category: "news"))
            let row = try #require(
                try await postgres.query(
                    """
                    SELECT messages, sent_at[2] - sent_at[1], categories FROM frequency_cap_counters
                    WHERE tenant_id = $1::uuid AND subscriber_id = 'a'
                    """, [tenant]
                ).first)
            #expect(try row.decode([UUID].self, at: 0) == [old[2], next.messageId])
            #expect(try row.decode(String.self, at: 1) == "00:00:00")
            #expect(try row.decode([String].self, at: 2) == ["news", "news"])
        }
    }

    /// Several sends to one subscriber in one call are decided in order, each seeing the ones let
    /// through before it; the dry run answers the same and leaves no trace.
    @Test("evaluate answers as decide for several sends to one subscriber, and counts nothing")
    func evaluateMatchesDecide() async throws {
        try await withSchema("capeval") { schema, tenant in
            let postgres = schema.postgres
            try await Self.caps(
                postgres, tenant,
                [
                    FrequencyCap(category: "news", limit: 1, window: .day),
                    FrequencyCap(limit: 3, window: .day)
                ])
            let sends = ["news", "other", "news", "other", "other"].map {
                PolicyCandidate(messageId: UUID(), subscriberId: "a", category: $0)
            }
            let policy = Policy(postgres: postgres)
            let expected: [SuppressionReason?] = [nil, nil, .frequencyCapped, nil, .frequencyCapped]
            let dry = try await policy.evaluate(sends, tenant: tenant)
            #expect(sends.map { dry[$0]?.suppressed } == expected)
            #expect(sends.allSatisfy { dry[$0] != nil })
            let rows = "SELECT count(*)::int FROM frequency_cap_counters WHERE tenant_id = $1::uuid"
            let kept = try await postgres.query(rows, [tenant]).first?.decode(Int.self, at: 0)
            #expect(kept == 0)

            let real = try await policy.decide(sends, tenant: tenant)
            #expect(sends.map { real[$0]?.suppressed } == expected)
            let counted = try await postgres.query(
                "SELECT messages FROM frequency_cap_counters WHERE tenant_id = $1::uuid AND subscriber_id = 'a'",
                [tenant]
            ).first?.decode([UUID].self)
            #expect(counted == [sends[0], sends[1], sends[3]].map(\.messageId))
            // Sent again (a resent chunk): what was let through goes out again, the rest stays capped.
            let again = try await policy.decide(sends, tenant: tenant)
            #expect(sends.map { again[$0]?.suppressed } == expected)
        }
    }

    /// A claim that locked a subscriber's counters (`lockCounters`) keeps a chunk's decision for
    /// that subscriber waiting until it ends, and the chunk then sees what the claim counted.
    @Test("lockCounters holds a subscriber's decisions until the transaction ends")
    func lockCountersHoldsDeciders() async throws {
        try await withSchema("caplock") { schema, tenant in
            let postgres = schema.postgres
            try await Self.caps(postgres, tenant, [FrequencyCap(limit: 1, window: .day)])
            let claimed = PolicyCandidate(messageId: UUID(), subscriberId: "a", category: nil)
            let chunk = PolicyCandidate(messageId: UUID(), subscriberId: "a", category: nil)
            let (held, release) = AsyncStream<Void>.makeStream()
            let (locked, signal) = AsyncStream<Void>.makeStream()
            async let claim: [PolicyCandidate: PolicyVerdict] = postgres.withTransaction { tx in
                try await Policy.lockCounters([(tenant, "b"), (tenant, "a")], on: tx)
                signal.yield()
                for await _ in held { break }
                return try await Policy.decide([claimed], tenant: tenant, now: Date(), on: tx)
            }
            for await _ in locked { break }
            async let sender = Policy(postgres: postgres).decide([chunk], tenant: tenant)
            try await Task.sleep(for: .milliseconds(300))
            release.yield()
            #expect(try await claim[claimed]?.suppressed == nil)
            #expect(try await sender[chunk]?.suppressed == .frequencyCapped)
        }
    }

    // MARK: - Support

    static func caps(_ postgres: PostgresClient, _ tenant: UUID, _ caps: [FrequencyCap]) async throws {
        try await postgres.execute(
            "INSERT INTO categories (tenant_id, key, name) VALUES ($1::uuid, 'news', 'News'), ($1::uuid, 'other', 'Other')",
            [tenant])
        try await postgres.withTransaction { tx in
            try await Policy.changeSettings(tenant: tenant, defaultCategory: nil, frequencyCaps: caps, on: tx)
        }
    }

    func withSchema(_ prefix: String, _ body: (MigratedSchema, UUID) async throws -> Void) async throws {
        let schema = try await MigratedSchema.start(prefix, poolSize: 4)
        let outcome: Result<Void, any Error>
        do {
            let tenant = try await schema.makeTenant()
            try await schema.postgres.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'a'), ($1::uuid, 'b')", [tenant])
            try await body(schema, tenant)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await schema.stop()
        try outcome.get()
    }
}
