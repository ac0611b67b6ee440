import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// A push that may have reached APNs is sent again under the same `apns-id` and
/// `apns-collapse-id` (so the device shows one notification), and the ledger keeps both
/// attempts: after a replica was killed with its requests at the simulator, and after an
/// attempt timed out although the simulator had taken it.
@Suite("re-sends keep the notification's identity", .serialized, .requiresTestStack)
struct ResendTests {
    @Test(
        "kill -9 while the simulator holds the answers: another replica sends again, same ids, both attempts on the ledger"
    )
    func resendAfterKill() async throws {
        let settings = [
            "BUZZKIT_SENDER_CLAIM_IDLE": "2s", "BUZZKIT_SENDER_RECLAIM_INTERVAL": "1s",
            "BUZZKIT_SENDER_STALE_SENDING": "3s"
        ]
        try await withPushStack(senderSettings: settings) { stack in
            var tokens: [String] = []
            for n in 0..<4 {
                let token = PushStack.token()
                try await stack.addSubscriber("k\(n)", tokens: [token])
                tokens.append(token)
            }
            // Answers held for a minute: the first replica's requests reach the simulator, their
            // answers never reach the replica.
            try await stack.simulator.post("delay", ["ms": 60_000])
            let first = try await stack.startSender("first-" + TestEnvironment.uniqueName("sender"))
            let id = try await stack.send(["to": .array((0..<4).map { .string("k\($0)") }), "body": "once, please"])
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.simulator.allPushes().count == tokens.count
            }
            try #require(arrived)
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(30))
            try await stack.simulator.post("delay", ["ms": 0])
            let second = "second-" + TestEnvironment.uniqueName("sender")
            _ = try await stack.startSender(second)
            let message = try await stack.waitSettled(id, limit: .seconds(60))
            #expect(message["counts"]?["sent"]?.intValue == Int64(tokens.count))

            for delivery in try await stack.deliveries(id) {
                #expect(delivery["status"]?.stringValue == "sent")
                #expect(delivery["attemptCount"]?.intValue == 2)
                let apnsId = try #require(delivery["apnsId"]?.stringValue)
                let token = try #require(delivery["deviceToken"]?.stringValue)
                // The simulator took it twice: one notification (one apns-id, the message's collapse id).
                let pushes = try await stack.simulator.pushes(token: token)
                #expect(pushes.count == 2)
                #expect(pushes.allSatisfy { $0["apnsId"]?.stringValue?.lowercased() == apnsId })
                #expect(pushes.allSatisfy { $0["collapseId"]?.stringValue == id.lowercased() })
                #expect(pushes.first?["payload"] == pushes.last?["payload"])
                // The ledger: the lost attempt as unknown, then the re-send's answer.
                let detail = try await stack.api("GET", "/v1/deliveries/\(delivery["id"]?.stringValue ?? "")")
                #expect(detail.status == 200)
                let attempts = detail.data?["attempts"]?.arrayValue ?? []
                try #require(attempts.count == 2)
                #expect(attempts.map { $0["attempt"]?.intValue } == [1, 2])
                #expect(attempts.map { $0["status"]?.intValue } == [0, 200])
                #expect(attempts[0]["error"]?.stringValue?.hasPrefix("unknown:") == true)
                for attempt in attempts {
                    #expect(attempt["headers"]?["apns-id"]?.stringValue == apnsId)
                    #expect(attempt["headers"]?["apns-collapse-id"]?.stringValue == id.lowercased())
                    #expect(attempt["payload"]?.stringValue == pushes.last?["payload"]?.stringValue)
                }
            }
            let rows = try await stack.postgres.query(
                "SELECT DISTINCT sending_by FROM deliveries WHERE message_id = $1::uuid", [UUID(uuidString: id)!])
            #expect(try rows.map { try $0.decode(String.self, at: 0) } == [second])
            #expect(try await stack.postgres.query("SELECT 1 FROM delivery_chunks").isEmpty)
        }
    }

    @Test("an attempt that timed out after the simulator took it is retried with the same apns-id and collapse id")
    func retryAfterTimeout() async throws {
        try await withPushStack(senderSettings: ["BUZZKIT_APNS_REQUEST_TIMEOUT": "1s"]) { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let token = PushStack.token()
            try await stack.addSubscriber("tim", tokens: [token])
            // The first push's answer comes after the sender stopped waiting; the next one at once.
            try await stack.simulator.post("delay", ["ms": 3000, "count": 1])
            let id = try await stack.send(["to": "tim", "body": "late answer", "collapseId": "order-7"])
            let message = try await stack.waitSettled(id)
            #expect(message["counts"]?["sent"]?.intValue == 1)
            let delivery = try #require(try await stack.deliveries(id).first)
            let apnsId = try #require(delivery["apnsId"]?.stringValue)
            #expect(delivery["attemptCount"]?.intValue == 2)
            let pushes = try await stack.simulator.pushes(token: token)
            #expect(pushes.count == 2)  // the first request did reach the simulator
            #expect(pushes.allSatisfy { $0["apnsId"]?.stringValue?.lowercased() == apnsId })
            #expect(pushes.allSatisfy { $0["collapseId"]?.stringValue == "order-7" })
            let detail = try await stack.api("GET", "/v1/deliveries/\(delivery["id"]?.stringValue ?? "")")
            let attempts = detail.data?["attempts"]?.arrayValue ?? []
            try #require(attempts.count == 2)
            #expect(attempts.map { $0["status"]?.intValue } == [0, 200])
            #expect(attempts[0]["error"]?.stringValue?.isEmpty == false)
            #expect(attempts.allSatisfy { $0["headers"]?["apns-id"]?.stringValue == apnsId })
            #expect(attempts.allSatisfy { $0["headers"]?["apns-collapse-id"]?.stringValue == "order-7" })
        }
    }
}
