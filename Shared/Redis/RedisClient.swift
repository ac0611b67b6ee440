public import BuzzKitCore
internal import CHiredis
import Foundation
import Synchronization

/// A pool of `RedisConnection`s: what services use for everything except blocking reads.
///
/// At most `configuration.poolSize` connections (default 4), each on its own thread, opened
/// lazily; a caller waits when all are busy (in a `ConnectionPool`, so a waiting task that is
/// cancelled leaves the queue and throws `RedisError` code `.cancelled`). Blocking commands (`XREADGROUP BLOCK`) belong on a
/// connection from `makeDedicatedConnection()`, not on the pool. `close()` drops the connections.
///
/// The client is a `Service`: a service process puts it early in its `ServiceGroup`, so it is
/// stopped after every part that uses it has returned; `run()` waits for `shutdown()`, which
/// closes the pool.
public final class RedisClient: RedisCommandRunner, Service {
    public let name = "redis"
    public let configuration: RedisConfiguration
    let logger: Logger

    private let pool: ConnectionPool<RedisConnection>
    private let stopRequested = OneShot<Void>()

    public init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        pool = ConnectionPool(capacity: configuration.poolSize, closedError: { Self.closedError }) { number in
            RedisConnection(configuration: configuration, logger: logger, name: "redis-pool-\(number)")
        }
    }

    private static var closedError: RedisError { RedisError(.closed, "the Redis client was closed") }

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

    /// One command on a pooled connection, answering through `completion` on that connection's
    /// thread (see `RedisConnection.command(_:timeout:completion:)`): the connection goes back to
    /// the pool just before `completion` runs. When every connection is lent, the command waits
    /// for one (first come, first served), holding no thread.
    public func command(
        _ args: [RedisArgument], timeout: Duration? = nil,
        completion: @escaping @Sendable (Result<RedisValue, RedisError>) -> Void
    ) {
        onLeasedConnection(completion) { connection, done in
            connection.command(args, timeout: timeout, completion: done)
        }
    }

    /// `xaddBatch` in one round trip on a pooled connection, answering through `completion` on
    /// that connection's thread (as `command(_:timeout:completion:)` does): the ids in input order,
    /// or the first error reply (the entries before it were added, and so were the others).
    public func xaddBatch(
        _ stream: String, entries: [[(String, [UInt8])]],
        completion: @escaping @Sendable (Result<[StreamEntryID], RedisError>) -> Void
    ) {
        var size = 0
        for entry in entries { size += Self.xaddSize(stream, entry) }
        var wire = RedisWire(capacity: size)
        for entry in entries { Self.appendXAdd(&wire, stream, fields: entry, maxLength: nil, id: "*") }
        onLeasedConnection(completion) { [wire] connection, done in
            connection.execute(wire, RedisReplyParser.xaddID, completion: done)
        }
    }

    /// Runs `work` on a pooled connection once one is free (holding no thread while waiting);
    /// the connection goes back to the pool just before `completion` gets `work`'s result.
    private func onLeasedConnection<T: Sendable>(
        _ completion: @escaping @Sendable (Result<T, RedisError>) -> Void,
        _ work: @escaping @Sendable (RedisConnection, @escaping @Sendable (Result<T, RedisError>) -> Void) -> Void
    ) {
        pool.lease { [pool] leased in
            switch leased {
            case .success(let connection):
                work(connection) { result in
                    _ = pool.release(connection)
                    completion(result)
                }
            case .failure(let error as RedisError):
                completion(.failure(error))
            case .failure:
                completion(.failure(Self.closedError))
            }
        }
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
        _ = try? await stopRequested.wait()
        close()
    }

    /// `close()`, as a `Service`: lets `run()` return.
    public func shutdown() async {
        close()
        stopRequested.fulfill(())
    }

    /// Refuses new work and drops idle connections; leased ones are dropped when returned.
    /// Tasks waiting for a connection fail with `.closed`.
    public func close() {
        // Dropping a connection stops its thread (its deinit disconnects first).
        _ = pool.close()
    }

    // MARK: - Pool

    private func lease() async throws(RedisError) -> RedisConnection {
        do {
            return try await pool.lease()
        } catch let error as RedisError {
            throw error
        } catch {
            throw RedisError(.cancelled, "the task was cancelled while waiting for a pooled Redis connection")
        }
    }

    private func release(_ connection: RedisConnection) {
        // A closed pool hands it back for closing: dropping it is enough.
        _ = pool.release(connection)
    }

    /// Connections made so far / idle now / tasks waiting for one (tests and metrics).
    public var poolStatistics: (created: Int, idle: Int, waiting: Int) { pool.statistics }
}
