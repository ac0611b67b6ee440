import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Push end to end: gateway -> Postgres + bk:messages -> apns-sender fan-out -> bk:deliveries ->
/// apns-sender -> APNs simulator, and the ledger read back through the gateway.
@Suite("push end to end", .serialized, .requiresTestStack)
struct PushEndToEndTests {
    @Test(
        "one subscriber with two devices: both receive it, with the right headers and payload, and the ledger has the exact bytes"
    )
    func subscriberWithTwoDevices() async throws {
        try await withPushStack { stack in
            let sender = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let tokens = [PushStack.token(), PushStack.token()]
            try await stack.addSubscriber("alice", tokens: tokens)
            try await stack.addSubscriber("bob", tokens: [PushStack.token()])
            let before = Date()
            let id = try await stack.send([
                "to": "alice", "title": "Hello", "body": "Your order shipped",
                "data": ["orderId": 42, "tags": ["a", "b"]], "collapseId": "order-42"
            ])
            let message = try await stack.waitSettled(id)
            #expect(message["status"] == "completed" && message["pending"] == 0)
            #expect(message["audienceSize"]?.intValue == 2)
            #expect(message["counts"]?["sent"]?.intValue == 2)
            let deliveries = try await stack.deliveries(id)
            #expect(deliveries.count == 2)
            #expect(Set(deliveries.compactMap { $0["deviceToken"]?.stringValue }) == Set(tokens))
            for delivery in deliveries {
                #expect(delivery["status"]?.stringValue == "sent")
                let token = try #require(delivery["deviceToken"]?.stringValue)
                let pushes = try await stack.simulator.pushes(token: token)
                try #require(pushes.count == 1)
                let push = pushes[0]
                #expect(push["topic"]?.stringValue == PushStack.bundleId)
                #expect(push["pushType"]?.stringValue == "alert")
                #expect(push["priority"]?.intValue == 10)
                #expect(push["collapseId"]?.stringValue == "order-42")
                #expect(push["apnsId"]?.stringValue?.lowercased() == delivery["apnsId"]?.stringValue)
                let payload = try JSONValue.parse(Array((push["payload"]?.stringValue ?? "").utf8))
                #expect(payload["aps"]?["alert"]?["title"]?.stringValue == "Hello")
                #expect(payload["bk"]?["data"] == ["orderId": 42, "tags": ["a", "b"]])
                #expect(
                    payload["bk"]?["messageId"]?.stringValue == id || payload["bk"]?["id"]?.stringValue == id
                        || push["payload"]?.stringValue?.contains(id) == true)
                let detail = try await stack.api("GET", "/v1/deliveries/\(delivery["id"]?.stringValue ?? "")")
                #expect(detail.status == 200)
                let attempts = detail.data?["attempts"]?.arrayValue ?? []
                try #require(attempts.count == 1)
                #expect(attempts[0]["status"]?.intValue == 200)
                // When it went out: between the POST and the message's completion.
                let at = try #require(attempts[0]["at"]?.stringValue.flatMap(Self.date), "\(attempts[0])")
                let completedAt = try #require(message["completedAt"]?.stringValue.flatMap(Self.date))
                #expect(at >= before.addingTimeInterval(-1) && at <= completedAt, "\(at) \(before) \(completedAt)")
                #expect(attempts[0]["payload"]?.stringValue == push["payload"]?.stringValue)  // the exact bytes
                let headers = attempts[0]["headers"]
                #expect(headers?["apns-topic"]?.stringValue == PushStack.bundleId)
                #expect(headers?["authorization"]?.stringValue?.contains("redacted") == true)
                #expect(headers?["apns-id"]?.stringValue == delivery["apnsId"]?.stringValue)
            }
            // bob was not targeted
            #expect(try await stack.simulator.stats()["accepted"]?.intValue == 2)
            sender.signal(SIGTERM)
            #expect(await sender.waitForExit(timeout: .seconds(30)) == 0)
        }
    }

    @Test("a topic send reaches every subscribed device exactly once, and no one else")
    func topicSend() async throws {
        // 24 devices in pages of 10, 10 and 4, in chunks of 3.
        try await withPushStack(senderSettings: ["BUZZKIT_SENDER_CHUNK_SIZE": "3", "BUZZKIT_FANOUT_PAGE_SIZE": "10"]) {
            stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            var subscribed: [String] = []
            var ids: [String] = []
            for n in 0..<12 {
                let tokens = (0..<(n % 3 + 1)).map { _ in PushStack.token() }
                try await stack.addSubscriber("user-\(n)", tokens: tokens)
                subscribed += tokens
                ids.append("user-\(n)")
            }
            let outsider = PushStack.token()
            try await stack.addSubscriber("outsider", tokens: [outsider])
            let inactive = PushStack.token()
            try await stack.addSubscriber("user-0", tokens: [inactive])
            try await stack.postgres.execute("UPDATE devices SET active = false WHERE token = $1", [inactive])
            try await stack.subscribe(ids, topic: "news")
            let id = try await stack.send(["topic": "news", "body": "Breaking"])
            let message = try await stack.waitSettled(id)
            #expect(message["audienceSize"]?.intValue == Int64(subscribed.count))
            #expect(message["counts"]?["sent"]?.intValue == Int64(subscribed.count))
            let pushes = try await stack.simulator.allPushes()
            let received = pushes.compactMap { $0["token"]?.stringValue }
            #expect(received.count == subscribed.count)
            #expect(Set(received) == Set(subscribed))
            #expect(!received.contains(outsider))
            #expect(!received.contains(inactive))
            // status filter and paging
            let sent = try await stack.deliveries(id, status: "sent")
            #expect(sent.count == subscribed.count)
            #expect(try await stack.deliveries(id, status: "failed").isEmpty)
        }
    }

    @Test("an unregistered token ends invalid_token and the device is deactivated")
    func unregisteredToken() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let good = PushStack.token()
            let dead = PushStack.token()
            try await stack.addSubscriber("carol", tokens: [good, dead])
            try await Task.sleep(for: .milliseconds(20))
            try await stack.simulator.post("unregister", ["token": .string(dead)])
            let id = try await stack.send(["to": ["carol"], "body": "hi"])
            let message = try await stack.waitSettled(id)
            #expect(message["counts"]?["sent"]?.intValue == 1)
            #expect(message["counts"]?["invalid_token"]?.intValue == 1)
            let invalid = try await stack.deliveries(id, status: "invalid_token")
            #expect(invalid.first?["deviceToken"]?.stringValue == dead)
            #expect(invalid.first?["lastStatus"]?.intValue == 410)
            #expect(invalid.first?["lastReason"]?.stringValue == "Unregistered")
            let rows = try await stack.postgres.query(
                "SELECT active, invalid_reason, invalidated_at IS NOT NULL FROM devices WHERE token = $1", [dead])
            let (active, reason, stamped) = try rows[0].decode((Bool, String?, Bool).self)
            #expect(active == false)
            #expect(reason == "Unregistered")
            #expect(stamped)
            let goodRow = try await stack.postgres.query("SELECT active FROM devices WHERE token = $1", [good])
            #expect(try goodRow[0].decode(Bool.self, at: 0) == true)
        }
    }

    @Test("503 for a while: retried with backoff and sent, every attempt on record")
    func serviceUnavailableThenSent() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let token = PushStack.token()
            try await stack.addSubscriber("dave", tokens: [token])
            try await stack.simulator.post("fail", ["status": 503, "count": 2])
            let id = try await stack.send(["to": "dave", "body": "retry me"])
            let message = try await stack.waitSettled(id)
            #expect(message["counts"]?["sent"]?.intValue == 1)
            let delivery = try #require(try await stack.deliveries(id).first)
            #expect(delivery["attemptCount"]?.intValue == 3)
            let detail = try await stack.api("GET", "/v1/deliveries/\(delivery["id"]?.stringValue ?? "")")
            let attempts = detail.data?["attempts"]?.arrayValue ?? []
            #expect(attempts.map { $0["status"]?.intValue } == [503, 503, 200])
            #expect(attempts.map { $0["attempt"]?.intValue } == [1, 2, 3])
            #expect(attempts[0]["reason"]?.stringValue == "ServiceUnavailable")
            // one apns-id across the retries
            #expect(Set(attempts.compactMap { $0["headers"]?["apns-id"]?.stringValue }).count == 1)
            #expect(try await stack.simulator.pushes(token: token).count == 1)
        }
    }

    @Test("an oversized payload is refused with 422 before anything is stored or sent")
    func oversizedPayload() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            try await stack.addSubscriber("erin", tokens: [PushStack.token()])
            let reply = try await stack.api(
                "POST", "/v1/messages",
                body: [
                    "to": "erin", "title": "big", "data": ["blob": .string(String(repeating: "x", count: 5000))]
                ])
            #expect(reply.status == 422)
            #expect(reply.envelope.error?.code.rawValue == "validation_failed")
            let paths = (reply.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue }
            #expect(paths.contains("payload"))
            #expect(try await stack.postgres.query("SELECT 1 FROM messages").isEmpty)
            #expect(try await stack.simulator.stats()["accepted"]?.intValue == 0)
        }
    }

    @Test("bad targets answer 422 with every problem at once (a missing segment 404), and nothing is stored")
    func invalidTargets() async throws {
        try await withPushStack { stack in
            let unknown = try await stack.api("POST", "/v1/messages", body: ["segment": "vip", "body": "x"])
            #expect(unknown.status == 404)
            #expect(unknown.envelope.error?.code.rawValue == "not_found")
            #expect(
                (unknown.envelope.error?.details?.arrayValue ?? []).contains { $0["path"]?.stringValue == "segment" })
            let broken = try await stack.api("POST", "/v1/messages", body: ["where": "plan ==", "body": "x"])
            #expect(broken.status == 422)
            let whereIssue = (broken.envelope.error?.details?.arrayValue ?? []).first {
                $0["path"]?.stringValue == "where"
            }
            #expect((whereIssue?["message"]?.stringValue ?? "").contains("line 1, column"))
            // target and content problems together
            let both = try await stack.api("POST", "/v1/messages", body: ["to": "a", "topic": "b", "badge": -1])
            #expect(both.status == 422)
            let paths = Set((both.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(paths.contains("topic") && paths.contains("badge"))
            let none = try await stack.api("POST", "/v1/messages", body: ["body": "x"])
            #expect(none.status == 422)
            #expect(try await stack.postgres.query("SELECT 1 FROM messages").isEmpty)
        }
    }

    @Test("a where send and a segment send reach exactly the matching devices, once each")
    func expressionTargets() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            // 30 subscribers: every third is on "pro"; some have two devices; one pro device is inactive.
            var devices: [String: [String]] = [:]
            for n in 0..<30 {
                let id = String(format: "s%02d", n)
                let tokens = (0..<(n % 4 == 0 ? 2 : 1)).map { _ in PushStack.token() }
                try await stack.addSubscriber(id, tokens: tokens)
                let plan = n % 3 == 0 ? "pro" : "free"
                #expect(
                    try await stack.api(
                        "PUT", "/v1/subscribers/\(id)",
                        body: ["attributes": ["plan": .string(plan), "age": .int(Int64(n))]]
                    ).status == 200)
                devices[id] = tokens
            }
            let inactive = devices["s03"]![0]
            try await stack.postgres.execute("UPDATE devices SET active = false WHERE token = $1", [inactive])
            let expected = Set(devices.filter { id, _ in Int(id.dropFirst())! % 3 == 0 }.values.flatMap { $0 })
                .subtracting([inactive])

            let id = try await stack.send(["where": "plan == \"pro\"", "title": "Pro tip"])
            let message = try await stack.waitSettled(id)
            #expect(message["target"]?["where"]?.stringValue == "plan == \"pro\"")
            #expect(message["audienceSize"]?.intValue == Int64(expected.count))
            let sentTo = try await stack.deliveries(id).compactMap { $0["deviceToken"]?.stringValue }
            #expect(sentTo.count == expected.count)
            #expect(Set(sentTo) == expected)
            for token in expected { #expect(try await stack.simulator.pushes(token: token).count == 1) }

            // A saved segment: its expression is recorded on the message.
            let saved = try await stack.api(
                "PUT", "/v1/segments/adults", body: ["name": "Adults", "where": "age >= 18"])
            #expect(saved.status == 201, "\(saved.envelope)")
            let segmentMessage = try await stack.send(["segment": "adults", "title": "Hi"])
            let settled = try await stack.waitSettled(segmentMessage)
            #expect(settled["target"]?["segment"]?.stringValue == "adults")
            #expect(settled["target"]?["where"]?.stringValue == "age >= 18")
            let adults = Set(devices.filter { id, _ in Int(id.dropFirst())! >= 18 }.values.flatMap { $0 })
            let segmentTokens = try await stack.deliveries(segmentMessage).compactMap { $0["deviceToken"]?.stringValue }
            #expect(segmentTokens.count == adults.count)
            #expect(Set(segmentTokens) == adults)
        }
    }

    @Test("a tenant without APNs credentials: the message fails with apns_credentials_missing")
    func missingCredentials() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            try await stack.addSubscriber("frank", tokens: [PushStack.token()])
            try await stack.postgres.execute("UPDATE tenants SET apns_private_key = NULL")
            let id = try await stack.send(["to": "frank", "body": "x"])
            let message = try await stack.waitSettled(id)
            #expect(message["status"]?.stringValue == "failed")
            #expect(message["error"]?["code"]?.stringValue == "apns_credentials_missing")
            #expect(try await stack.simulator.stats()["accepted"]?.intValue == 0)
        }
    }

    @Test("Idempotency-Key: a retried POST returns the same message and sends once")
    func idempotentSend() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let token = PushStack.token()
            try await stack.addSubscriber("gina", tokens: [token])
            let body: JSONValue = ["to": "gina", "body": "once"]
            let first = try await stack.api("POST", "/v1/messages", body: body, headers: ["Idempotency-Key": "k-1"])
            let second = try await stack.api("POST", "/v1/messages", body: body, headers: ["Idempotency-Key": "k-1"])
            #expect(first.status == 202)
            #expect(second.status == 202)
            let id = try #require(first.data?["id"]?.stringValue)
            #expect(second.data?["id"]?.stringValue == id)
            _ = try await stack.waitSettled(id)
            #expect(try await stack.postgres.query("SELECT 1 FROM messages").count == 1)
            #expect(try await stack.simulator.pushes(token: token).count == 1)
        }
    }

    @Test("the outbox sweeper sends a message whose bk:messages entry never made it")
    func outboxSweeper() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let token = PushStack.token()
            try await stack.addSubscriber("hank", tokens: [token])
            // What the gateway leaves behind when Redis refused the XADD: the row alone.
            let id = UUID()
            try await stack.postgres.execute(
                """
                INSERT INTO messages (id, message_time, tenant_id, target, content, updated_at)
                VALUES ($1::uuid, now(), $2::uuid, '{"to": ["hank"]}', '{"body": "late but sent"}', now() - interval '1 minute')
                """, [id, stack.tenantID])
            let message = try await stack.waitSettled(id.uuidString.lowercased())
            #expect(message["counts"]?["sent"]?.intValue == 1)
            #expect(try await stack.simulator.pushes(token: token).count == 1)
        }
    }

    /// An RFC 3339 time as the API writes it (Postgres's JSON: fractional seconds, an offset).
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
