import BuzzKitRedis
import BuzzKitTestSupport
import Synchronization
import Testing

/// A `continuous` consumer (the sender's chunks): a slot takes the next entry as soon as its
/// handler ends, and entries are acked as they end, with the batch loop's guarantees.
@Suite(.requiresRedis) struct StreamConsumerWindowTests {
    let client: RedisClient
    let stream = TestEnvironment.uniqueName("window")

    init() throws { client = try RedisTestSupport.client() }

    func configuration(_ consumer: String) -> StreamConsumer.Configuration {
        var configuration = StreamConsumer.Configuration(stream: stream, group: "workers", consumer: consumer)
        configuration.blockTime = .milliseconds(100)
        configuration.claimIdleTime = .seconds(600)  // no retries within these tests
        configuration.reclaimInterval = .seconds(600)
        configuration.batchSize = 2
        configuration.maxConcurrentHandlers = 2
        configuration.continuous = true
        return configuration
    }

    /// With two slots, the first entry's handler waits for every other entry: they can only get
    /// through the second slot, one after another, which a batch of two (waiting for its slowest
    /// handler) never lets happen.
    @Test func theOtherSlotKeepsTakingEntriesWhileOneHandlerIsSlow() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<20).map { [("n", Array(String($0).utf8))] })
        let seen = Seen()
        let othersDoneFirst = Mutex(false)
        let consumer = StreamConsumer(client: client, configuration: configuration("w"), logger: .silent()) { entry in
            if entry.id == ids[0] {
                let all = await RedisTestSupport.eventually { seen.snapshot.count == 19 }
                othersDoneFirst.withLock { $0 = all }
            }
            seen.record(entry.id)
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually { consumer.statistics.processed == 20 }
        }

        #expect(done)
        #expect(othersDoneFirst.withLock { $0 })
        #expect(Set(seen.snapshot.keys) == Set(ids))
        #expect(seen.snapshot.values.allSatisfy { $0 == 1 })
        #expect(try await client.pending(stream, group: "workers", count: 50).isEmpty)
    }

    @Test func failuresStayPendingWithTheirErrorAndTheRestAreAcked() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<60).map { [("n", Array(String($0).utf8))] })
        let failing = Set(ids.enumerated().filter { $0.offset % 7 == 2 }.map(\.element))
        var config = configuration("f")
        config.batchSize = 5
        config.maxConcurrentHandlers = 3
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: config, logger: .silent()) { entry in
            seen.record(entry.id)
            if failing.contains(entry.id) { throw Poison() }
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually { consumer.statistics.processed + consumer.statistics.failed == 60 }
        }

        #expect(done)
        #expect(seen.snapshot.count == 60 && seen.snapshot.values.allSatisfy { $0 == 1 })
        let pending = try await client.pending(stream, group: "workers", count: 100)
        #expect(Set(pending.map(\.id)) == failing)
        #expect(Set(try await client.hgetAll(config.errorsKey).keys) == Set(failing.map(\.description)))
        #expect(consumer.statistics.processed == 60 - failing.count)
        #expect(consumer.statistics.failed == failing.count)
    }

    /// `stop()` while handlers run and an entry waits behind them: every entry read is handled
    /// and acked before `run()` returns; nothing is left pending, nothing more is read.
    @Test func stopHandlesAndAcksEveryEntryAlreadyRead() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<4).map { [("n", Array(String($0).utf8))] })
        let release = Mutex(false)
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: configuration("s"), logger: .silent()) { entry in
            while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            seen.record(entry.id)
        }
        let read = try await withRunning(consumer) {
            // Two in their handlers, one read behind them (the fourth stays in the stream).
            let read = await RedisTestSupport.eventually {
                (try? await client.pending(stream, group: "workers", count: 20, consumer: "s").count) == 3
            }
            #expect(seen.snapshot.isEmpty)
            consumer.stop()
            release.withLock { $0 = true }
            return read
        }

        #expect(read)
        #expect(Set(seen.snapshot.keys) == Set(ids.prefix(3)))
        #expect(try await client.pending(stream, group: "workers", count: 20).isEmpty)
        #expect(consumer.statistics.processed == 3)
        // The fourth was never delivered: the group still has it to give out.
        let left = try await client.readGroup(stream, group: "workers", consumer: "t", count: 10)
        #expect(left.map(\.id) == [ids[3]])
    }
}
