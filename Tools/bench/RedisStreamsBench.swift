import BuzzKitCore
import BuzzKitRedis
import Foundation
import Synchronization

/// `buzzkit-bench redis-streams --url redis://127.0.0.1:PORT [--count N] [--payload BYTES]
/// [--producers P] [--chunk C] [--batch B] [--handlers H]`
///
/// Produce: `--producers` tasks each XADD-ing pipelined chunks of `--chunk` entries through
/// `RedisClient.xaddBatch` (one pooled connection each). Consume: one `StreamConsumer` with a
/// trivial handler (at most `--handlers`, default 64, at once) reads and acks the same entries,
/// `--batch` per read. Prints one line per figure:
/// `produce_rate <entries/s>` and `consume_rate <entries/s>`.
enum RedisStreamsBench {
    static func run(arguments: [String]) async throws {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            options[arguments[index].replacingOccurrences(of: "--", with: "")] = arguments[index + 1]
            index += 2
        }
        let count = Int(options["count"] ?? "") ?? 200_000
        let payloadSize = Int(options["payload"] ?? "") ?? 300
        let producers = max(1, Int(options["producers"] ?? "") ?? 4)
        let chunk = Int(options["chunk"] ?? "") ?? 1000
        let batch = Int(options["batch"] ?? "") ?? 500
        let handlers = Int(options["handlers"] ?? "") ?? 64
        var configuration = try RedisConfiguration(url: options["url"] ?? "redis://127.0.0.1:6379")
        configuration.poolSize = producers + 1
        let client = RedisClient(configuration: configuration, logger: .silent())
        let stream = "bench:swift:\(UInt32.random(in: 0...UInt32.max))"
        try await client.del(stream)
        try await client.createGroup(stream, group: "bench", startID: "0")

        // MARK: produce
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: payloadSize)
        let perProducer = count / producers
        let produceStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<producers {
                group.addTask {
                    var remaining = perProducer
                    while remaining > 0 {
                        let n = min(chunk, remaining)
                        let entries = [[(String, [UInt8])]](repeating: [("payload", payload)], count: n)
                        try await client.xaddBatch(stream, entries: entries, chunkSize: chunk)
                        remaining -= n
                    }
                }
            }
            try await group.waitForAll()
        }
        let produced = perProducer * producers
        let produceSeconds = seconds(ContinuousClock.now - produceStart)
        print("produce_rate \(Int(Double(produced) / produceSeconds))")

        // MARK: consume
        var consumerConfiguration = StreamConsumer.Configuration(stream: stream, group: "bench", consumer: "c1")
        consumerConfiguration.batchSize = batch
        consumerConfiguration.maxConcurrentHandlers = handlers
        consumerConfiguration.blockTime = .milliseconds(200)
        consumerConfiguration.reclaimInterval = .seconds(3600)
        let handled = Atomic<Int>(0)
        let consumer = StreamConsumer(client: client, configuration: consumerConfiguration, logger: .silent()) { _ in
            handled.add(1, ordering: .relaxed)
        }
        let consumeStart = ContinuousClock.now
        let running = Task { await consumer.run() }
        while consumer.statistics.processed < produced {
            try await Task.sleep(for: .milliseconds(2))
        }
        let consumeSeconds = seconds(ContinuousClock.now - consumeStart)
        consumer.stop()
        await running.value
        print("consume_rate \(Int(Double(produced) / consumeSeconds))")
        print(
            "consumed \(handled.load(ordering: .relaxed)) pending_after \(try await client.pending(stream, group: "bench", count: 10).count)"
        )
        try await client.del(stream)
        client.close()
    }

    private static func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) / 1e18
    }
}
