import BuzzKitRedis
import BuzzKitTestSupport
import Synchronization
import Testing

/// Records what handlers saw, shared with the @Sendable handler closures.
final class Seen: Sendable {
    private let counts = Mutex<[StreamEntryID: Int]>([:])
    func record(_ id: StreamEntryID) { counts.withLock { $0[id, default: 0] += 1 } }
    var snapshot: [StreamEntryID: Int] { counts.withLock { $0 } }
}

struct Poison: Error, CustomStringConvertible {
    var description: String { "poison entry cannot be handled" }
}

@Suite(.requiresRedis) struct StreamConsumerTests {
    let client: RedisClient
    let stream = TestEnvironment.uniqueName("consumer")

    init() throws { client = try RedisTestSupport.client() }

    func fastConfiguration(_ consumer: String) -> StreamConsumer.Configuration {
        var configuration = StreamConsumer.Configuration(stream: stream, group: "workers", consumer: consumer)
        configuration.blockTime = .milliseconds(100)
        configuration.claimIdleTime = .milliseconds(150)
        configuration.reclaimInterval = .milliseconds(100)
        configuration.batchSize = 7
        configuration.maxConcurrentHandlers = 3
        return configuration
    }

    @Test func reclaimsEntriesOfADeadConsumerExactlyOnce() async throws {
        try await client.createGroup(stream, group: "workers")
        let ids = try await client.xaddBatch(stream, entries: (0..<60).map { [("n", Array(String($0).utf8))] })
        // Consumer "a" takes 25 entries and dies without acking.
        let dead = try await client.readGroup(stream, group: "workers", consumer: "a", count: 25)
        #expect(dead.count == 25)

        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: fastConfiguration("b"), logger: .silent()) {
            entry in
            seen.record(entry.id)
        }
        let done = try await withRunning(consumer) {
            let done = await RedisTestSupport.eventually { seen.snapshot.count == ids.count }
            // Let a few more reclaim rounds pass: nothing may be processed twice.
            try await Task.sleep(for: .milliseconds(400))
            return done
        }

        #expect(done)
        #expect(Set(seen.snapshot.keys) == Set(ids))
        #expect(seen.snapshot.values.allSatisfy { $0 == 1 })
        #expect(try await client.pending(stream, group: "workers", count: 100).isEmpty)
        #expect(consumer.statistics.reclaimed == 25)
        #expect(consumer.statistics.processed == 60)
    }

    @Test func poisonEntryIsDeadLetteredAfterMaxDeliveries() async throws {
        var configuration = fastConfiguration("c")
        configuration.maxDeliveries = 3
        let ids = try await client.xaddBatch(stream, entries: (0..<20).map { [("n", Array(String($0).utf8))] })
        let poisonID = ids[4]
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: configuration, logger: .silent()) { entry in
            seen.record(entry.id)
            if entry.id == poisonID { throw Poison() }
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually {
                (try? await client.xlen(configuration.deadLetterStream)) == 1
            }
        }

        #expect(done)
        let attempts = seen.snapshot
        #expect(attempts[poisonID] == 3)
        #expect(ids.filter { $0 != poisonID }.allSatisfy { attempts[$0] == 1 })
        let deadEntries = try await client.xrange(configuration.deadLetterStream)
        #expect(deadEntries.count == 1)
        let deadEntry = try #require(deadEntries.first)
        #expect(deadEntry.string("n") == "4")
        #expect(deadEntry.string("dead.stream") == stream)
        #expect(deadEntry.string("dead.group") == "workers")
        #expect(deadEntry.string("dead.id") == poisonID.description)
        #expect(deadEntry.string("dead.deliveries") == "3")
        #expect(deadEntry.string("dead.error") == "poison entry cannot be handled")
        #expect(try await client.pending(stream, group: "workers", count: 100).isEmpty)
        #expect(try await client.hgetAll(configuration.errorsKey).isEmpty)
        #expect(consumer.statistics.deadLettered == 1)
        #expect(consumer.statistics.processed == 19)
    }

    @Test func failedEntryRecordsItsErrorAndStaysPending() async throws {
        var configuration = fastConfiguration("e")
        configuration.claimIdleTime = .seconds(600)  // never retried within this test
        let id = try await client.xadd(stream, fields: [("x", "1")])
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: configuration, logger: .silent()) { entry in
            seen.record(entry.id)
            throw Poison()
        }
        let recorded = try await withRunning(consumer) {
            await RedisTestSupport.eventually {
                (try? await client.hget(configuration.errorsKey, field: id.description)) != nil
            }
        }
        #expect(recorded)
        #expect(
            try await client.hget(configuration.errorsKey, field: id.description)
                == Array("poison entry cannot be handled".utf8))
        let pending = try await client.pending(stream, group: "workers", count: 10)
        #expect(pending.map(\.id) == [id])
        #expect(seen.snapshot[id] == 1)
    }

    @Test func stopWaitsForTheSlowHandlerAndAcksIt() async throws {
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let finished = Mutex(false)
        let id = try await client.xadd(stream, fields: [("slow", "yes")])
        let consumer = StreamConsumer(client: client, configuration: fastConfiguration("s"), logger: .silent()) { _ in
            startedContinuation.yield()
            try await Task.sleep(for: .milliseconds(500))
            finished.withLock { $0 = true }
        }
        try await withRunning(consumer) {
            for await _ in started { break }
        }
        #expect(finished.withLock { $0 })
        #expect(try await client.pending(stream, group: "workers", count: 10).isEmpty)
        #expect(consumer.statistics.processed == 1)
        _ = id
    }

    /// A consumer waiting out a Redis error (here: nothing listens on its port) stops at once
    /// when asked, not after its backoff (an hour here; the group gives up after 20 s).
    @Test func stopEndsTheWaitAfterARedisErrorAtOnce() async throws {
        let unreachable = RedisClient(
            configuration: try RedisConfiguration(url: "redis://127.0.0.1:\(freeLoopbackPort())"), logger: .silent())
        var configuration = fastConfiguration("unreachable")
        configuration.retryBackoff = .seconds(3600)
        configuration.maxRetryBackoff = .seconds(3600)
        let consumer = StreamConsumer(client: unreachable, configuration: configuration, logger: .silent()) { _ in }
        try await withRunning([ConsumerService(consumer)], shutdownTimeout: .seconds(20)) {
            while consumer.statistics.redisErrors == 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(consumer.statistics.redisErrors >= 1)
        unreachable.close()
    }

    /// A handler slower than `claimIdleTime` keeps its entry: its consumer renews the claim, so
    /// the sibling's reclaim rounds (every 100 ms) never take it over and run it a second time.
    @Test func aSlowHandlerKeepsItsEntryFromASibling() async throws {
        try await client.createGroup(stream, group: "workers")
        let ids = try await client.xaddBatch(stream, entries: (0..<5).map { [("n", Array(String($0).utf8))] })
        let seen = Seen()
        func configuration(_ name: String) -> StreamConsumer.Configuration {
            var configuration = fastConfiguration(name)
            // Renewed every 2 s: a margin of 4 s that a loaded CI machine's scheduling cannot eat
            // (with 1.5 s, renewed every 500 ms, a run at load 35 lost the entry to the sibling).
            configuration.claimIdleTime = .seconds(6)
            return configuration
        }
        let handler: StreamConsumer.Handler = { entry in
            seen.record(entry.id)
            if entry.id == ids[0] { try await Task.sleep(for: .seconds(14)) }  // over two claim idle times
        }
        let first = StreamConsumer(
            client: client, configuration: configuration("a"), logger: .silent(), handler: handler)
        let second = StreamConsumer(
            client: client, configuration: configuration("b"), logger: .silent(), handler: handler)
        let done = try await withRunning(first, second) {
            try await RedisTestSupport.eventually {
                guard seen.snapshot.count == ids.count else { return false }
                return try await client.pending(stream, group: "workers", count: 10).isEmpty
            }
        }
        #expect(done)
        #expect(seen.snapshot.values.allSatisfy { $0 == 1 }, "\(seen.snapshot)")
        #expect(first.statistics.reclaimed + second.statistics.reclaimed == 0)
        #expect(first.statistics.processed + second.statistics.processed == ids.count)
    }

    @Test func batchHandlerAcksAllButItsFailures() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<10).map { [("n", Array(String($0).utf8))] })
        let seen = Seen()
        var configuration = fastConfiguration("batch")
        configuration.claimIdleTime = .seconds(600)
        let consumer = StreamConsumer(client: client, configuration: configuration, logger: .silent()) { entries in
            var failures: [StreamEntryID: any Error] = [:]
            for entry in entries {
                seen.record(entry.id)
                if entry.id == ids[0] { failures[entry.id] = Poison() }
            }
            return failures
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually { seen.snapshot.count == 10 }
        }
        #expect(done)
        #expect(try await client.pending(stream, group: "workers", count: 10).map(\.id) == [ids[0]])
    }

    /// An answering handler's commands go out with the acknowledgement: every entry's answer is
    /// on the list, the failed entry's too (the handler chose to answer it), and only the failed
    /// entry stays pending; an error reply to one of the commands acks the entries all the same.
    @Test func answeringBatchHandlerSendsItsCommandsWithTheAcks() async throws {
        let ids = try await client.xaddBatch(stream, entries: (0..<10).map { [("n", Array(String($0).utf8))] })
        let answers = stream + ":answers"
        let wrongType = stream + ":string"
        _ = try await client.command(["SET", RedisArgument(wrongType), "x"])
        let seen = Seen()
        var configuration = fastConfiguration("answering")
        configuration.claimIdleTime = .seconds(600)
        let consumer = StreamConsumer(client: client, configuration: configuration, logger: .silent()) {
            (entries: [StreamEntry]) -> StreamConsumer.BatchOutcome in
            var failures: [StreamEntryID: any Error] = [:]
            var commands: [[RedisArgument]] = [["LPUSH", RedisArgument(wrongType), "refused"]]
            for entry in entries {
                seen.record(entry.id)
                if entry.id == ids[0] { failures[entry.id] = Poison() }
                commands.append(["RPUSH", RedisArgument(answers), RedisArgument(entry.id.description)])
            }
            return StreamConsumer.BatchOutcome(failures: failures, commands: commands)
        }
        let done = try await withRunning(consumer) {
            await RedisTestSupport.eventually {
                (try? await client.command(["LLEN", RedisArgument(answers)]).int) == 10
            }
        }
        #expect(done)
        let answered = try await client.command(["LRANGE", RedisArgument(answers), "0", "-1"]).array ?? []
        #expect(answered.compactMap(\.string) == ids.map(\.description))
        #expect(try await client.pending(stream, group: "workers", count: 10).map(\.id) == [ids[0]])
        _ = try await client.command(["DEL", RedisArgument(answers), RedisArgument(wrongType)])
    }
}
