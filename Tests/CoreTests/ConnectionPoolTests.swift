import BuzzKitCore
import Testing

private final class FakeConnection: Sendable {
    let number: Int
    init(number: Int) { self.number = number }
}

private struct PoolClosed: Error {}

/// The generic pool the PostgreSQL and Redis clients share, without I/O.
@Suite struct ConnectionPoolTests {
    private func makePool(capacity: Int) -> ConnectionPool<FakeConnection> {
        ConnectionPool(capacity: capacity, closedError: { PoolClosed() }) { FakeConnection(number: $0) }
    }

    /// Polls the pool's own counters (no timing): a waiter is queued once `waiting` says so.
    private func waitUntilWaiting(_ pool: ConnectionPool<FakeConnection>, _ count: Int) async {
        while pool.statistics.waiting != count { await Task.yield() }
    }

    @Test func makesConnectionsLazilyUpToCapacityAndReusesThem() async throws {
        let pool = makePool(capacity: 2)
        #expect(pool.statistics.created == 0)
        let first = try await pool.lease()
        let second = try await pool.lease()
        #expect(Set([first.number, second.number]) == [1, 2])
        #expect(pool.release(first) == false)
        let again = try await pool.lease()
        #expect(again === first)
        #expect(pool.statistics.created == 2)
    }

    @Test func aCancelledWaiterLeavesTheQueueAndALaterLeaseStillSucceeds() async throws {
        let pool = makePool(capacity: 1)
        let held = try await pool.lease()
        let waiter = Task { try await pool.lease() }
        await waitUntilWaiting(pool, 1)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiter.value }
        #expect(pool.statistics.waiting == 0)
        // The connection given back goes to the pool (not to the cancelled waiter), and the next
        // lease gets it at once.
        #expect(pool.release(held) == false)
        #expect(pool.statistics.idle == 1)
        let next = try await pool.lease()
        #expect(next === held)
    }

    @Test func waitersAreServedFirstComeFirstServedAndCancellingOneSkipsOnlyIt() async throws {
        let pool = makePool(capacity: 1)
        let held = try await pool.lease()
        let first = Task { try await pool.lease() }
        await waitUntilWaiting(pool, 1)
        let cancelled = Task { try await pool.lease() }
        await waitUntilWaiting(pool, 2)
        let third = Task { try await pool.lease() }
        await waitUntilWaiting(pool, 3)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
        #expect(pool.statistics.waiting == 2)
        _ = pool.release(held)
        let firstGot = try await first.value
        _ = pool.release(firstGot)
        #expect(try await third.value === held)
    }

    @Test func aTaskCancelledBeforeItWaitsFailsAtOnce() async throws {
        let pool = makePool(capacity: 1)
        let held = try await pool.lease()
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.lease()
        }
        await #expect(throws: CancellationError.self) { _ = try await waiter.value }
        #expect(pool.statistics.waiting == 0)
        _ = pool.release(held)
        #expect(try await pool.lease() === held)
    }

    @Test func closingFailsWaitersAndLaterLeasesAndHandsBackIdleConnections() async throws {
        let pool = makePool(capacity: 2)
        let lent = try await pool.lease()
        let idle = try await pool.lease()
        _ = pool.release(idle)
        let other = makePool(capacity: 1)
        let held = try await other.lease()
        let waiter = Task { try await other.lease() }
        await waitUntilWaiting(other, 1)
        #expect(other.close().isEmpty)
        await #expect(throws: PoolClosed.self) { _ = try await waiter.value }
        #expect(pool.close().map(\.number) == [idle.number])
        await #expect(throws: PoolClosed.self) { _ = try await pool.lease() }
        #expect(pool.release(lent) == true)  // the caller closes it
        #expect(other.release(held) == true)
    }
}
