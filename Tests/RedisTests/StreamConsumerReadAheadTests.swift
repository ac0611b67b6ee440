import BuzzKitRedis
import BuzzKitTestSupport
import Synchronization
import Testing

/// The consumer reads the next batch while the current one's handlers run: these pin down what
/// that may and may not change about acking.
@Suite(.requiresRedis) struct StreamConsumerReadAheadTests {
    let client: RedisClient
    let stream = TestEnvironment.uniqueName("readahead")

    init() throws { client = try RedisTestSupport.client() }

    func configuration(_ consumer: String) -> StreamConsumer.Configuration {
        var configuration = StreamConsumer.Configuration(stream: stream, group: "workers", consumer: consumer)
        configuration.blockTime = .milliseconds(100)
        configuration.claimIdleTime = .seconds(600)  // no retries within these tests
        configuration.reclaimInterval = .seconds(600)
        configuration.batchSize = 7
        configuration.maxConcurrentHandlers = 3
        return configuration
    }

    @Test func failedEntriesAreNeverAckedAcrossManyReadAheadBatches() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<200).map { [("n", Array(String($0).utf8))] })
        let failing = Set(ids.enumerated().filter { $0.offset % 10 == 3 }.map(\.element))
        let seen = Seen()
        let config = configuration("f")
        let consumer = StreamConsumer(client: client, configuration: config, logger: .silent()) { entry in
            seen.record(entry.id)
            if failing.contains(entry.id) { throw Poison() }
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually { consumer.statistics.processed + consumer.statistics.failed == 200 }
        }

        #expect(done)
        #expect(seen.snapshot.count == 200)
        #expect(seen.snapshot.values.allSatisfy { $0 == 1 })
        let pending = try await client.pending(stream, group: "workers", count: 500)
        #expect(Set(pending.map(\.id)) == failing)
        #expect(pending.count == failing.count)
        #expect(Set(try await client.hgetAll(config.errorsKey).keys) == Set(failing.map(\.description)))
        #expect(consumer.statistics.processed == 200 - failing.count)
        #expect(consumer.statistics.failed == failing.count)
    }

    @Test func stopHandlesAndAcksTheBatchAlreadyReadAhead() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<10).map { [("n", Array(String($0).utf8))] })
        var config = configuration("s")
        config.batchSize = 5
        let release = Mutex(false)
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: config, logger: .silent()) { entry in
            // The first batch waits until the test lets it go; by then the second was read ahead.
            while entry.id <= ids[4] && !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            seen.record(entry.id)
        }
        let readAhead = try await withRunning(consumer) {
            // All 10 delivered to "s" while the first 5 are still in their handlers: read-ahead happened.
            let readAhead = await RedisTestSupport.eventually {
                (try? await client.pending(stream, group: "workers", count: 20, consumer: "s").count) == 10
            }
            #expect(seen.snapshot.isEmpty)
            consumer.stop()
            release.withLock { $0 = true }
            return readAhead
        }

        #expect(readAhead)
        #expect(Set(seen.snapshot.keys) == Set(ids))
        #expect(seen.snapshot.values.allSatisfy { $0 == 1 })
        #expect(try await client.pending(stream, group: "workers", count: 20).isEmpty)
        #expect(consumer.statistics.processed == 10)
    }

    /// `readAhead` off (the liveactivity service's lanes): a consumer busy with a batch reads
    /// nothing more, so what arrives meanwhile goes to a sibling that is free.
    @Test func withoutReadAheadABusyConsumerLeavesNewEntriesToAFreeSibling() async throws {
        let first = try await client.xaddBatch(stream, entries: (0..<5).map { [("n", Array(String($0).utf8))] })
        var busyConfig = configuration("busy")
        busyConfig.readAhead = false
        let release = Mutex(false)
        let busy = StreamConsumer(client: client, configuration: busyConfig, logger: .silent()) { _ in
            while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        }
        let seen = Seen()
        let free = StreamConsumer(client: client, configuration: configuration("free"), logger: .silent()) { entry in
            seen.record(entry.id)
        }
        let (taken, later) = try await withRunning(busy) {
            let taken = await RedisTestSupport.eventually {
                (try? await client.pending(stream, group: "workers", count: 20, consumer: "busy").count) == 5
            }
            let later = try await withRunning(free) {
                let later = try await client.xaddBatch(
                    stream, entries: (5..<10).map { [("n", Array(String($0).utf8))] })
                _ = await RedisTestSupport.eventually { seen.snapshot.count == 5 }
                return later
            }
            release.withLock { $0 = true }
            return (taken, later)
        }
        #expect(taken)
        #expect(Set(seen.snapshot.keys) == Set(later))
        #expect(Set(seen.snapshot.keys).isDisjoint(with: first))
        #expect(try await client.pending(stream, group: "workers", count: 20).isEmpty)
    }

    @Test func batchHandlerSeesEveryEntryOnceAndOnlyItsFailuresStayPending() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<100).map { [("n", Array(String($0).utf8))] })
        let failing: Set<StreamEntryID> = [ids[0], ids[50], ids[99]]
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: configuration("b"), logger: .silent()) { entries in
            var failures: [StreamEntryID: any Error] = [:]
            for entry in entries {
                seen.record(entry.id)
                if failing.contains(entry.id) { failures[entry.id] = Poison() }
            }
            return failures
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually { consumer.statistics.processed + consumer.statistics.failed == 100 }
        }
        #expect(done)
        #expect(seen.snapshot.count == 100 && seen.snapshot.values.allSatisfy { $0 == 1 })
        #expect(Set(try await client.pending(stream, group: "workers", count: 200).map(\.id)) == failing)
    }
}
