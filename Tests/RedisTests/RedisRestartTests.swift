import BuzzKitRedis
import BuzzKitTestSupport
import Synchronization
import Testing

/// Restarts a Redis of the test's own (never the shared one).
@Suite struct RedisRestartTests {
    @Test func clientRecoversAfterServerRestart() async throws {
        let server = try await ThrowawayRedis.launch()
        let client = RedisClient(configuration: try server.configuration(poolSize: 1), logger: .silent())
        try await client.set("k", "before")
        #expect(try await client.getString("k") == "before")

        try await server.restart()

        // The server closed the pooled socket when it stopped: the client sees that before it
        // sends and reconnects, so even the first command after the restart succeeds (a service's
        // first XADD after a restart must not fail, or its caller retries or waits for a reclaim).
        #expect(try await client.getString("k") == nil)  // the restarted server has no data
        try await client.set("k", "after")
        #expect(try await client.getString("k") == "after")
        server.stop()
        let down = await #expect(throws: RedisError.self) { try await client.ping() }
        #expect(down?.code == .connection)
    }

    @Test func consumerKeepsWorkingAcrossARestart() async throws {
        let server = try await ThrowawayRedis.launch()
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

            try await server.restart()  // stream and group are gone (no persistence)

            // The first XADD after the restart goes through: the dead pooled socket is replaced.
            try await client.xadd("s", fields: [("n", "2")])
            #expect(await RedisTestSupport.eventually { seen.snapshot.count == 2 })
        }
        #expect(consumer.statistics.redisErrors >= 1)
        server.stop()
    }
}
