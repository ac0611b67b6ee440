import Foundation
import Synchronization
public import BuzzKitCore
internal import CHiredis

/// A pool of `RedisConnection`s: what services use for everything except blocking reads.
///
/// At most `configuration.poolSize` connections (default 4), each on its own thread, opened
/// lazily; a caller waits when all are busy. Blocking commands (`XREADGROUP BLOCK`) belong on a
/// connection from `makeDedicatedConnection()`, not on the pool. `close()` drops the connections.
///
/// The client is a `Service`: a service process puts it early in its `ServiceGroup`, so it is
/// stopped after every part that uses it has returned; `run()` waits for `shutdown()`, which
/// closes the pool.
public final class RedisClient: RedisCommandRunner, Service {
    public let name = "redis"
    public let configuration: RedisConfiguration
    let logger: Logger

    private struct Pool {
        var idle: [RedisConnection] = []
        var created = 0
        var waiters: [CheckedContinuation<Result<RedisConnection, RedisError>, Never>] = []
        var closed = false
    }

    private let pool = Mutex(Pool())
    private let serial = Atomic<Int>(0)
    private let stopRequested = OneShot<Void>()

    public init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// A connection of its own, outside the pool (for BLOCK reads, MULTI/EXEC sequences, WATCH).
    public func makeDedicatedConnection(name: String = "redis-dedicated") -> RedisConnection {
        RedisConnection(configuration: configuration, logger: logger, name: name)
    }

    /// Runs `body` with a pooled connection leased for its duration.
    public func withConnection<T>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RedisConnection) async throws -> T
    ) async throws -> T {
        let connection = try await lease()
        defer { release(connection) }
        return try await body(connection)
    }

    public func command(_ args: [RedisArgument], timeout: Duration?) async throws(RedisError) -> RedisValue {
        let connection = try await lease()
        defer { release(connection) }
        return try await connection.command(args, timeout: timeout)
    }

    public func pipeline(_ commands: [[RedisArgument]], timeout: Duration?) async throws(RedisError) -> [RedisValue] {
        let connection = try await lease()
        defer { release(connection) }
        return try await connection.pipeline(commands, timeout: timeout)
    }

    /// `RedisConnection.execute(_:timeout:_:)` on a pooled connection.
    func execute<T: Sendable>(
        _ wire: RedisWire, timeout: Duration? = nil,
        _ transform: @escaping @Sendable (UnsafeMutablePointer<redisReply>) throws(RedisError) -> T
    ) async throws(RedisError) -> [T] {
        let connection = try await lease()
        defer { release(connection) }
        return try await connection.execute(wire, timeout: timeout, transform)
    }

    /// Waits until `shutdown()` is called (or the task is cancelled), then closes the pool.
    public func run() async throws {
        await withTaskCancellationHandler {
            await stopRequested.value
        } onCancel: {
            stopRequested.fulfill(())
        }
        close()
    }

    /// `close()`, as a `Service`: lets `run()` return.
    public func shutdown() async {
        close()
        stopRequested.fulfill(())
    }

    /// Refuses new work and drops idle connections; leased ones are dropped when returned.
    public func close() {
        let waiters = pool.withLock { state in
            state.closed = true
            state.idle.removeAll()
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: .failure(RedisError(.closed, "the Redis client was closed"))) }
    }

    // MARK: - Pool

    private enum LeaseAction {
        case use(RedisConnection)
        case create
        case fail(RedisError)
    }

    private func lease() async throws(RedisError) -> RedisConnection {
        let result: Result<RedisConnection, RedisError> = await withCheckedContinuation { continuation in
            let action = pool.withLock { state -> LeaseAction? in
                if state.closed { return .fail(RedisError(.closed, "the Redis client was closed")) }
                if let connection = state.idle.popLast() { return .use(connection) }
                if state.created < configuration.poolSize {
                    state.created += 1
                    return .create
                }
                state.waiters.append(continuation)
                return nil
            }
            switch action {
            case .use(let connection): continuation.resume(returning: .success(connection))
            case .create:
                let n = serial.wrappingAdd(1, ordering: .relaxed).newValue
                continuation.resume(returning: .success(
                    RedisConnection(configuration: configuration, logger: logger, name: "redis-pool-\(n)")))
            case .fail(let error): continuation.resume(returning: .failure(error))
            case nil: break
            }
        }
        return try result.get()
    }

    private func release(_ connection: RedisConnection) {
        let waiter = pool.withLock { state -> CheckedContinuation<Result<RedisConnection, RedisError>, Never>? in
            if state.closed {
                state.created -= 1
                return nil
            }
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.idle.append(connection)
            return nil
        }
        waiter?.resume(returning: .success(connection))
    }
}
