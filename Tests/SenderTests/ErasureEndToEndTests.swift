import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Issue 30 end to end on real processes (gateway, ingest, workflow, apns-sender, liveactivity) and
/// the APNs simulator: a subscriber seeded everywhere is erased, then every text, JSON and array
/// column of every table is searched for their ids and device tokens; a person with 100,000 events
/// is erased in the background, also after the gateway that began it was killed part-way.
@Suite("subscriber erasure end to end", .serialized, .requiresTestStack)
struct ErasureEndToEndTests {
    static let welcome = #"""
        {"trigger": {"event": "signed.up"},
         "steps": [{"name": "hello", "send": {"title": "Welcome {{ trigger.data.name }}", "policy": "ignore"}}]}
        """#
    static let liked = #"""
        {"trigger": {"event": "photo.liked"},
         "steps": [{"name": "collect", "digest": {"window": "10m", "key": "{{ trigger.data.postId }}", "list": "data.actor"}},
                   {"name": "tell", "send": {"title": "{{ digest.list }} liked your photo", "policy": "ignore"}}]}
        """#

    /// Every (table, column) of the stack's schema holding text, JSON or arrays, with the rows
    /// where the column's text contains `needle`.
    static func search(_ stack: PushStack, _ needle: String) async throws -> [String] {
        let columns = try await stack.postgres.query(
            """
            SELECT c.table_name, c.column_name FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE'
              AND c.data_type IN ('text', 'jsonb', 'json', 'ARRAY', 'character varying', 'character')
            ORDER BY 1, 2
            """, [stack.schema]
        ).map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) }
        #expect(columns.count > 100, "the search found too few columns to mean anything: \(columns.count)")
        var found: [String] = []
        for (table, column) in columns {
            let rows = try await stack.postgres.query(
                "SELECT count(*)::int FROM \"\(table)\" WHERE position($1 IN \"\(column)\"::text) > 0", [needle])
            let n = try rows[0].decode(Int.self, at: 0)
            if n > 0 { found.append("\(table).\(column): \(n)") }
        }
        return found
    }

    /// Polls `GET /v1/erasures/{id}` until it says completed.
    static func waitErased(_ stack: PushStack, _ id: String, baseURL: String? = nil, limit: Duration = .seconds(120))
        async throws -> JSONValue
    {
        var last: JSONValue = .null
        let done = try await RedisTestSupport.eventually(limit: limit) {
            let reply = try await stack.api("GET", "/v1/erasures/\(id)", baseURL: baseURL)
            last = reply.data ?? .null
            return last["status"] == "completed"
        }
        guard done else { throw StackError(description: "erasure \(id) did not complete: \(last)") }
        return last
    }

    @Test("a subscriber seeded everywhere is erased: no table holds their ids or tokens, message counts unchanged")
    func erasedEverywhere() async throws {
        try await withPushStack(gatewaySettings: ["BUZZKIT_ERASURE_INTERVAL": "200ms"]) { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)
            _ = try await stack.startLiveActivity()
            let suffix = String(UUID().uuidString.lowercased().prefix(13))
            let person = "erase-me-\(suffix)"
            let anonymous = "anon-\(suffix)"
            let keeper = "keeper-\(suffix)"
            let tokens = [PushStack.token(), PushStack.token()]
            let keeperToken = PushStack.token()
            let activityToken = PushStack.token()
            let startToken = PushStack.token()
            try await stack.addSubscriber(person, tokens: tokens)
            try await stack.addSubscriber(keeper, tokens: [keeperToken])
            try await stack.postgres.execute(
                "INSERT INTO subscriber_aliases (tenant_id, anonymous_id, subscriber_id) VALUES ($1::uuid, $2, $3)",
                [stack.tenantID, anonymous, person])
            try await stack.subscribe([person, keeper], topic: "news")
            // A preference (its row and its history name the person); none of the sends below is
            // in that category.
            #expect(try await stack.api("PUT", "/v1/categories/offers", body: ["name": "Offers"]).status == 201)
            let preference = try await stack.api(
                "PUT", "/v1/subscribers/\(person)/preferences", body: ["categories": ["offers": false]])
            #expect(preference.status == 200, "\(preference.envelope)")

            // Workflow runs: one that sends (its title names the person), one digest left open.
            try await stack.putWorkflow("welcome", Self.welcome)
            try await stack.putWorkflow("liked", Self.liked)
            try await stack.track(person, [("su-\(suffix)", "signed.up", ["name": .string(person)])])
            try await stack.track(
                person,
                (0..<3).map { ("lk\($0)-\(suffix)", "photo.liked", ["postId": "p1", "actor": "Ana"]) })
            try await stack.track(anonymous, [("an-\(suffix)", "app.opened", [:])])
            try await stack.waitRuns("welcome", count: 1, limit: .seconds(60)) { $0.status == "completed" }
            let digested = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                try await stack.postgres.query("SELECT count(*)::int FROM workflow_digest_events")[0]
                    .decode(Int.self, at: 0) == 3
            }
            #expect(digested)

            // An endpoint for delivery.sent (no webhooks replica: the batches, the person's ids and
            // tokens in their columns, wait in the outbox).
            let endpoint = UUID()
            try await stack.postgres.execute(
                """
                INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, secret_sealed)
                VALUES ($1::uuid, $2::uuid, 'https://example.com/hook', '{delivery.sent}', '\\x00'::bytea)
                """, [endpoint, stack.tenantID])
            try await stack.postgres.execute(
                "INSERT INTO webhook_subscriptions (tenant_id, event_type, endpoint_id) VALUES ($1::uuid, 'delivery.sent', $2::uuid)",
                [stack.tenantID, endpoint])

            // Sends through the real path: to the person alone (their id in its data), to a topic
            // they share with the keeper; a Live Activity and a push-to-start token.
            let direct = try await stack.send([
                "to": [.string(person)], "title": "Your order", "body": "It shipped", "data": ["user": .string(person)]
            ])
            let topic = try await stack.send(["topic": "news", "title": "News for everyone"])
            try await stack.registerActivity(person, "act-\(suffix)", token: activityToken)
            try await stack.registerStartToken(person, token: startToken)
            let update = try await stack.sendLiveActivity([
                "to": .string(person), "event": "update", "activityId": .string("act-\(suffix)"),
                "contentState": ["score": 1]
            ])
            #expect(update.status == 200, "\(update.envelope)")
            var messages = [direct, topic]
            for id in messages { _ = try await stack.waitSettled(id) }
            _ = try await stack.alerts(tokens[0], atLeast: 2)
            let sent = try await stack.postgres.query(
                "SELECT DISTINCT message_id::text FROM deliveries WHERE subscriber_id = $1", [person]
            ).map { try $0.decode(String.self, at: 0) }
            messages = Array(Set(messages + sent)).sorted()
            #expect(messages.count >= 4, "direct, topic, the workflow's and the Live Activity's: \(messages)")
            var before: [String: JSONValue] = [:]
            for id in messages { before[id] = try await stack.api("GET", "/v1/messages/\(id)").data?["counts"] }
            let needles = [person, anonymous] + tokens + [activityToken, startToken]
            #expect(try await Self.search(stack, person).count > 5, "the seed must reach many tables")

            let erased = try await stack.api("DELETE", "/v1/subscribers/\(person)")
            #expect(erased.status == 200 || erased.status == 202, "\(erased.envelope)")
            #expect(erased.data?["deleted"] == true)
            let erasureID = try #require(erased.data?["erasure"]?["id"]?.stringValue)
            let record = try await Self.waitErased(stack, erasureID)
            let removed = record["removed"]
            #expect(removed?["devices"] == 2 && removed?["aliases"] == 1 && removed?["topicSubscriptions"] == 1)
            #expect(removed?["liveActivities"] == 1 && removed?["pushToStartTokens"] == 1)
            #expect((removed?["events"]?.intValue ?? 0) >= 5, "\(record)")
            #expect(removed?["workflowRuns"] == 2 && removed?["digestEvents"] == 3, "\(record)")
            #expect((record["anonymised"]?["deliveries"]?.intValue ?? 0) >= 6, "\(record)")
            // The delivery.sent batches that named the person, rewritten element by element.
            #expect((record["anonymised"]?["webhookEvents"]?.intValue ?? 0) >= 2, "\(record)")
            #expect(record["subjectHash"]?.stringValue?.count == 64)

            for needle in needles {
                let found = try await Self.search(stack, needle)
                #expect(found.isEmpty, "\(needle == person ? "the subscriber id" : needle) is still in \(found)")
            }
            // The keeper is untouched: the same search finds them (it can find what is there).
            #expect(!(try await Self.search(stack, keeperToken)).isEmpty)
            #expect(try await stack.api("GET", "/v1/subscribers/\(keeper)").status == 200)
            for id in messages {
                let after = try await stack.api("GET", "/v1/messages/\(id)").data?["counts"]
                #expect(
                    after == before[id],
                    "message \(id): \(String(describing: before[id])) then \(String(describing: after))")
            }

            // The push to the person alone keeps its shape without what it said or who it was for.
            let kept = try await stack.api("GET", "/v1/messages/\(direct)").data
            #expect(kept?["target"]?["to"] == ["(erased)"], "\(String(describing: kept))")
            #expect(kept?["content"]?["title"] == nil && kept?["content"]?["data"] == nil)

            // Again: the same erasure, nothing deleted, nothing more done.
            let again = try await stack.api("DELETE", "/v1/subscribers/\(person)")
            #expect(again.status == 200 && again.data?["deleted"] == false)
            #expect(again.data?["erasure"]?["id"]?.stringValue == erasureID)
            #expect(again.data?["erasure"]?["removed"] == removed)
            #expect(try await stack.api("GET", "/v1/subscribers/\(person)").status == 404)
        }
    }

    @Test("100,000 events: 202, finished in the background, also after the gateway is killed part-way")
    func largeHistoryAfterKill() async throws {
        let settings = [
            "BUZZKIT_ERASURE_REQUEST_BUDGET": "100ms", "BUZZKIT_ERASURE_BATCH_SIZE": "500",
            "BUZZKIT_ERASURE_INTERVAL": "100ms"
        ]
        try await withPushStack(gatewaySettings: settings) { stack in
            let person = "big-\(UUID().uuidString.lowercased().prefix(13))"
            try await stack.addSubscriber(person, tokens: [PushStack.token()])
            try await stack.postgres.execute(
                """
                INSERT INTO events (tenant_id, event_id, name, subscriber_id, data, occurred_at)
                SELECT $1::uuid, 'ev-' || g, 'page.viewed', $2, '{}', now() - make_interval(hours => g % 8000)
                FROM generate_series(1, 100000) AS g
                """, [stack.tenantID, person])
            let events = { @Sendable () async throws -> Int in
                try await stack.postgres.query(
                    "SELECT count(*)::int FROM events WHERE tenant_id = $1::uuid AND subscriber_id = $2",
                    [stack.tenantID, person])[0].decode(Int.self, at: 0)
            }
            let erased = try await stack.api("DELETE", "/v1/subscribers/\(person)")
            #expect(erased.status == 202, "\(erased.envelope)")
            #expect(erased.data?["erasure"]?["status"] == "running")
            let erasureID = try #require(erased.data?["erasure"]?["id"]?.stringValue)
            // The gateway that began it dies with the work part-way.
            stack.gateway.signal(SIGKILL)
            _ = await stack.gateway.waitForExit(timeout: .seconds(10))
            let left = try await events()
            #expect(left > 0 && left < 100_000, "the kill must come part-way: \(left) events left")

            let next = try await stack.startGateway()
            // Other traffic is served while the erasure runs.
            let other = try await stack.api(
                "PUT", "/v1/subscribers/someone-else", body: ["attributes": ["plan": "pro"]], baseURL: next.url)
            #expect(other.status == 201)
            let record = try await Self.waitErased(stack, erasureID, baseURL: next.url)
            #expect(try await events() == 0)
            // Counted exactly once each, although a gateway died between batches.
            #expect(record["removed"]?["events"] == 100_000, "\(record)")
            #expect(record["removed"]?["devices"] == 1)
            #expect(try await Self.search(stack, person).isEmpty)
        }
    }
}
