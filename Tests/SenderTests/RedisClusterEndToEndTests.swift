import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The send path on a Redis in cluster mode (one node holding every slot, `ThrowawayRedis.cluster`):
/// it refuses any command or script whose keys are in different slots, so a send that goes
/// through the gateway, the fan-out, the delivery consumer, the ledger and the stream trimming
/// without a `CROSSSLOT` shows that the keys used together share a slot.
@Suite("push end to end on a Redis Cluster node", .serialized, .requiresTestStack)
struct RedisClusterEndToEndTests {
    @Test("a topic send and a direct send reach every device once; no command crosses slots")
    func topicAndDirectSends() async throws {
        try await withPushStack(
            senderSettings: ["BUZZKIT_SENDER_CHUNK_SIZE": "5", "BUZZKIT_FANOUT_PAGE_SIZE": "10"], redisCluster: true
        ) { stack in
            let sender = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            var tokens: [String] = []
            var ids: [String] = []
            for n in 0..<12 {
                let token = PushStack.token()
                try await stack.addSubscriber("user-\(n)", tokens: [token])
                tokens.append(token)
                ids.append("user-\(n)")
            }
            try await stack.subscribe(ids, topic: "news")
            let topic = try await stack.send(["topic": "news", "body": "To all"])
            let direct = try await stack.send(["to": "user-3", "body": "To one", "collapseId": "one"])
            #expect(try await stack.waitSettled(topic)["counts"]?["sent"]?.intValue == 12)
            #expect(try await stack.waitSettled(direct)["counts"]?["sent"]?.intValue == 1)
            let received = try await stack.simulator.allPushes().compactMap { $0["token"]?.stringValue }
            #expect(received.count == 13)
            #expect(Set(received) == Set(tokens))
            sender.signal(SIGTERM)
            #expect(await sender.waitForExit(timeout: .seconds(30)) == 0)
            #expect(!sender.output.contains("CROSSSLOT"), "\(sender.output.suffix(2000))")
            #expect(!stack.gateway.output.contains("CROSSSLOT"))
        }
    }
}
