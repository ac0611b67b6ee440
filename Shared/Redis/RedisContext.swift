import BuzzKitCore
internal import CHiredis
import Foundation
import Synchronization

/// Owns one hiredis `redisContext`.
///
/// `@unchecked Sendable` because every method is called on the owning `WorkerThread` only (the
/// connection submits all work there); `clientID` is the one value read from other threads and
/// sits behind a Mutex. A context with `err` set is freed at once and a new one is opened on next use;
/// so is one whose socket the server closed while it sat idle (checked before every command).
final class RedisContext: @unchecked Sendable {
    private let configuration: RedisConfiguration
    private let logger: Logger
    private var context: UnsafeMutablePointer<redisContext>?
    private var currentTimeoutMilliseconds = -1
    let clientID = Mutex<Int?>(nil)

    init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    // MARK: - Commands

    func execute(_ args: [RedisArgument], timeoutMilliseconds: Int) throws(RedisError) -> RedisValue {
        let replies = try executeWire(
            RedisWire(commands: [args]), timeoutMilliseconds: timeoutMilliseconds, Self.convert)
        guard let reply = replies.first else { throw RedisError(.unexpectedReply, "command: no reply") }
        return reply
    }

    func executePipeline(_ commands: [[RedisArgument]], timeoutMilliseconds: Int) throws(RedisError) -> [RedisValue] {
        try executeWire(RedisWire(commands: commands), timeoutMilliseconds: timeoutMilliseconds, Self.convert)
    }

    /// Sends every command of `wire` in one write, reads one reply per command and maps each with
    /// `transform` while the reply is alive (the reply is freed right after). When `transform`
    /// throws, the remaining replies are still read (the connection stays in step) and the first
    /// error is thrown. I/O errors discard the context and throw.
    func executeWire<T>(
        _ wire: RedisWire, timeoutMilliseconds: Int,
        _ transform: (UnsafeMutablePointer<redisReply>) throws(RedisError) -> T
    ) throws(RedisError) -> [T] {
        guard wire.commandCount > 0 else { return [] }
        let ctx = try connected(timeoutMilliseconds: timeoutMilliseconds)
        let rc = wire.bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { redisAppendFormattedCommand(ctx, $0.baseAddress, $0.count) }
        }
        guard rc == REDIS_OK else { throw fail(ctx, during: "append") }
        var results: [T] = []
        results.reserveCapacity(wire.commandCount)
        var firstError: RedisError?
        for _ in 0..<wire.commandCount {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(ctx, &raw) == REDIS_OK, let raw else { throw fail(ctx, during: "read reply") }
            defer { freeReplyObject(raw) }
            guard firstError == nil else { continue }
            do throws(RedisError) {
                results.append(try transform(raw.assumingMemoryBound(to: redisReply.self)))
            } catch {
                firstError = error
            }
        }
        if let firstError { throw firstError }
        return results
    }

    func disconnect() {
        if let context { redisFree(context) }
        context = nil
        currentTimeoutMilliseconds = -1
        clientID.withLock { $0 = nil }
    }

    // MARK: - Connecting

    private func connected(timeoutMilliseconds: Int) throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        let ctx: UnsafeMutablePointer<redisContext>
        if let existing = context, bk_redis_idle_socket_unusable(existing) == 0 {
            ctx = existing
        } else {
            // None yet, or the server closed it while idle (a restart): a new one, not a failed command.
            if context != nil {
                logger.debug("redis connection closed by the server while idle, reconnecting")
                disconnect()
            }
            ctx = try connect()
        }
        if timeoutMilliseconds != currentTimeoutMilliseconds {
            guard bk_redis_set_timeout(ctx, timeoutMilliseconds) == REDIS_OK else {
                throw fail(ctx, during: "set timeout")
            }
            currentTimeoutMilliseconds = timeoutMilliseconds
        }
        return ctx
    }

    private func connect() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        guard
            let ctx = bk_redis_connect(
                configuration.host, Int32(configuration.port),
                configuration.connectTimeoutMilliseconds)
        else {
            throw RedisError(.connection, "out of memory creating a Redis context")
        }
        if bk_redis_err(ctx) != 0 {
            let message = String(cString: bk_redis_errstr(ctx))
            redisFree(ctx)
            logger.debug("redis connect failed", metadata: ["redis.error": message, "redis.host": configuration.host])
            throw RedisError(.connection, "connect to \(configuration.host):\(configuration.port): \(message)")
        }
        _ = redisEnableKeepAlive(ctx)
        bk_redis_keep_reader_buffer(ctx)
        context = ctx
        currentTimeoutMilliseconds = -1
        do throws(RedisError) {
            _ = try connected(timeoutMilliseconds: configuration.commandTimeoutMilliseconds)
            if let password = configuration.password {
                var auth: [RedisArgument] = ["AUTH"]
                if let user = configuration.username { auth.append(RedisArgument(user)) }
                auth.append(RedisArgument(password))
                if case .error(let message) = try execute(auth, timeoutMilliseconds: currentTimeoutMilliseconds) {
                    // The server's text never echoes the password; ours does not either.
                    throw RedisError(.connection, "authentication failed: \(message)")
                }
            }
            if configuration.database != 0,
                case .error(let message) = try execute(
                    ["SELECT", RedisArgument(configuration.database)],
                    timeoutMilliseconds: currentTimeoutMilliseconds)
            {
                throw RedisError(.connection, "SELECT \(configuration.database) failed: \(message)")
            }
            let id = try execute(["CLIENT", "ID"], timeoutMilliseconds: currentTimeoutMilliseconds).int
            clientID.withLock { $0 = id }
        } catch {
            disconnect()
            throw error
        }
        return context ?? ctx
    }

    /// Turns the context's error into a `RedisError` and discards the context.
    private func fail(_ ctx: UnsafeMutablePointer<redisContext>, during what: String) -> RedisError {
        let savedErrno = bk_errno()
        let err = bk_redis_err(ctx)
        let message = String(cString: bk_redis_errstr(ctx))
        disconnect()
        let code: RedisError.Code
        if err == REDIS_ERR_IO && bk_is_timeout_errno(savedErrno) != 0 {
            code = .timeout
        } else if err == REDIS_ERR_PROTOCOL || err == REDIS_ERR_OOM {
            code = .unexpectedReply
        } else if message.contains("temporarily unavailable") || message.contains("timed out") {
            code = .timeout
        } else {
            code = .connection
        }
        logger.debug("redis connection discarded", metadata: ["redis.error": message, "redis.during": what])
        return RedisError(code, "\(what): \(message.isEmpty ? "unknown error" : message)")
    }

    // MARK: - C glue

    static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisValue {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING:
            guard let str = r.str else { return .bulkString([]) }
            return .bulkString(Array(UnsafeRawBufferPointer(start: str, count: r.len)))
        case REDIS_REPLY_STATUS:
            guard let str = r.str else { return .simpleString("") }
            return .simpleString(String(decoding: UnsafeRawBufferPointer(start: str, count: r.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            guard let str = r.str else { return .error("") }
            return .error(String(decoding: UnsafeRawBufferPointer(start: str, count: r.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            return .integer(Int(r.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisValue] = []
            elements.reserveCapacity(r.elements)
            for i in 0..<r.elements {
                if let child = r.element[i] { elements.append(convert(child)) } else { elements.append(.null) }
            }
            return .array(elements)
        default:
            return .null
        }
    }
}
