import BuzzKitLedger
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// The routes the dashboard added to the public API: the calling key, the message list, subscriber
/// search and topics, the payload preview and the overview's aggregates.
@Suite("Dashboard API routes", .requiresTestStack)
struct DashboardAPITests {
    @Test func theCallingKeyDescribesItself() async throws {
        try await withGateway { h in
            let workspace = try await h.send("GET", "/v1/key", key: h.workspaceKey)
            #expect(
                workspace.status == 200 && workspace.data?["kind"] == "workspace"
                    && workspace.data?["tenantId"] == .null)
            #expect(workspace.data?["scopes"]?.arrayValue?.count == Scope.all.count)
            #expect(workspace.data?["secret"] == nil)
            let tenant = try await h.send("GET", "/v1/key", key: h.tenantKey)
            #expect(tenant.data?["kind"] == "tenant" && tenant.data?["tenantId"]?.stringValue == h.tenantID)
            let client = try await h.send("GET", "/v1/key", key: h.clientKey)
            #expect(client.status == 200 && client.data?["kind"] == "client")
            #expect(try await h.send("GET", "/v1/key").status == 401)
            // A revoked key is refused at once.
            let secret = try await h.createKey(scopes: ["messages:read"], tenant: h.tenantID)
            let id = try #require(try await h.send("GET", "/v1/key", key: secret).data?["id"]?.stringValue)
            #expect(try await h.send("DELETE", "/v1/api-keys/\(id)", key: h.workspaceKey).status == 200)
            let revoked = try await h.send("GET", "/v1/key", key: secret)
            #expect(revoked.status == 401 && revoked.code == "unauthorized")
        }
    }

    @Test func messagesAreListedNewestFirstInStablePages() async throws {
        try await withGateway { h in
            // 7 messages, two of them at the same instant (the id breaks the tie), one with deliveries.
            var ids: [String] = []
            for n in 0..<7 {
                let id = UUID().uuidString.lowercased()
                let at = "2026-01-01T00:00:0\(n == 3 ? 2 : n)Z"
                try await h.postgres.execute(
                    """
                    INSERT INTO messages (id, message_time, tenant_id, target, content, created_at, status, audience_size)
                    VALUES ($1::uuid, $4::timestamptz, $2::uuid, '{"topic":"news"}', $3::jsonb, $4::timestamptz,
                            'fanned_out', 2)
                    """, [id, h.tenantID, JSONValue.object(["title": .string("m\(n)")]), at])
                ids.append(id)
            }
            try await h.postgres.execute(
                """
                INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id, environment,
                                        status)
                SELECT gen_random_uuid(), $1::uuid, $2::uuid, m.message_time, d.token, d.subscriber, 'sandbox', d.status
                FROM messages m, (VALUES ('a', 's1', 'sent'), ('b', 's2', 'failed')) AS d(token, subscriber, status)
                WHERE m.id = $2::uuid
                """, [h.tenantID, ids[6]])
            try await h.postgres.execute(
                """
                INSERT INTO message_receipt_counts (tenant_id, message_id, delivered, opened) VALUES ($1::uuid, $2, 1, 1)
                """, [h.tenantID, ids[6]])
            var seen: [String] = []
            var cursor: String?
            repeat {
                let reply = try await h.send(
                    "GET", "/v1/messages?limit=3" + (cursor.map { "&cursor=\($0)" } ?? ""), key: h.tenantKey)
                #expect(reply.status == 200)
                seen += reply.items.compactMap { $0["id"]?.stringValue }
                cursor = reply.envelope.metadata["cursor"]?.stringValue
            } while cursor != nil
            let tie = ids[3] > ids[2] ? [ids[3], ids[2]] : [ids[2], ids[3]]
            #expect(seen == [ids[6], ids[5], ids[4]] + tie + [ids[1], ids[0]])
            let first = try await h.send("GET", "/v1/messages?limit=1", key: h.tenantKey)
            #expect(first.items.first?["counts"]?["sent"] == 1 && first.items.first?["counts"]?["failed"] == 1)
            #expect(first.items.first?["counts"]?["queued"] == 0)
            #expect(first.items.first?["receipts"]?["opened"] == 1)
            #expect(try await h.send("GET", "/v1/messages?status=failed", key: h.tenantKey).items.isEmpty)
            #expect(try await h.send("GET", "/v1/messages?status=nope", key: h.tenantKey).status == 422)
            let forged = "/v1/messages?cursor=" + Base64URLText.encode("k:9999-99-99T00:00:00Z|" + ids[0])
            #expect(try await h.send("GET", forged, key: h.tenantKey).status == 422)
            // Another tenant sees none of them.
            let other = try await h.createTenant("other")
            #expect(try await h.send("GET", "/v1/messages", key: other.key).items.isEmpty)
        }
    }

    @Test func subscribersAreSearchedByIdPrefixAndListTheirTopics() async throws {
        try await withGateway { h in
            for id in ["anna", "anne", "ann", "bob", "an%_x", "Anna"] {
                #expect(
                    try await h.send(
                        "PUT", "/v1/subscribers/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                        key: h.tenantKey
                    ).status == 201)
            }
            func search(_ prefix: String, limit: Int = 50) async throws -> [String] {
                let q = prefix.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                var ids: [String] = []
                var cursor: String?
                repeat {
                    let reply = try await h.send(
                        "GET", "/v1/subscribers?limit=\(limit)&prefix=\(q)" + (cursor.map { "&cursor=\($0)" } ?? ""),
                        key: h.tenantKey)
                    #expect(reply.status == 200)
                    ids += reply.items.compactMap { $0["id"]?.stringValue }
                    cursor = reply.envelope.metadata["cursor"]?.stringValue
                } while cursor != nil
                return ids
            }
            #expect(try await search("ann") == ["ann", "anna", "anne"])
            #expect(try await search("ann", limit: 1) == ["ann", "anna", "anne"])
            #expect(try await search("an%") == ["an%_x"])  // LIKE's wildcards are plain characters
            #expect(try await search("A") == ["Anna"])
            #expect(try await search("zzz").isEmpty)
            #expect(try await h.send("GET", "/v1/subscribers?prefix=%01", key: h.tenantKey).status == 422)

            #expect(
                try await h.send("PUT", "/v1/topics/sports", key: h.tenantKey, body: ["name": "Sports"]).status == 201)
            #expect(try await h.send("PUT", "/v1/topics/news", key: h.tenantKey).status == 201)
            for topic in ["sports", "news"] {
                #expect(
                    try await h.send(
                        "POST", "/v1/topics/\(topic)/subscribers", key: h.tenantKey, body: ["ids": ["anna"]]
                    ).status == 200)
            }
            let topics = try await h.send("GET", "/v1/subscribers/anna/topics", key: h.tenantKey)
            #expect(topics.items.map { $0["key"]?.stringValue } == ["news", "sports"])
            #expect(topics.items.last?["name"] == "Sports")
            #expect(try await h.send("GET", "/v1/subscribers/bob/topics", key: h.tenantKey).items.isEmpty)
            #expect(try await h.send("GET", "/v1/subscribers/nobody/topics", key: h.tenantKey).status == 404)
        }
    }

    @Test func thePreviewIsThePayloadTheSenderBuilds() async throws {
        try await withGateway { h in
            let body: JSONValue = [
                "title": "Hello", "body": "World", "data": ["orderId": 42], "deepLink": "demo://orders/42",
                "action": ["name": "open_order", "data": ["id": 42]], "image": "https://example.com/a.jpg",
                "sound": "default",
                "badge": 3, "interruptionLevel": "time-sensitive",
                "actions": [["id": "view", "title": "View"], ["id": "stop", "title": "Stop", "destructive": true]],
                "collapseId": "order-42"
            ]
            let reply = try await h.send("POST", "/v1/messages/preview", key: h.tenantKey, body: body)
            #expect(reply.status == 200)
            let content = try MessageContent.validate(body).get()
            let expected = PushPayload(content: content, messageId: "00000000-0000-0000-0000-000000000000").encode()
            #expect(reply.data?["payload"]?.stringValue == String(decoding: expected, as: UTF8.self))
            #expect(reply.data?["size"]?.intValue == Int64(expected.count))
            #expect(reply.data?["headers"]?["apns-push-type"] == "alert")
            #expect(reply.data?["headers"]?["apns-collapse-id"] == "order-42")
            // With a target, the target is checked too; nothing is sent either way.
            let targeted = try await h.send(
                "POST", "/v1/messages/preview", key: h.tenantKey,
                body: ["where": "plan ==", "title": "x"])
            #expect(targeted.status == 422 && targeted.envelope.error?.details?.arrayValue?.first?["path"] == "where")
            let invalid = try await h.send(
                "POST", "/v1/messages/preview", key: h.tenantKey,
                body: ["title": "x", "badge": -1, "actions": [["id": "a"]], "nonsense": true])
            #expect(invalid.status == 422)
            let paths = Set(invalid.envelope.error?.details?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? [])
            #expect(paths.isSuperset(of: ["badge", "nonsense"]))
            let count = try await h.postgres.query("SELECT count(*) FROM messages", [])
            #expect(try count.first?.decode(Int.self, at: 0) == 0)
        }
    }

    @Test func theOverviewAggregatesCountTheWindow() async throws {
        try await withGateway { h in
            // A message an hour ago: 3 devices of 2 subscribers sent, 1 failed (Unregistered), one
            // subscriber delivered and opened. One 3 days ago: 1 sent. One 10 days ago: outside both.
            func message(_ ago: String, _ deliveries: [(String, String, String?)]) async throws -> String {
                let id = UUID().uuidString.lowercased()
                try await h.postgres.execute(
                    """
                    INSERT INTO messages (id, message_time, tenant_id, target, content, created_at, status)
                    VALUES ($1::uuid, now() - $3::interval, $2::uuid, '{"topic":"t"}', '{"title":"x"}', now() - $3::interval,
                            'fanned_out')
                    """, [id, h.tenantID, ago])
                for (n, d) in deliveries.enumerated() {
                    try await h.postgres.execute(
                        """
                        INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id,
                                                environment, status, last_reason, sent_at)
                        VALUES (gen_random_uuid(), $1::uuid, $2::uuid, (SELECT message_time FROM messages WHERE id = $2::uuid),
                                $3, $4, 'sandbox', $5, $6,
                                CASE WHEN $5 = 'sent' THEN now() - $7::interval END)
                        """, [h.tenantID, id, "tok\(n)", d.0, d.1, d.2, ago])
                }
                return id
            }
            let recent = try await message(
                "1 hour",
                [
                    ("s1", "sent", nil), ("s1", "sent", nil), ("s2", "sent", nil),
                    ("s3", "invalid_token", "Unregistered")
                ])
            _ = try await message("3 days", [("s4", "sent", nil)])
            _ = try await message("10 days", [("s5", "sent", nil)])
            try await h.postgres.execute(
                """
                INSERT INTO message_receipt_counts (tenant_id, message_id, delivered, opened) VALUES ($1::uuid, $2, 1, 1)
                """, [h.tenantID, recent])
            let day = try await h.send("GET", "/v1/stats/messages?window=24h", key: h.tenantKey)
            #expect(day.status == 200)
            #expect(day.data?["messages"] == 1)
            #expect(day.data?["deliveries"]?["sent"] == 3 && day.data?["deliveries"]?["invalid_token"] == 1)
            #expect(day.data?["funnel"] == ["sent": 2, "delivered": 1, "opened": 1])
            #expect(day.data?["series"]?.arrayValue?.count == 24)
            #expect(day.data?["series"]?.arrayValue?.reduce(0) { $0 + ($1["sent"]?.intValue ?? 0) } == 3)
            #expect(day.data?["failures"] == [["reason": "Unregistered", "status": "invalid_token", "count": 1]])
            let week = try await h.send("GET", "/v1/stats/messages?window=7d", key: h.tenantKey)
            #expect(week.data?["messages"] == 2 && week.data?["funnel"]?["sent"] == 3)
            #expect(week.data?["series"]?.arrayValue?.count == 7)
            #expect(try await h.send("GET", "/v1/stats/messages?window=1y", key: h.tenantKey).status == 422)

            // Across the ledger's retention pass dropping weeks (here the empty weeks ahead, a
            // month on; the legacy week is kept: its sends are still going), the same answers.
            let pass = try await LedgerRetention(postgres: h.postgres, retentionDays: 7)
                .maintain(now: Date().addingTimeInterval(30 * 86_400))
            #expect(
                pass.dropped.contains { $0.hasPrefix("deliveries_p") } && pass.kept.map(\.week) == ["messages_legacy"])
            let dayAfter = try await h.send("GET", "/v1/stats/messages?window=24h", key: h.tenantKey)
            #expect(dayAfter.status == 200)
            for field in ["messages", "deliveries", "funnel", "failures"] {
                #expect(dayAfter.data?[field] == day.data?[field], "\(field)")
            }
            let weekAfter = try await h.send("GET", "/v1/stats/messages?window=7d", key: h.tenantKey)
            #expect(weekAfter.data?["messages"] == 2 && weekAfter.data?["funnel"]?["sent"] == 3)

            // Events: per hour over 24 h and per name; older ones are outside.
            for (n, (name, ago)) in [
                ("app.opened", "10 minutes"), ("app.opened", "2 hours"), ("$app.opened", "3 hours"),
                ("old.event", "3 days")
            ].enumerated() {
                try await h.postgres.execute(
                    """
                    INSERT INTO events (tenant_id, event_id, name, subscriber_id, occurred_at) VALUES ($1::uuid, $2, $3, 's1', now() - $4::interval)
                    """, [h.tenantID, "e\(n)", name, ago])
            }
            let events = try await h.send("GET", "/v1/stats/events", key: h.tenantKey)
            #expect(events.status == 200 && events.data?["total"] == 3)
            #expect(events.data?["hours"]?.arrayValue?.count == 24)
            #expect(
                events.data?["names"] == [
                    ["name": "app.opened", "count": 2, "reserved": false],
                    ["name": "$app.opened", "count": 1, "reserved": true]
                ])
            let other = try await h.createTenant("elsewhere")
            #expect(try await h.send("GET", "/v1/stats/events", key: other.key).data?["total"] == 0)
            #expect(try await h.send("GET", "/v1/stats/messages", key: other.key).data?["messages"] == 0)
        }
    }
}

/// `Base64URL` of a text (the cursors' encoding), for forging a cursor.
enum Base64URLText {
    static func encode(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}
