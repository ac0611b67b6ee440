public import BuzzKitCore
internal import CHiredis
import Foundation

/// One Redis connection, confined to its own thread.
///
/// Use a connection of your own (`RedisClient.makeDedicatedConnection()`) for blocking commands
/// (`XREADGROUP ... BLOCK`, `BLPOP`): they hold the connection for the whole block time. Anything
/// else can go through `RedisClient`'s pool. The socket connects lazily on first use; after an
/// I/O error or timeout the context is discarded and the next command reconnects (so the
/// connection recovers by itself when the server restarts; the command that hit the break fails).
///
/// The socket timeout is `configuration.commandTimeout`; pass `timeout:` for longer commands
/// (stream helpers add the BLOCK time themselves, so the socket never times out before Redis).
public final class RedisConnection: Sendable {
    public let configuration: RedisConfiguration
    private let thread: WorkerThread
    private let context: RedisContext

    public init(configuration: RedisConfiguration, logger: Logger, name: String = "redis") {
        self.configuration = configuration
        self.thread = WorkerThread(name: name)
        self.context = RedisContext(configuration: configuration, logger: logger)
    }

    deinit {
        let context = self.context
        thread.submit { context.disconnect() }
        thread.stop()
    }

    /// Sends one command and returns its reply. An error reply throws `RedisError` with code `.server`.
    public func command(_ args: [RedisArgument], timeout: Duration? = nil) async throws(RedisError) -> RedisValue {
        let ms = timeoutMilliseconds(timeout)
        return try await onThread { context throws(RedisError) in
            try context.execute(args, timeoutMilliseconds: ms)
        }.throwingServerError()
    }

    /// The same, answering through `completion` on the connection's own thread instead of a
    /// task: no hop to or from the Swift pool (for callers without a task, such as a request
    /// answered on the HTTP server's thread, or a loop that re-submits itself). `completion` must
    /// be short and never block: it holds the connection's thread.
    public func command(
        _ args: [RedisArgument], timeout: Duration? = nil,
        completion: @escaping @Sendable (Result<RedisValue, RedisError>) -> Void
    ) {
        let ms = timeoutMilliseconds(timeout)
        let context = self.context
        let accepted = thread.submit {
            completion(
                Result { () throws(RedisError) -> RedisValue in
                    try context.execute(args, timeoutMilliseconds: ms).throwingServerError()
                })
        }
        if !accepted { completion(.failure(RedisError(.closed, "connection closed"))) }
    }

    /// Sends all commands in one write and reads all replies (hiredis append + get-reply).
    /// Error replies come back as `.error` elements, in order; I/O errors throw.
    public func pipeline(_ commands: [[RedisArgument]], timeout: Duration? = nil) async throws(RedisError)
        -> [RedisValue]
    {
        let ms = timeoutMilliseconds(timeout)
        return try await onThread { context throws(RedisError) in
            try context.executePipeline(commands, timeoutMilliseconds: ms)
        }
    }

    /// Sends the pre-encoded commands of `wire` in one write and maps each reply on the
    /// connection's thread (no `RedisValue` tree). See `RedisContext.executeWire`.
    func execute<T: Sendable>(
        _ wire: RedisWire, timeout: Duration? = nil,
        _ transform: @escaping @Sendable (UnsafeMutablePointer<redisReply>) throws(RedisError) -> T
    ) async throws(RedisError) -> [T] {
        let ms = timeoutMilliseconds(timeout)
        return try await onThread { context throws(RedisError) in
            try context.executeWire(wire, timeoutMilliseconds: ms, transform)
        }
    }

    /// `execute`, answering through `completion` on the connection's own thread (see
    /// `command(_:timeout:completion:)`).
    func execute<T: Sendable>(
        _ wire: RedisWire, timeout: Duration? = nil,
        _ transform: @escaping @Sendable (UnsafeMutablePointer<redisReply>) throws(RedisError) -> T,
        completion: @escaping @Sendable (Result<[T], RedisError>) -> Void
    ) {
        let ms = timeoutMilliseconds(timeout)
        let context = self.context
        let accepted = thread.submit {
            completion(
                Result { () throws(RedisError) -> [T] in
                    try context.executeWire(wire, timeoutMilliseconds: ms, transform)
                })
        }
        if !accepted { completion(.failure(RedisError(.closed, "connection closed"))) }
    }

    /// Closes the socket now (the next command reconnects).
    public func disconnect() async {
        _ = try? await onThread { context throws(RedisError) in context.disconnect() }
    }

    /// The server-side id of the current socket (`CLIENT ID`), for `CLIENT UNBLOCK`; nil while not connected.
    public var serverClientID: Int? { context.clientID.withLock { $0 } }

    private func timeoutMilliseconds(_ timeout: Duration?) -> Int {
        RedisConfiguration.milliseconds(timeout ?? configuration.commandTimeout)
    }

    private func onThread<T: Sendable>(
        _ body: @escaping @Sendable (RedisContext) throws(RedisError) -> T
    ) async throws(RedisError) -> T {
        let context = self.context
        let result: Result<T, RedisError> = await withCheckedContinuation { continuation in
            let accepted = thread.submit {
                continuation.resume(returning: Result { () throws(RedisError) -> T in try body(context) })
            }
            if !accepted { continuation.resume(returning: .failure(RedisError(.closed, "connection closed"))) }
        }
        return try result.get()
    }
}
