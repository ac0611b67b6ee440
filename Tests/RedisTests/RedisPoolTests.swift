import BuzzKitCore
import BuzzKitRedis
import BuzzKitTestSupport
import Testing

/// `RedisClient`'s pool is the generic `ConnectionPool`: a task waiting for a connection honours
/// cancellation, and the pool goes on serving afterwards.
@Suite(.requiresRedis) struct RedisPoolTests {
    @Test func aCancelledWaiterLeavesTheQueueAndALaterCommandStillSucceeds() async throws {
        let client = try RedisTestSupport.client(poolSize: 1)
        let key = TestEnvironment.uniqueName("pool")
        let holding = OneShot<Void>()
        let release = OneShot<Void>()
        // Holds the only connection until `release`.
        let holder = Task {
            try await client.withConnection { connection in
                _ = try await connection.command(["INCR", .init(key)])
                holding.fulfill(())
                try await release.wait()
            }
        }
        try await holding.wait()
        let waiter = Task { try await client.incr(key) }
        while client.poolStatistics.waiting != 1 { await Task.yield() }
        waiter.cancel()
        let error = await #expect(throws: RedisError.self) { _ = try await waiter.value }
        #expect(error?.code == .cancelled)
        #expect(client.poolStatistics.waiting == 0)
        release.fulfill(())
        try await holder.value
        // The cancelled INCR never ran; the next command gets the connection back.
        #expect(try await client.incr(key) == 2)
        #expect(client.poolStatistics.created == 1)
        _ = try await client.del(keys: [key])
        await client.shutdown()
    }

    @Test func closingFailsWaitersWithClosed() async throws {
        let client = try RedisTestSupport.client(poolSize: 1)
        let holding = OneShot<Void>()
        let release = OneShot<Void>()
        let holder = Task {
            try await client.withConnection { connection in
                _ = try await connection.command(["PING"])
                holding.fulfill(())
                try await release.wait()
            }
        }
        try await holding.wait()
        let waiter = Task { try await client.ping() }
        while client.poolStatistics.waiting != 1 { await Task.yield() }
        client.close()
        let error = await #expect(throws: RedisError.self) { try await waiter.value }
        #expect(error?.code == .closed)
        release.fulfill(())
        try await holder.value
        await #expect(throws: RedisError.self) { try await client.ping() }
    }
}
