import BuzzKitRedis
import BuzzKitTestSupport
import Foundation
import Testing

/// Keys used together share a Redis Cluster slot. Checked against a real Redis in cluster mode
/// (one node holding all 16384 slots): such a node still refuses a command or script whose keys
/// hash to different slots (`CROSSSLOT`), so what passes here passes on a Cluster of many nodes.
@Suite(.requiresRedis) struct RedisClusterSlotTests {
    @Test(arguments: [
        ("bk:events", "{bk:events}:dead"), ("{bk:events}", "{bk:events}:dead"), ("a{b}c", "a{b}c:dead"),
        ("a{}c", "a{}c:dead")
    ])
    func siblingSharesTheHashedPart(key: String, sibling: String) {
        #expect(RedisHashTag.sibling(of: key, "dead") == sibling)
    }

    @Test func deadLetteringWorksOnAClusterNodeAndTheKeysShareASlot() async throws {
        let server = try await ThrowawayRedis.cluster()
        defer { server.stop() }
        let client = RedisClient(configuration: try server.configuration(poolSize: 2), logger: .silent())
        defer { client.close() }

        // The node enforces slots: keys of one stream named without a tag land apart.
        await #expect(throws: RedisError.self) {
            _ = try await client.eval("return 1", keys: ["bk:deliveries", "bk:deliveries:dead"])
        }

        for stream in ["bk:ingest", "bk:events", "bk:messages", "bk:messages:direct", "bk:deliveries", "bk:la"] {
            let configuration = StreamConsumer.Configuration(stream: stream, group: "g", consumer: "c")
            let slots = try await [stream, configuration.deadLetterStream, configuration.errorsKey].asyncMap {
                try await client.send("CLUSTER", "KEYSLOT", $0).int
            }
            #expect(Set(slots).count == 1, "\(stream): slots \(slots)")
        }

        // A consumer whose entry always fails: retried, recorded in the errors hash, then moved
        // to the dead-letter stream by the script that also acks it: all on one slot.
        let stream = "bk:events"
        var configuration = StreamConsumer.Configuration(stream: stream, group: "workflow", consumer: "c")
        configuration.blockTime = .milliseconds(100)
        configuration.claimIdleTime = .milliseconds(150)
        configuration.reclaimInterval = .milliseconds(100)
        configuration.maxDeliveries = 2
        let id = try await client.xadd(stream, fields: [("n", "1")])
        let consumer = StreamConsumer(client: client, configuration: configuration, logger: .silent()) { _ in
            throw Poison()
        }
        let deadLettered = try await withRunning(consumer) {
            await RedisTestSupport.eventually { (try? await client.xlen(configuration.deadLetterStream)) == 1 }
        }
        #expect(deadLettered)
        #expect(consumer.statistics.redisErrors == 0)
        #expect(try await client.xrange(configuration.deadLetterStream).first?.string("dead.id") == id.description)
        #expect(try await client.pending(stream, group: "workflow", count: 10).isEmpty)
        #expect(try await client.groupStatus(stream, group: "workflow").pending == 0)
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
