import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWebhooks
import BuzzKitWire
import Foundation
import Testing

/// Outbound webhooks end to end (issue 27): the gateway's routes, the producers' seam, the
/// webhooks service's delivery (signing, retries, Retry-After, leases, disabling) against a
/// receiver that verifies every request with the `standardwebhooks` package from PyPI and checks
/// every body against the API document with `jsonschema`: tools BuzzKit did not write.
@Suite("webhooks end to end", .serialized, .requiresTestStack)
struct WebhookEndToEndTests {
    @Test("a test event, receipts, a removed device and a preference change arrive signed and as documented")
    func producedEventsArriveSigned() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            try await stack.startIngest()
            try await stack.startWebhooks()
            let endpoint = try await stack.createEndpoint(events: [
                "receipt.delivered", "receipt.opened", "device.unregistered", "subscriber.preferences_changed"
            ])
            #expect(endpoint.secret.hasPrefix("whsec_"))
            #expect((Data(base64Encoded: String(endpoint.secret.dropFirst(6)))?.count ?? 0) >= 24)
            try stack.receiverSecrets([endpoint.secret])
            // The secret is never shown again.
            let read = try await stack.api("GET", "/v1/webhooks/\(endpoint.id)")
            #expect(read.status == 200 && read.data?["secret"] == nil)
            let test = try await stack.api("POST", "/v1/webhooks/\(endpoint.id)/test")
            #expect(test.status == 202)
            let token = Hex.string(SecureRandom.bytes(32))
            #expect(
                try await stack.api(
                    "PUT", "/v1/subscribers/alice/devices/\(token)", body: ["environment": "sandbox"]
                ).status == 201)
            #expect(try await stack.api("DELETE", "/v1/subscribers/alice/devices/\(token)").status == 200)
            #expect(try await stack.api("PUT", "/v1/categories/offers", body: ["name": "Offers"]).status == 201)
            let preferences = try await stack.api(
                "PUT", "/v1/subscribers/alice/preferences", body: ["all": false, "categories": ["offers": false]])
            #expect(preferences.status == 200, "\(preferences.envelope)")
            let messageId = UUID().uuidString.lowercased()
            let now = ISO8601DateFormatter().string(from: Date())
            let events = try await stack.api(
                "POST", "/v1/events",
                body: [
                    "subscriberId": "alice",
                    "events": [
                        [
                            "id": "r1", "name": "$notification.delivered", "data": ["messageId": .string(messageId)],
                            "timestamp": .string(now)
                        ],
                        [
                            "id": "r2", "name": "$notification.opened", "data": ["messageId": .string(messageId)],
                            "timestamp": .string(now)
                        ],
                        // A second delivered receipt for the same message and subscriber: counted once, sent once.
                        [
                            "id": "r3", "name": "$notification.delivered", "data": ["messageId": .string(messageId)],
                            "timestamp": .string(now)
                        ]
                    ]
                ])
            #expect(events.status == 202)
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                Set(stack.received().compactMap { $0["type"]?.stringValue }).isSuperset(of: [
                    "webhook.test", "device.unregistered", "receipt.delivered", "receipt.opened",
                    "subscriber.preferences_changed"
                ])
            }
            try #require(arrived, "received: \(stack.received())")
            let received = stack.received()
            for request in received {
                #expect(request["verified_with"] == [0], "not verified by standardwebhooks: \(request)")
                #expect(request["schema_error"] == .null, "not as the document says: \(request)")
                #expect(request["answered"]?.intValue == 200)
            }
            let byType = Dictionary(grouping: received) { $0["type"]?.stringValue ?? "" }
            #expect(byType["receipt.delivered"]?.count == 1)
            let unregistered = byType["device.unregistered"]?.first?["body"]?["data"]
            #expect(unregistered?["token"]?.stringValue == token)
            #expect(unregistered?["source"] == "api" && unregistered?["reason"] == "deleted")
            let opened = byType["receipt.opened"]?.first?["body"]?["data"]
            #expect(opened?["messageId"]?.stringValue == messageId && opened?["eventId"] == "r2")
            #expect(byType["webhook.test"]?.first?["id"]?.stringValue == test.data?["webhookId"]?.stringValue)
            let changed = byType["subscriber.preferences_changed"]?.first?["body"]?["data"]
            #expect(byType["subscriber.preferences_changed"]?.count == 1)
            #expect(changed?["subscriberId"] == "alice" && changed?["source"] == "api")
            #expect(changed?["all"] == ["from": nil, "to": false])
            #expect(changed?["categories"] == ["offers": ["from": nil, "to": false]])
            // Each attempt is in the endpoint's attempts, delivered, with the receiver's answer. The
            // receiver logs a request before it answers, and the service records the attempt after
            // the answer: the last one may be a moment behind.
            var attempts = try await stack.api("GET", "/v1/webhooks/\(endpoint.id)/attempts?limit=50")
            var delivered: [JSONValue] = []
            _ = try await RedisTestSupport.eventually(limit: .seconds(10)) {
                attempts = try await stack.api("GET", "/v1/webhooks/\(endpoint.id)/attempts?limit=50")
                delivered = attempts.data?.arrayValue?.filter { $0["outcome"] == "delivered" } ?? []
                return delivered.count >= received.count
            }
            #expect(delivered.count == received.count, "\(attempts.envelope)")
            #expect(delivered.allSatisfy { $0["httpStatus"]?.intValue == 200 && $0["response"] == #"{"ok":true}"# })
        }
    }

    @Test("a rotated secret: both signatures for 24 h, each verified by standardwebhooks")
    func rotationSignsWithBoth() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            try await stack.startWebhooks()
            let endpoint = try await stack.createEndpoint(events: ["receipt.opened"])
            let rotated = try await stack.api("POST", "/v1/webhooks/\(endpoint.id)/rotate-secret")
            #expect(rotated.status == 200)
            let newSecret = try #require(rotated.data?["secret"]?.stringValue)
            #expect(newSecret != endpoint.secret)
            let expires = rotated.data?["previousSecretExpiresAt"]?.stringValue.flatMap(EventTimestamp.parse)
            let overlap = (expires?.timeIntervalSinceNow ?? 0) / 3600
            #expect(overlap > 23.9 && overlap <= 24, "\(rotated.envelope)")
            try stack.receiverSecrets([
                endpoint.secret, newSecret, "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
            ])
            #expect(try await stack.api("POST", "/v1/webhooks/\(endpoint.id)/test").status == 202)
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(30)) { !stack.received().isEmpty }
            try #require(arrived)
            let request = stack.received()[0]
            #expect(request["verified_with"] == [0, 1], "\(request)")
            #expect(request["signature"]?.stringValue?.split(separator: " ").count == 2)
        }
    }

    @Test(
        "delivery.sent through the seam: batches of at most 100, every delivery once; unsubscribed tenants write nothing"
    )
    func deliverySentBatches() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            let batched = try await stack.createEndpoint(events: ["delivery.sent"])
            let other = try await stack.createEndpoint(events: ["receipt.opened"])
            try stack.receiverSecrets([batched.secret, other.secret])
            let message = UUID()
            let events = (0..<250).map { n in
                let id = UUID()
                return WebhookEvent(
                    tenantId: stack.tenantID, type: .deliverySent, id: id,
                    data: [
                        "deliveryId": .string(id.uuidString.lowercased()),
                        "messageId": .string(message.uuidString.lowercased()), "subscriberId": .string("s\(n)"),
                        "deviceToken": .string(String(format: "%064x", n)), "environment": "sandbox",
                        "sentAt": .string(WebhookTime.text(Date()))
                    ])
            }
            // Written in a transaction of the test's own, as a producer would (one row per subscribed endpoint).
            let written = try await stack.postgres.withTransaction { tx in
                try await WebhookOutbox.enqueue(on: tx, events)
            }
            #expect(written == 250)
            // Another tenant (no endpoint) and a type nobody subscribed to write nothing.
            let nobody = WebhookEvent(tenantId: UUID(), type: .deliverySent, data: [:])
            let unwanted = WebhookEvent(tenantId: stack.tenantID, type: .deliveryFailed, data: [:])
            #expect(try await WebhookOutbox.enqueue(on: stack.postgres, [nobody, unwanted]) == 0)
            try await stack.startWebhooks()
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                stack.received().reduce(0) { $0 + ($1["body"]?["data"]?["deliveries"]?.arrayValue?.count ?? 0) } >= 250
            }
            try #require(arrived, "\(stack.received().count) requests")
            let received = stack.received()
            #expect(
                received.count == 3, "\(received.map { $0["body"]?["data"]?["deliveries"]?.arrayValue?.count ?? 0 })")
            var ids: [String] = []
            for request in received {
                #expect(request["type"] == "delivery.sent")
                #expect(request["verified_with"] == [0], "\(request["verified_with"] ?? .null)")
                #expect(request["schema_error"] == .null, "\(request["schema_error"] ?? .null)")
                let deliveries = request["body"]?["data"]?["deliveries"]?.arrayValue ?? []
                #expect(deliveries.count <= 100)
                ids += deliveries.compactMap { $0["deliveryId"]?.stringValue }
            }
            #expect(ids.count == 250 && Set(ids) == Set(events.map { $0.id.uuidString.lowercased() }))
        }
    }

    @Test("delivery.sent rows an older build wrote as jsonb (a batch, single items) are still delivered")
    func jsonbRowsOfOlderBuilds() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            let endpoint = try await stack.createEndpoint(events: ["delivery.sent"])
            try stack.receiverSecrets([endpoint.secret])
            let endpointId = try #require(UUID(uuidString: endpoint.id))
            func item(_ n: Int) -> JSONValue {
                [
                    "deliveryId": .string(UUID().uuidString.lowercased()),
                    "messageId": .string(UUID().uuidString.lowercased()), "subscriberId": .string("old-\(n)"),
                    "deviceToken": .string(String(format: "%064x", n)), "environment": "production",
                    "sentAt": .string(WebhookTime.text(Date()))
                ]
            }
            // As migration 0029's producers wrote them: a batch already made, and two single items.
            let rows: [JSONValue] = [["deliveries": .array([item(1), item(2), item(3)])], item(4), item(5)]
            for data in rows {
                try await stack.postgres.execute(
                    """
                    INSERT INTO webhook_outbox (endpoint_id, tenant_id, event_id, event_type, occurred_at, data)
                    VALUES ($1::uuid, $2::uuid, $3::uuid, 'delivery.sent', now(), $4::jsonb)
                    """, [endpointId, stack.tenantID, UUID(), data])
            }
            try await stack.startWebhooks()
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) { stack.received().count >= 2 }
            try #require(arrived, "\(stack.received().count) requests")
            let sizes = stack.received().map { $0["body"]?["data"]?["deliveries"]?.arrayValue?.count ?? 0 }.sorted()
            #expect(sizes == [2, 3], "\(sizes)")
            for request in stack.received() {
                #expect(request["verified_with"] == [0], "\(request["verified_with"] ?? .null)")
                #expect(request["schema_error"] == .null, "\(request["schema_error"] ?? .null)")
            }
            let subscribers = stack.received().flatMap { $0["body"]?["data"]?["deliveries"]?.arrayValue ?? [] }
                .compactMap { $0["subscriberId"]?.stringValue }
            #expect(Set(subscribers) == ["old-1", "old-2", "old-3", "old-4", "old-5"])
        }
    }

    @Test(
        "kill -9 mid-send, then the receiver down for a while: every event arrives, a duplicate only with its own webhook-id"
    )
    func nothingLostAcrossKillAndOutage() async throws {
        try await withWebhookStack { stack in
            let endpoint = try await stack.createEndpoint(events: ["receipt.delivered"])
            try stack.receiverSecrets([endpoint.secret])
            try stack.receiverMode("slow 1.5")
            try await stack.startReceiver()
            let first = try await stack.startWebhooks("webhooks-a")
            let firstBatch = Self.receipts(stack.tenantID, count: 40)
            try await WebhookOutbox.enqueue(on: stack.postgres, firstBatch)
            // Requests are under way (the receiver takes 1.5 s to answer each): kill -9 the replica.
            let sending = try await RedisTestSupport.eventually(limit: .seconds(30)) { !stack.received().isEmpty }
            try #require(sending)
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(10))
            // The receiver goes down; more events arrive meanwhile; two other replicas take over.
            stack.stopReceiver()
            let secondBatch = Self.receipts(stack.tenantID, count: 40)
            try await WebhookOutbox.enqueue(on: stack.postgres, secondBatch)
            try await stack.startWebhooks("webhooks-b")
            try await stack.startWebhooks("webhooks-c")
            try await Task.sleep(for: .seconds(4))
            try stack.receiverMode("ok")
            try await stack.startReceiver()
            let expected = Set((firstBatch + secondBatch).map { $0.id.uuidString.lowercased() })
            let all = try await RedisTestSupport.eventually(limit: .seconds(90)) {
                Set(stack.received().filter { $0["answered"]?.intValue == 200 }.compactMap { $0["id"]?.stringValue })
                    .isSuperset(of: expected)
            }
            try #require(
                all, "missing: \(expected.subtracting(stack.received().compactMap { $0["id"]?.stringValue }).count)")
            for request in stack.received() {
                let id = request["id"]?.stringValue ?? ""
                #expect(expected.contains(id), "a request with an unknown webhook-id: \(request)")
                // A duplicate carries the same event under the same id.
                #expect(request["body"]?["data"]?["eventId"]?.stringValue == "e-\(id)")
                #expect(request["verified_with"] == [0])
            }
            // What the dead replica had in flight is recorded as lost, then sent again.
            let attempts = try await Self.allAttempts(stack, endpoint.id)
            #expect(attempts.contains { $0["outcome"] == "lost" }, "no lost attempt recorded")
            #expect(
                attempts.contains {
                    $0["outcome"] == "retrying" && $0["error"]?.stringValue?.contains("connect") == true
                })
        }
    }

    @Test("Retry-After is honoured; a failing endpoint is disabled with a webhook.disabled attempt; enabling resumes")
    func retryAfterAndDisabling() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            try await stack.startWebhooks(settings: ["BUZZKIT_WEBHOOKS_DISABLE_AFTER": "3s"])
            let endpoint = try await stack.createEndpoint(events: ["receipt.opened"])
            try stack.receiverSecrets([endpoint.secret])
            try stack.receiverMode("status 503 2")
            #expect(try await stack.api("POST", "/v1/webhooks/\(endpoint.id)/test").status == 202)
            let retried = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                let received = stack.received()
                if received.count == 1 { try? stack.receiverMode("ok") }
                return received.count >= 2
            }
            try #require(retried)
            let received = stack.received()
            let gap = (received[1]["at"]?.doubleValue ?? 0) - (received[0]["at"]?.doubleValue ?? 0)
            // The schedule says 500 ms; the answer said 2 s.
            #expect(gap >= 1.9, "second attempt after \(gap) s")
            #expect(received[0]["id"] == received[1]["id"])
            let attempts = try await Self.allAttempts(stack, endpoint.id)
            let failed = attempts.first { $0["outcome"] == "retrying" }
            #expect(failed?["httpStatus"]?.intValue == 503)
            #expect(failed?["response"]?.stringValue?.contains("the test said so") == true)

            // An endpoint where nothing listens fails every attempt and is disabled after 3 s.
            let dead = try await stack.createEndpoint(
                events: ["receipt.opened"], url: "http://127.0.0.1:\(freeLoopbackPort())/x")
            #expect(try await stack.api("POST", "/v1/webhooks/\(dead.id)/test").status == 202)
            let disabled = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                try await stack.api("GET", "/v1/webhooks/\(dead.id)").data?["enabled"] == false
            }
            try #require(disabled)
            let endpointNow = try await stack.api("GET", "/v1/webhooks/\(dead.id)")
            #expect(endpointNow.data?["disabledReason"] == "failing")
            let deadAttempts = try await Self.allAttempts(stack, dead.id)
            #expect(
                deadAttempts.first?["eventType"] == "webhook.disabled" && deadAttempts.first?["outcome"] == "disabled")
            #expect(try await stack.api("POST", "/v1/webhooks/\(dead.id)/test").status == 409)
            let enabled = try await stack.api("PATCH", "/v1/webhooks/\(dead.id)", body: ["enabled": true])
            #expect(enabled.data?["enabled"] == true && enabled.data?["failingSince"] == .null)
        }
    }

    @Test("replay sends again with the original ids; attempts page newest first")
    func replayAndAttemptPages() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            try await stack.startWebhooks()
            let endpoint = try await stack.createEndpoint(events: ["receipt.delivered"])
            try stack.receiverSecrets([endpoint.secret])
            let since = Date().addingTimeInterval(-1)
            let events = Self.receipts(stack.tenantID, count: 5)
            try await WebhookOutbox.enqueue(on: stack.postgres, events)
            // Every first send recorded (a message still being sent is left to that send by a replay).
            let first = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await Self.allAttempts(stack, endpoint.id).filter { $0["outcome"] == "delivered" }.count >= 5
            }
            try #require(first)
            let replay = try await stack.api(
                "POST", "/v1/webhooks/\(endpoint.id)/replay", body: ["since": .string(WebhookTime.text(since))])
            #expect(replay.status == 202 && replay.data?["queued"]?.intValue == 5, "\(replay.envelope)")
            let again = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                let attempts = try await Self.allAttempts(stack, endpoint.id)
                return stack.received().count >= 10 && attempts.count >= 10
            }
            try #require(again)
            let ids = stack.received().compactMap { $0["id"]?.stringValue }
            #expect(Set(ids).count == 5 && ids.count == 10)
            // Keyset pages of 3: every attempt once, newest first.
            var seen: [Int] = []
            var cursor: String?
            repeat {
                let page = try await stack.api(
                    "GET", "/v1/webhooks/\(endpoint.id)/attempts?limit=3" + (cursor.map { "&cursor=\($0)" } ?? ""))
                #expect(page.status == 200)
                seen += page.data?.arrayValue?.compactMap { $0["id"]?.stringValue.flatMap { Int($0) } } ?? []
                cursor = page.envelope.metadata["cursor"]?.stringValue
            } while cursor != nil
            #expect(seen.count == 10 && seen == seen.sorted(by: >))
        }
    }

    @Test("the address rules: refused at save time, and again at send time by a replica that does not allow them")
    func addressRules() async throws {
        try await withWebhookStack(gatewaySettings: [:]) { stack in
            for url in [
                "http://example.com/x", "https://127.0.0.1/x", "https://10.1.2.3/x", "https://169.254.169.254/latest",
                "https://[::1]/x", "https://localhost/x", "https://user:pw@example.com/x", "https://192.168.0.1:8443/x",
                "https://[::ffff:127.0.0.1]/x", "ftp://example.com/x", "https://example.com/x#f"
            ] {
                let reply = try await stack.api(
                    "POST", "/v1/webhooks", body: ["url": .string(url), "events": ["receipt.opened"]])
                #expect(reply.status == 422, "\(url): \(reply.status)")
                #expect(reply.envelope.error?.details?.arrayValue?.first?["path"] == "url", "\(url): \(reply.envelope)")
            }
            // Saved while private addresses were allowed (written straight to the store)...
            let store = try WebhookEndpointStore(
                postgres: stack.postgres, secretKey: Array(Data(base64Encoded: stack.common["BUZZKIT_SECRET_KEY"]!)!))
            let saved = try await store.create(
                tenantId: stack.tenantID, url: stack.receiverURL, events: [.receiptOpened], description: nil,
                enabled: true)
            try await stack.startReceiver()
            // ...then sent by a replica that does not allow them: refused before any connection.
            try await stack.startWebhooks(settings: ["BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "false"])
            _ = try await store.sendTest(tenantId: stack.tenantID, id: saved.record.id)
            let refused = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await Self.allAttempts(stack, saved.record.id.uuidString.lowercased()).contains {
                    $0["error"]?.stringValue?.contains("refused") == true
                }
            }
            #expect(refused)
            #expect(stack.received().isEmpty)
        }
    }

    @Test("SIGTERM: the sends under way finish and are recorded before the replica exits 0")
    func sigtermDrains() async throws {
        try await withWebhookStack { stack in
            let endpoint = try await stack.createEndpoint(events: ["receipt.delivered"])
            try stack.receiverSecrets([endpoint.secret])
            try stack.receiverMode("slow 1")
            try await stack.startReceiver()
            let replica = try await stack.startWebhooks()
            let events = Self.receipts(stack.tenantID, count: 5)
            try await WebhookOutbox.enqueue(on: stack.postgres, events)
            let sending = try await RedisTestSupport.eventually(limit: .seconds(30)) { !stack.received().isEmpty }
            try #require(sending)
            replica.signal(SIGTERM)
            #expect(await replica.waitForExit(timeout: .seconds(20)) == 0, "\(replica.output.suffix(2000))")
            let attempts = try await Self.allAttempts(stack, endpoint.id)
            #expect(!attempts.contains { $0["outcome"] == "lost" })
            let pending = try await stack.postgres.query(
                "SELECT count(*) FROM webhook_messages WHERE claim IS NOT NULL")
            #expect(try pending[0].decode(Int.self, at: 0) == 0)
        }
    }

    // MARK: - Helpers

    /// `count` receipt.delivered events, each with its own id (the webhook-id) and data naming it.
    static func receipts(_ tenant: UUID, count: Int) -> [WebhookEvent] {
        (0..<count).map { _ in
            let id = UUID()
            return WebhookEvent(
                tenantId: tenant, type: .receiptDelivered, id: id,
                data: [
                    "messageId": .string(UUID().uuidString.lowercased()), "subscriberId": "alice",
                    "eventId": .string("e-\(id.uuidString.lowercased())"),
                    "occurredAt": .string(WebhookTime.text(Date()))
                ])
        }
    }

    static func allAttempts(_ stack: WebhookStack, _ id: String) async throws -> [JSONValue] {
        var all: [JSONValue] = []
        var cursor: String?
        repeat {
            let page = try await stack.api(
                "GET", "/v1/webhooks/\(id)/attempts?limit=200" + (cursor.map { "&cursor=\($0)" } ?? ""))
            all += page.data?.arrayValue ?? []
            cursor = page.envelope.metadata["cursor"]?.stringValue
        } while cursor != nil
        return all
    }
}
