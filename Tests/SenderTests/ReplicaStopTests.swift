import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Two apns-sender replicas share one send; one is stopped mid-send.
/// SIGTERM: it finishes its in-flight chunks, the other replica the rest: every device exactly once.
/// SIGKILL: the other replica takes over what the dead one had not claimed, and sends again what
/// it had claimed (maybe sent) under the same apns-id and collapse id: every device receives it,
/// a device that received it twice got the same notification twice (APNs shows it once), and
/// every delivery ends `sent` (never failed / sender_lost).
@Suite("replica stopped mid-send", .requiresTestStack)
struct ReplicaStopTests {
    @Test(
        "stopping one of two replicas mid-send: the other finishes, no device receives the message twice",
        arguments: [SIGKILL, SIGTERM])
    func replicaStopped(signal: Int32) async throws {
        let settings = [
            "BUZZKIT_SENDER_CLAIM_IDLE": "2s", "BUZZKIT_SENDER_RECLAIM_INTERVAL": "1s",
            "BUZZKIT_SENDER_STALE_SENDING": "6s", "BUZZKIT_SENDER_CONCURRENCY": "2",
            "BUZZKIT_SENDER_CHUNK_SIZE": "20"
        ]
        try await withPushStack(senderSettings: settings) { stack in
            var tokens: [String] = []
            var subscribers: [String] = []
            for n in 0..<100 {
                let own = [PushStack.token(), PushStack.token(), PushStack.token()]
                try await stack.addSubscriber("s\(n)", tokens: own)
                tokens += own
                subscribers.append("s\(n)")
            }
            try await stack.subscribe(subscribers, topic: "all")
            try await stack.simulator.post("delay", ["ms": 150])
            let a = "a-" + TestEnvironment.uniqueName("sender")
            let b = "b-" + TestEnvironment.uniqueName("sender")
            let first = try await stack.startSender(a)
            _ = try await stack.startSender(b)
            let id = try await stack.send(["topic": "all", "body": "everyone"])
            let started = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                let rows = try await stack.postgres.query(
                    "SELECT count(*) FROM delivery_chunks WHERE sending_by = $1", [a])
                return try rows[0].decode(Int.self, at: 0) > 0
            }
            try #require(started)
            first.signal(signal)
            let exit = await first.waitForExit(timeout: .seconds(30))
            if signal == SIGTERM { #expect(exit == 0) }
            try await stack.simulator.post("delay", ["ms": 0])
            let message = try await stack.waitSettled(id, limit: .seconds(90))
            #expect(message["audienceSize"]?.intValue == Int64(tokens.count))

            // Every device received it; SIGTERM: exactly once; SIGKILL: a device that received it
            // twice got the same notification (one apns-id, the message's collapse id).
            let pushes = try await stack.simulator.allPushes()
            var received: [String: Int] = [:]
            var sameNotification: [String: Set<String>] = [:]
            for push in pushes {
                let token = push["token"]?.stringValue ?? ""
                received[token, default: 0] += 1
                sameNotification[token, default: []].insert(
                    (push["apnsId"]?.stringValue?.lowercased() ?? "-") + "|" + (push["collapseId"]?.stringValue ?? "-"))
            }
            if signal == SIGTERM { #expect(received.values.allSatisfy { $0 == 1 }) }
            #expect(sameNotification.values.allSatisfy { $0.count == 1 })
            #expect(sameNotification.values.allSatisfy { $0.first?.hasSuffix("|" + id.lowercased()) == true })
            #expect(Set(received.keys) == Set(tokens))
            let rows = try await stack.postgres.query(
                "SELECT device_token, status, error_code, sending_by FROM deliveries WHERE message_id = $1::uuid",
                [UUID(uuidString: id)!])
            #expect(rows.count == tokens.count)
            var sentByB = 0
            for row in rows {
                let (token, status, code, by) = try row.decode((String, String, String?, String?).self)
                switch status {
                case "sent":
                    #expect((received[token] ?? 0) >= 1)
                    if signal == SIGTERM { #expect(received[token] == 1) }
                    if by == b { sentByB += 1 }
                default:
                    Issue.record("delivery ended \(status) / \(code ?? "")")
                }
            }
            #expect(sentByB > 0)
            if signal == SIGTERM {
                // Graceful: exact, every device exactly once.
                #expect(rows.allSatisfy { (try? $0.decode(String.self, at: 1)) == "sent" })
                #expect(Set(received.keys) == Set(tokens))
            }
        }
    }
}
