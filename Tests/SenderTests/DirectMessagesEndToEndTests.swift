import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Direct messages (a short `to` list) travel on `bk:messages:direct` and are taken, sent and
/// recorded many per statement (issue 14's batched one-subscriber messages). Each keeps what a
/// message is: its own id and idempotency, its own deliveries, counts and receipts; a device named
/// by several messages of a batch gets them in order; a replica killed after taking a batch loses
/// nothing and shows nothing twice. Real processes: gateway, ingest, apns-sender, APNs simulator.
@Suite("direct messages in batches", .serialized, .requiresTestStack)
struct DirectMessagesEndToEndTests {
    /// The sender's `bk_sender_direct_batch_size` histogram: (batches, messages).
    func directBatches(metricsPort port: Int, _ stack: PushStack) async throws -> (count: Int, sum: Int) {
        let response = try await stack.http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"))
        let text = String(decoding: response.body, as: UTF8.self)
        func value(_ name: String) -> Int {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? -1
        }
        return (value("bk_sender_direct_batch_size_count"), value("bk_sender_direct_batch_size_sum"))
    }

    @Test("messages queued while no replica ran go out as one batch, each its own message")
    func oneBatchManyMessages() async throws {
        try await withPushStack { stack in
            _ = try await stack.startIngest()
            var tokens: [String: [String]] = [:]
            for n in 1...40 {
                let token = PushStack.token()
                tokens["s\(n)"] = [token]
                try await stack.addSubscriber("s\(n)", tokens: [token])
            }
            tokens["two"] = [PushStack.token(), PushStack.token()]
            try await stack.addSubscriber("two", tokens: tokens["two"]!)
            try await stack.addSubscriber("none", tokens: [])
            let inactive = PushStack.token()
            tokens["lapsed"] = [PushStack.token()]
            try await stack.addSubscriber("lapsed", tokens: tokens["lapsed"]! + [inactive])
            try await stack.postgres.execute("UPDATE devices SET active = false WHERE token = $1", [inactive])

            // Posted with no replica running: they wait on the direct stream together.
            var ids: [String: String] = [:]
            for n in 1...40 {
                ids["s\(n)"] = try await stack.send(["to": .string("s\(n)"), "body": .string("Hi s\(n)")])
            }
            for subscriber in ["two", "none", "lapsed"] {
                ids[subscriber] = try await stack.send(["to": .string(subscriber), "body": .string("Hi \(subscriber)")])
            }
            // A second message to s1 under an Idempotency-Key, posted twice: one message.
            var again: [String] = []
            for _ in 0..<2 {
                let reply = try await stack.api(
                    "POST", "/v1/messages", body: ["to": "s1", "body": "Hi again s1"],
                    headers: ["Idempotency-Key": "again-s1"])
                #expect(reply.status == 202, "\(reply.envelope)")
                again.append(reply.data?["id"]?.stringValue ?? "")
            }
            #expect(again[0] == again[1] && !again[0].isEmpty)
            let queued = try await stack.postgres.query(
                "SELECT count(*)::int FROM messages WHERE status = 'queued'")
            #expect(try queued[0].decode(Int.self, at: 0) == 44)

            let metricsPort = freeLoopbackPort()
            // The batch counts below assume each message is taken once: no outbox sweep may put
            // them on the stream again (PushStack's 5 s re-queue passed before the replica started
            // whenever posting them took that long, as on a loaded machine: sums of 51 and 54).
            _ = try await stack.startSender(
                TestEnvironment.uniqueName("sender"), settings: ["BUZZKIT_OUTBOX_REQUEUE_AFTER": "600s"],
                port: metricsPort)
            var settled: [String: JSONValue] = [:]
            for (subscriber, id) in ids { settled[subscriber] = try await stack.waitSettled(id) }
            let secondToS1 = try await stack.waitSettled(again[0])

            for n in 1...40 {
                let message = settled["s\(n)"]
                #expect(message?["audienceSize"]?.intValue == 1)
                #expect(message?["counts"]?["sent"]?.intValue == 1)
                // Completed by the statement that recorded its batch's chunk.
                #expect(message?["status"] == "completed" && message?["pending"] == 0)
            }
            #expect(settled["two"]?["audienceSize"]?.intValue == 2)
            #expect(settled["two"]?["counts"]?["sent"]?.intValue == 2)
            #expect(settled["none"]?["audienceSize"]?.intValue == 0)
            // No device: nothing pending from the start, completed right after it was taken.
            #expect(settled["none"]?["status"] == "completed" && settled["none"]?["completedAt"]?.stringValue != nil)
            #expect(settled["lapsed"]?["audienceSize"]?.intValue == 1)
            #expect(secondToS1["counts"]?["sent"]?.intValue == 1)

            // Every device exactly its own pushes, each naming its message; s1's two in the order sent.
            for n in 2...40 {
                let pushes = try await stack.simulator.pushes(token: tokens["s\(n)"]![0])
                #expect(pushes.count == 1)
                let payload = try JSONValue.parse(Array((pushes.first?["payload"]?.stringValue ?? "").utf8))
                #expect(payload["bk"]?["messageId"]?.stringValue == ids["s\(n)"])
                #expect(payload["aps"]?["alert"]?["body"]?.stringValue == "Hi s\(n)")
            }
            let toS1 = try await stack.simulator.pushes(token: tokens["s1"]![0]).compactMap {
                try? JSONValue.parse(Array(($0["payload"]?.stringValue ?? "").utf8))["aps"]?["alert"]?["body"]?
                    .stringValue
            }
            #expect(toS1 == ["Hi s1", "Hi again s1"])
            for token in tokens["two"]! + tokens["lapsed"]! {
                #expect(try await stack.simulator.pushes(token: token).count == 1)
            }
            #expect(try await stack.simulator.pushes(token: inactive).isEmpty)

            // They went out together: far fewer batches than messages.
            let batches = try await directBatches(metricsPort: metricsPort, stack)
            #expect(batches.sum == 44)
            #expect(batches.count >= 1 && batches.count <= 2, "batches: \(batches)")

            // Receipts are per message: s5 opens its own, nobody else's count moves.
            let opened = try await stack.api(
                "POST", "/v1/events",
                body: [
                    "subscriberId": "s5",
                    "events": [
                        [
                            "id": "open-5", "name": "$notification.opened",
                            "timestamp": .string(EventTimestamp.format(Date())),
                            "data": ["messageId": .string(ids["s5"]!)]
                        ]
                    ]
                ])
            #expect(opened.status == 202)
            let counted = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.api("GET", "/v1/messages/\(ids["s5"]!)").data?["receipts"]?["opened"]?.intValue == 1
            }
            #expect(counted)
            #expect(
                try await stack.api("GET", "/v1/messages/\(ids["s6"]!)").data?["receipts"]?["opened"]?.intValue == 0)
        }
    }

    @Test("a replica killed after taking a batch: another sends it again, same apns-id, nothing failed")
    func killedAfterTaking() async throws {
        let settings = [
            "BUZZKIT_SENDER_CLAIM_IDLE": "2s", "BUZZKIT_SENDER_RECLAIM_INTERVAL": "1s",
            "BUZZKIT_SENDER_STALE_SENDING": "3s"
        ]
        try await withPushStack(senderSettings: settings) { stack in
            var tokens: [String] = []
            for n in 0..<30 {
                let token = PushStack.token()
                tokens.append(token)
                try await stack.addSubscriber("k\(n)", tokens: [token])
            }
            try await stack.simulator.post("delay", ["ms": 3000])
            let doomed = "doomed-" + TestEnvironment.uniqueName("sender")
            let first = try await stack.startSender(doomed)
            var ids: [String] = []
            for n in 0..<30 { ids.append(try await stack.send(["to": .string("k\(n)"), "body": "Your code is 1234"])) }
            let taken = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.postgres.query(
                    "SELECT count(*)::int FROM delivery_chunks WHERE sending_by = $1", [doomed]
                )[0].decode(Int.self, at: 0) > 0
            }
            try #require(taken)
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(10))
            try await stack.simulator.post("delay", ["ms": 0])
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            for id in ids {
                let message = try await stack.waitSettled(id, limit: .seconds(60))
                #expect(message["counts"]?["sent"]?.intValue == 1, "\(message)")
            }
            // Every device has the message; a second copy is the same notification.
            for (n, token) in tokens.enumerated() {
                let pushes = try await stack.simulator.pushes(token: token)
                #expect(!pushes.isEmpty, "k\(n) got nothing")
                let apnsIds = Set(pushes.map { ($0["apnsId"]?.stringValue ?? "").lowercased() })
                let collapse = Set(pushes.map { $0["collapseId"]?.stringValue ?? "" })
                #expect(apnsIds.count == 1, "k\(n): \(pushes)")
                #expect(collapse == [ids[n]], "k\(n): \(pushes)")
            }
            // The ledger: no delivery failed; a re-sent one shows the lost attempt first.
            let failed = try await stack.postgres.query(
                "SELECT count(*)::int FROM deliveries WHERE status <> 'sent'")
            #expect(try failed[0].decode(Int.self, at: 0) == 0)
            let resent = try await stack.postgres.query(
                """
                SELECT d.id::text, array_agg(a.status ORDER BY a.attempt) FROM deliveries d
                JOIN delivery_attempts a ON a.delivery_id = d.id GROUP BY d.id HAVING count(*) > 1
                """)
            #expect(!resent.isEmpty, "the killed replica's batch was sent again")
            for row in resent { #expect(try row.decode([Int].self, at: 1) == [0, 200]) }
        }
    }
}
