import Testing
import Synchronization
import BuzzKitRedis
import BuzzKitTestSupport

/// Restarts a Redis of the test's own (never the shared one).
@Suite struct RedisRestartTests {
    @Test func clientRecoversAfterServerRestart() async throws {
        let server = try ThrowawayRedis()
        let client = RedisClient(configuration: try server.configuration(poolSize: 1), logger: .silent())
        try await client.set("k", "before")
        #expect(try await client.getString("k") == "before")

        try server.restart()

        // The pooled socket is dead: at most the first command fails (with a connection error,
        // and the context is discarded); the next one reconnects.
        var failures: [RedisError] = []
        var value: String??
        for _ in 0..<2 where value == nil {
            do { value = .some(try await client.getString("k")) } catch { failures.append(error) }
        }
        #expect(value == .some(nil))  // the restarted server has no data
        #expect(failures.count <= 1)
        #expect(failures.allSatisfy { $0.code == .connection })
        try await client.set("k", "after")
        #expect(try await client.getString("k") == "after")
        server.stop()
        let down = await #expect(throws: RedisError.self) { try await client.ping() }
        #expect(down?.code == .connection)
    }

    @Test func consumerKeepsWorkingAcrossARestart() async throws {
        let server = try ThrowawayRedis()
        let client = RedisClient(configuration: try server.configuration(poolSize: 2), logger: .silent())
        var configuration = StreamConsumer.Configuration(stream: "s", group: "g", consumer: "c")
        configuration.blockTime = .milliseconds(100)
        configuration.retryBackoff = .milliseconds(20)
        configuration.maxRetryBackoff = .milliseconds(200)
        let seen = Seen()
        let consumer = StreamConsumer(client: client, configuration: configuration, logger: .silent()) { entry in
            seen.record(entry.id)
        }
        try await withRunning(consumer) {
            try await client.xadd("s", fields: [("n", "1")])
            #expect(await RedisTestSupport.eventually { seen.snapshot.count == 1 })

            try server.restart()  // stream and group are gone (no persistence)

            // Producing may fail once on the dead pooled socket; keep trying like a service would.
            var produced = false
            for _ in 0..<5 where !produced {
                produced = (try? await client.xadd("s", fields: [("n", "2")])) != nil
            }
            #expect(produced)
            #expect(await RedisTestSupport.eventually { seen.snapshot.count == 2 })
        }
        #expect(consumer.statistics.redisErrors >= 1)
        server.stop()
    }
}
