import BuzzKitCore
import BuzzKitLedger
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import APNsSenderApp

/// `UncategorizedPolicy`: what the policy decides for pushes naming no category without its
/// decision statement (read with a chunk's claim). It must answer exactly what `decide`'s
/// statement answers, and exist only where nothing but the global opt-out can apply; every
/// setting that governs an uncategorized push (a default category: its switch, its default, its
/// criticality and its caps; a cap without a category) leaves it nil, so those pushes are still
/// decided, and counted, by the statement.
@Suite("Uncategorized send policy", .serialized, .requiresTestStack)
struct UncategorizedPolicyTests {
    /// No settings, or caps of a category only: the global opt-out is all there is, answered
    /// without the statement exactly as the statement answers, and nothing is counted.
    @Test("without a default category or an uncategorized cap, only the global opt-out applies")
    func onlyTheGlobalOptOut() async throws {
        for caps in [[], [FrequencyCap(category: "news", limit: 1, window: .day)]] {
            try await withSchema("uncatplain") { postgres, tenant in
                try await Self.settings(postgres, tenant, defaultCategory: nil, caps: caps)
                try await Self.optOut(postgres, tenant, "a")
                try await Self.turnOff(postgres, tenant, "b", category: "news")
                let policy = Policy(postgres: postgres)
                let probe = try #require(try await policy.uncategorized(tenant: tenant, subscribers: ["a", "b", "c"]))
                #expect(probe.unsubscribed == ["a"])
                let plain = ["a", "b", "c"].map { PolicyCandidate(messageId: UUID(), subscriberId: $0, category: nil) }
                let fast = try await policy.decide(plain, tenant: tenant, uncategorized: probe)
                let statement = try await policy.decide(plain, tenant: tenant)
                #expect(fast == statement, "caps \(caps)")
                #expect(plain.map { fast[$0]?.suppressed } == [.unsubscribed, nil, nil])
                #expect(try await Self.counters(postgres, tenant) == 0)
            }
        }
    }

    /// A list mixing categorized and uncategorized pushes: the categorized ones are still decided
    /// (and counted) by the statement, the others from the probe.
    @Test("categorized pushes beside uncategorized ones are still decided by the statement")
    func categorizedStillDecided() async throws {
        try await withSchema("uncatmixed") { postgres, tenant in
            try await Self.settings(
                postgres, tenant, defaultCategory: nil, caps: [FrequencyCap(category: "news", limit: 1, window: .day)])
            try await Self.optOut(postgres, tenant, "a")
            try await Self.turnOff(postgres, tenant, "b", category: "news")
            let policy = Policy(postgres: postgres)
            let probe = try #require(try await policy.uncategorized(tenant: tenant, subscribers: ["a", "b", "c"]))
            let message = UUID()
            let candidates = [
                PolicyCandidate(messageId: message, subscriberId: "a", category: nil),
                PolicyCandidate(messageId: message, subscriberId: "c", category: nil),
                PolicyCandidate(messageId: UUID(), subscriberId: "a", category: "news"),
                PolicyCandidate(messageId: UUID(), subscriberId: "b", category: "news"),
                PolicyCandidate(messageId: UUID(), subscriberId: "c", category: "news")
            ]
            let verdicts = try await policy.decide(candidates, tenant: tenant, uncategorized: probe)
            #expect(
                candidates.map { verdicts[$0]?.suppressed } == [
                    .unsubscribed, nil, .unsubscribed, .categoryDisabled, nil
                ])
            #expect(verdicts[candidates[4]]?.category == "news")
            // The news push to c was counted by the statement: the next one is capped.
            let next = PolicyCandidate(messageId: UUID(), subscriberId: "c", category: "news")
            #expect(
                try await policy.decide([next], tenant: tenant, uncategorized: probe)[next]?.suppressed
                    == .frequencyCapped)
        }
    }

    /// Each setting that governs an uncategorized push leaves the probe nil, and the statement
    /// decides what it must: a default category switched off by the subscriber or off by
    /// default (`category_disabled`), a critical default category (goes out to an opted-out
    /// subscriber), a cap without a category or one of the default category (`frequency_capped`
    /// after the limit).
    @Test("a default category or an uncategorized cap sends every uncategorized push to the statement")
    func settingsThatGovernUncategorizedPushes() async throws {
        typealias Case = (
            name: String, defaultCategory: String?, caps: [FrequencyCap], expected: [SuppressionReason?]
        )
        // Candidates: a (opted out), b (turned news off), c twice (two messages).
        let cases: [Case] = [
            ("default category news", "news", [], [.unsubscribed, .categoryDisabled, nil, nil]),
            (
                "default category off by default", "quiet", [],
                [.unsubscribed, .categoryDisabled, .categoryDisabled, .categoryDisabled]
            ),
            ("critical default category", "alerts", [], [nil, nil, nil, nil]),
            (
                "cap without a category", nil, [FrequencyCap(limit: 1, window: .day)],
                [.unsubscribed, nil, nil, .frequencyCapped]
            ),
            (
                "cap of the default category", "other", [FrequencyCap(category: "other", limit: 1, window: .hour)],
                [.unsubscribed, nil, nil, .frequencyCapped]
            )
        ]
        for testCase in cases {
            try await withSchema("uncatgov") { postgres, tenant in
                try await Self.settings(
                    postgres, tenant, defaultCategory: testCase.defaultCategory, caps: testCase.caps)
                try await Self.optOut(postgres, tenant, "a")
                try await Self.turnOff(postgres, tenant, "b", category: "news")
                let policy = Policy(postgres: postgres)
                let probe = try await policy.uncategorized(tenant: tenant, subscribers: ["a", "b", "c"])
                #expect(probe == nil, "\(testCase.name)")
                let candidates = ["a", "b", "c", "c"].map {
                    PolicyCandidate(messageId: UUID(), subscriberId: $0, category: nil)
                }
                var answered: [SuppressionReason?] = []
                for candidate in candidates {
                    answered.append(
                        try await policy.decide([candidate], tenant: tenant, uncategorized: probe)[candidate]?
                            .suppressed)
                }
                #expect(answered == testCase.expected, "\(testCase.name)")
            }
        }
    }

    /// The probe in a claim's statement (`Ledger.claim(alongside:)` as the sender reads it): the
    /// chunk's subscribers that opted out, or nil.
    @Test("the probe reads a chunk's opted-out subscribers from its row")
    func probeOverChunkColumns() async throws {
        try await withSchema("uncatrow") { postgres, tenant in
            try await Self.optOut(postgres, tenant, "b")
            let sql =
                "SELECT \(Policy.uncategorizedSQL(tenant: "t.tenant_id", subscribers: "t.subscriber_ids")) FROM (SELECT $1::uuid AS tenant_id, $2::text[] AS subscriber_ids) t"
            let row = try #require(try await postgres.query(sql, [tenant, ["a", "b", "b", "c"]]).first)
            #expect(try Policy.uncategorized(row, at: 0) == UncategorizedPolicy(unsubscribed: ["b"]))
            try await Self.settings(postgres, tenant, defaultCategory: "news", caps: [])
            let governed = try #require(try await postgres.query(sql, [tenant, ["a", "b"]]).first)
            #expect(try Policy.uncategorized(governed, at: 0) == nil)
        }
    }

    /// The sender's claim (`DeliverySender.uncategorizedPolicy` in `Ledger.claim(alongside:)`)
    /// reads the claimed chunk's own tenant: another tenant's default category, its cap without
    /// a category and its subscriber of the same id who opted out change nothing here (a bare
    /// `tenant_id` inside the probe's subqueries named their own table's, so they did).
    @Test("the claim's probe reads the chunk's own tenant only")
    func claimReadsItsOwnTenant() async throws {
        try await withSchema("uncatclaim") { postgres, tenant in
            let workspace = try await postgres.query("INSERT INTO workspaces (name) VALUES ('w2') RETURNING id")[0]
                .decode(UUID.self, at: 0)
            let other = try await postgres.query(
                "INSERT INTO tenants (workspace_id, name) VALUES ($1::uuid, 'other') RETURNING id", [workspace]
            )[0].decode(UUID.self, at: 0)
            try await postgres.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'a')", [other])
            try await Self.optOut(postgres, other, "a")
            try await Self.settings(
                postgres, other, defaultCategory: nil, caps: [FrequencyCap(category: nil, limit: 1, window: .day)])
            try await Self.optOut(postgres, tenant, "c")
            let ledger = Ledger(postgres: postgres, logger: .silent())
            func claim() async throws -> UncategorizedPolicy? {
                let chunk = UUID()
                try await postgres.execute(
                    """
                    INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments)
                    VALUES ($1::uuid, $2::uuid, $3::uuid, ARRAY[$3::uuid, $3::uuid, $3::uuid], '{t1,t2,t3}', '{a,b,c}',
                            '{sandbox,sandbox,sandbox}')
                    """, [chunk, tenant, UUID()])
                let claimed = try #require(
                    try await ledger.claim(
                        chunk, tenant: tenant, instance: "r1", alongside: DeliverySender.uncategorizedPolicy))
                #expect(claimed.chunk.devices.map(\.subscriberId) == ["a", "b", "c"])
                return claimed.alongside
            }
            #expect(try await claim() == UncategorizedPolicy(unsubscribed: ["c"]))
            // This tenant's own cap without a category does govern: the statement decides.
            try await Self.settings(
                postgres, tenant, defaultCategory: nil, caps: [FrequencyCap(category: nil, limit: 1, window: .day)])
            #expect(try await claim() == nil)
        }
    }

    /// Through the fan-out (a topic send: its chunks are claimed with the probe) and a real
    /// sender: the opted-out subscriber's push is suppressed and never reaches APNs, the others go
    /// out; with a default category set between two sends, the second is decided by the
    /// statement (the subscriber who turned that category off is suppressed too).
    @Test("a topic send without a category: the opted-out subscriber is suppressed, then the default category applies")
    func topicSendThroughTheClaim() async throws {
        try await withPushStack { stack in
            #expect(try await stack.api("PUT", "/v1/categories/news", body: ["name": "News"]).status == 201)
            var tokens: [String: String] = [:]
            for id in ["out", "nonews", "plain"] {
                tokens[id] = PushStack.token()
                try await stack.addSubscriber(id, tokens: [tokens[id]!])
            }
            try await stack.subscribe(["out", "nonews", "plain"], topic: "everyone")
            #expect(try await stack.api("PUT", "/v1/subscribers/out/preferences", body: ["all": false]).status == 200)
            #expect(
                try await stack.api(
                    "PUT", "/v1/subscribers/nonews/preferences", body: ["categories": ["news": false]]
                ).status == 200)
            _ = try await stack.startSender("uncategorized-1")

            let first = try await stack.send(["topic": "everyone", "body": "No category"])
            let settled = try await stack.waitSettled(first)
            #expect(settled["counts"]?["suppressed"] == 1 && settled["counts"]?["sent"] == 2, "\(settled)")
            #expect(try await Self.reasons(stack, first) == ["out": "unsubscribed", "nonews": .null, "plain": .null])
            #expect(try await stack.simulator.pushes(token: tokens["out"]!).isEmpty)

            #expect(try await stack.api("PATCH", "/v1/settings", body: ["defaultCategory": "news"]).status == 200)
            let second = try await stack.send(["topic": "everyone", "body": "No category, news by default"])
            _ = try await stack.waitSettled(second)
            #expect(
                try await Self.reasons(stack, second) == [
                    "out": "unsubscribed", "nonews": "category_disabled", "plain": .null
                ])
            #expect(try await stack.simulator.pushes(token: tokens["out"]!).isEmpty)
            #expect(try await stack.simulator.pushes(token: tokens["nonews"]!).count == 1)
            #expect(try await stack.simulator.pushes(token: tokens["plain"]!).count == 2)
        }
    }

    // MARK: - Support

    static func reasons(_ stack: PushStack, _ message: String) async throws -> [String: JSONValue] {
        Dictionary(
            uniqueKeysWithValues: try await stack.deliveries(message).compactMap { d in
                d["subscriberId"]?.stringValue.map { ($0, d["suppressedReason"] ?? .null) }
            })
    }

    static func settings(_ postgres: PostgresClient, _ tenant: UUID, defaultCategory: String?, caps: [FrequencyCap])
        async throws
    {
        try await postgres.withTransaction { tx in
            try await Policy.changeSettings(
                tenant: tenant, defaultCategory: .some(defaultCategory), frequencyCaps: caps, on: tx)
        }
    }

    static func optOut(_ postgres: PostgresClient, _ tenant: UUID, _ subscriber: String) async throws {
        let changed = try await Policy(postgres: postgres).changePreferences(
            tenant: tenant, subscriber: subscriber, PreferenceChange(all: false), source: .api)
        #expect(changed != nil)
    }

    static func turnOff(_ postgres: PostgresClient, _ tenant: UUID, _ subscriber: String, category: String)
        async throws
    {
        let changed = try await Policy(postgres: postgres).changePreferences(
            tenant: tenant, subscriber: subscriber, PreferenceChange(categories: [category: false]), source: .api)
        #expect(changed != nil)
    }

    static func counters(_ postgres: PostgresClient, _ tenant: UUID) async throws -> Int {
        try await postgres.query(
            "SELECT count(*)::int FROM frequency_cap_counters WHERE tenant_id = $1::uuid", [tenant]
        ).first?.decode(Int.self, at: 0) ?? -1
    }

    /// A migrated schema with a tenant, subscribers a, b and c, and the categories news, other,
    /// quiet (off by default) and alerts (critical).
    func withSchema(_ prefix: String, _ body: (PostgresClient, UUID) async throws -> Void) async throws {
        let schema = try await MigratedSchema.start(prefix, poolSize: 4)
        let outcome: Result<Void, any Error>
        do {
            let tenant = try await schema.makeTenant()
            try await schema.postgres.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'a'), ($1::uuid, 'b'), ($1::uuid, 'c')",
                [tenant])
            try await schema.postgres.execute(
                """
                INSERT INTO categories (tenant_id, key, name, default_enabled, critical)
                VALUES ($1::uuid, 'news', 'News', true, false), ($1::uuid, 'other', 'Other', true, false),
                       ($1::uuid, 'quiet', 'Quiet', false, false), ($1::uuid, 'alerts', 'Alerts', true, true)
                """, [tenant])
            try await body(schema.postgres, tenant)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await schema.stop()
        try outcome.get()
    }
}
