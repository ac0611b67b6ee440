import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The send policy where deliveries are decided (issue 26): real gateway, apns-sender replicas,
/// APNs simulator and Postgres. A suppressed push is a `suppressed` delivery with its reason and
/// never reaches the simulator; caps are exact when two replicas race.
@Suite("Send policy end to end", .serialized, .requiresTestStack)
struct PolicyEndToEndTests {
    @Test(
        "opted-out and disabled pushes are suppressed with their reason, critical ones go out, counts and stats show them"
    )
    func suppressedPushesNeverReachAPNs() async throws {
        try await withPushStack { stack in
            for (key, body) in [
                ("marketing", ["name": "Marketing"]), ("promos", ["name": "Promos", "defaultEnabled": false]),
                ("security", ["name": "Security", "critical": true])
            ] as [(String, JSONValue)] {
                #expect(try await stack.api("PUT", "/v1/categories/\(key)", body: body).status == 201)
            }
            var tokens: [String: String] = [:]
            for id in ["out", "nomarketing", "plain"] {
                tokens[id] = PushStack.token()
                try await stack.addSubscriber(id, tokens: [tokens[id]!])
            }
            #expect(try await stack.api("PUT", "/v1/subscribers/out/preferences", body: ["all": false]).status == 200)
            #expect(
                try await stack.api(
                    "PUT", "/v1/subscribers/nomarketing/preferences", body: ["categories": ["marketing": false]]
                ).status == 200)
            let unknown = try await stack.api(
                "POST", "/v1/messages", body: ["to": "plain", "body": "x", "category": "nope"])
            #expect(unknown.status == 422 && unknown.envelope.error?.details?.arrayValue?.first?["path"] == "category")

            _ = try await stack.startSender("policy-1")
            let marketing = try await stack.send(
                ["to": ["out", "nomarketing", "plain"], "body": "Sale", "category": "marketing"])
            let promos = try await stack.send(["to": "plain", "body": "Promo", "category": "promos"])
            let security = try await stack.send(["to": ["out", "nomarketing"], "body": "Login", "category": "security"])
            let plainMessage = try await stack.send(["to": "out", "body": "No category"])

            let first = try await stack.waitSettled(marketing)
            #expect(first["counts"]?["suppressed"] == 2 && first["counts"]?["sent"] == 1, "\(first)")
            let reasons = Dictionary(
                uniqueKeysWithValues: try await stack.deliveries(marketing).compactMap { d in
                    d["subscriberId"]?.stringValue.map { ($0, d["suppressedReason"] ?? .null) }
                })
            #expect(reasons == ["out": "unsubscribed", "nomarketing": "category_disabled", "plain": .null])
            // Nothing went to APNs for a suppressed delivery: it has no apns-id; the sent one has.
            let apnsIds = Dictionary(
                uniqueKeysWithValues: try await stack.deliveries(marketing).compactMap { d in
                    d["subscriberId"]?.stringValue.map { ($0, d["apnsId"] ?? .null) }
                })
            #expect(
                apnsIds["out"] == .null && apnsIds["nomarketing"] == .null && apnsIds["plain"] != .null, "\(apnsIds)")
            let second = try await stack.waitSettled(promos)
            #expect(second["counts"]?["suppressed"] == 1, "\(second)")
            #expect(try await stack.deliveries(promos).first?["suppressedReason"] == "category_disabled")
            let third = try await stack.waitSettled(security)
            #expect(
                third["counts"]?["sent"] == 2 && (third["counts"]?["suppressed"]?.intValue ?? 0) == 0, "\(third)")
            // No category and no default category: only the global opt-out applies.
            let fourth = try await stack.waitSettled(plainMessage)
            #expect(try await stack.deliveries(plainMessage).first?["suppressedReason"] == "unsubscribed", "\(fourth)")

            // What reached APNs: the critical push for the two who opted out, the marketing one for plain.
            #expect(try await stack.simulator.pushes(token: tokens["out"]!).count == 1)
            #expect(try await stack.simulator.pushes(token: tokens["nomarketing"]!).count == 1)
            #expect(try await stack.simulator.pushes(token: tokens["plain"]!).count == 1)

            let stats = try await stack.api("GET", "/v1/stats/messages?window=24h")
            #expect(stats.data?["deliveries"]?["suppressed"] == 4, "\(stats.envelope)")
            #expect(stats.data?["deliveries"]?["sent"] == 3)
        }
    }

    /// Two replicas take a burst of messages to one subscriber (two devices) under a cap of 3 a
    /// day: exactly 3 messages reach both devices, every other one is `frequency_capped` on both.
    @Test("two replicas and a burst: a cap lets exactly its limit through")
    func twoReplicasRaceForTheLastSlots() async throws {
        try await withPushStack { stack in
            #expect(try await stack.api("PUT", "/v1/categories/news", body: ["name": "News"]).status == 201)
            let capped = try await stack.api(
                "PATCH", "/v1/settings", body: ["frequencyCaps": [["limit": 3, "window": "1d"]]])
            #expect(capped.status == 200, "\(capped.envelope)")
            let devices = [PushStack.token(), PushStack.token()]
            try await stack.addSubscriber("busy", tokens: devices)
            _ = try await stack.startSender("policy-a")
            _ = try await stack.startSender("policy-b")
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for n in 0..<16 {
                    group.addTask {
                        try await stack.send(["to": "busy", "body": .string("Burst \(n)"), "category": "news"])
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            var through = 0
            for id in ids {
                let settled = try await stack.waitSettled(id)
                let counts = settled["counts"]
                if counts?["sent"] == 2 {
                    through += 1
                } else {
                    #expect(counts?["suppressed"] == 2, "\(settled)")
                    #expect(
                        try await stack.deliveries(id).allSatisfy { $0["suppressedReason"] == "frequency_capped" })
                }
            }
            #expect(through == 3)
            for token in devices { #expect(try await stack.simulator.pushes(token: token).count == 3) }
        }
    }

    /// The decision itself, two connections racing for a subscriber's last slot with the first
    /// one's transaction held open: the second waits on the counter row and then sees the slot
    /// taken. Its first capped push included (the counter row does not exist yet).
    @Test("two deciders racing for the last slot: the second waits and is capped")
    func deciderRaceIsExact() async throws {
        let schema = try await MigratedSchema.start("policyrace", poolSize: 4)
        let outcome: Result<Void, any Error>
        do {
            try await Self.race(schema.postgres)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await schema.stop()
        try outcome.get()
    }

    /// A cap on one category counts that category only: the tenant's other pushes (another
    /// category, none) go out without touching a counter row, also beside a capped push to the same
    /// subscriber in the same decision.
    @Test("a category's cap counts that category only; other pushes touch no counter")
    func aCategoryCapCountsOnlyItsCategory() async throws {
        let schema = try await MigratedSchema.start("policycat", poolSize: 2)
        let outcome: Result<Void, any Error>
        do {
            let postgres = schema.postgres
            let tenant = try await schema.makeTenant()
            try await postgres.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'busy'), ($1::uuid, 'calm')", [tenant])
            try await postgres.execute(
                "INSERT INTO categories (tenant_id, key, name) VALUES ($1::uuid, 'news', 'News'), ($1::uuid, 'other', 'Other')",
                [tenant])
            try await postgres.withTransaction { tx in
                try await Policy.changeSettings(
                    tenant: tenant, defaultCategory: nil,
                    frequencyCaps: [FrequencyCap(category: "news", limit: 1, window: .day)], on: tx)
            }
            let news = [UUID(), UUID()].map { PolicyCandidate(messageId: $0, subscriberId: "busy", category: "news") }
            let other = PolicyCandidate(messageId: UUID(), subscriberId: "busy", category: "other")
            let plain = PolicyCandidate(messageId: UUID(), subscriberId: "busy", category: nil)
            let calm = PolicyCandidate(messageId: UUID(), subscriberId: "calm", category: "other")
            let verdicts = try await Policy(postgres: postgres).decide(news + [other, plain, calm], tenant: tenant)
            #expect(verdicts[news[0]]?.suppressed == nil)
            #expect(verdicts[news[1]]?.suppressed == .frequencyCapped)
            #expect(verdicts[other]?.suppressed == nil && verdicts[plain]?.suppressed == nil)
            #expect(verdicts[calm]?.suppressed == nil)
            let counters = try await postgres.query(
                """
                SELECT subscriber_id, cardinality(messages) FROM frequency_cap_counters
                WHERE tenant_id = $1::uuid ORDER BY subscriber_id
                """, [tenant])
            #expect(counters.count == 1)
            #expect(try counters.first?.decode(String.self, at: 0) == "busy")
            #expect(try counters.first?.decode(Int.self, at: 1) == 1)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await schema.stop()
        try outcome.get()
    }

    static func race(_ postgres: PostgresClient) async throws {
        let tenant = UUID()
        try await postgres.execute(
            """
            WITH w AS (INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), 'w') RETURNING id)
            INSERT INTO tenants (id, workspace_id, name) SELECT $1::uuid, w.id, 't' FROM w
            """, [tenant])
        try await postgres.execute("INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'busy')", [tenant])
        try await postgres.withTransaction { tx in
            try await Policy.changeSettings(
                tenant: tenant, defaultCategory: nil,
                frequencyCaps: [FrequencyCap(limit: 2, window: .day)], on: tx)
        }
        let first = [UUID(), UUID()].map { PolicyCandidate(messageId: $0, subscriberId: "busy", category: nil) }
        let late = PolicyCandidate(messageId: UUID(), subscriberId: "busy", category: nil)
        let (held, release) = AsyncStream<Void>.makeStream()
        let (decided, signal) = AsyncStream<Void>.makeStream()
        async let holder: [PolicyCandidate: PolicyVerdict] = postgres.withTransaction { tx in
            let verdicts = try await Policy.decide(first, tenant: tenant, now: Date(), on: tx)
            signal.yield()
            for await _ in held { break }
            return verdicts
        }
        for await _ in decided { break }
        let policy = Policy(postgres: postgres)
        async let racer = policy.decide([late], tenant: tenant)
        try await Task.sleep(for: .milliseconds(500))
        release.yield()
        let firstVerdicts = try await holder
        let lateVerdicts = try await racer
        #expect(first.allSatisfy { firstVerdicts[$0]?.suppressed == nil })
        #expect(lateVerdicts[late]?.suppressed == .frequencyCapped)
        // Deciding a message already counted again lets it through (a resent chunk, a second device).
        let again = try await policy.decide([first[0]], tenant: tenant)
        #expect(again[first[0]]?.suppressed == nil)
    }
}
