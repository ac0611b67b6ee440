/// Something that runs Redis commands: a pooled `RedisClient` or a single `RedisConnection`.
///
/// The typed helpers (`get`, `set`, `xadd`, `readGroup`, ...) are written once against this protocol,
/// so they work on both.
public protocol RedisCommandRunner: Sendable {
    var configuration: RedisConfiguration { get }
    /// One command; an error reply throws `RedisError` with code `.server`. `timeout` replaces
    /// `configuration.commandTimeout` as the socket timeout for this call.
    func command(_ args: [RedisArgument], timeout: Duration?) async throws(RedisError) -> RedisValue
    /// Many commands in one round trip; error replies come back as `.error` elements in order.
    func pipeline(_ commands: [[RedisArgument]], timeout: Duration?) async throws(RedisError) -> [RedisValue]
}

extension RedisConnection: RedisCommandRunner {}

extension RedisCommandRunner {
    public func command(_ args: [RedisArgument]) async throws(RedisError) -> RedisValue {
        try await command(args, timeout: nil)
    }

    public func pipeline(_ commands: [[RedisArgument]]) async throws(RedisError) -> [RedisValue] {
        try await pipeline(commands, timeout: nil)
    }

    /// `send("SET", key, value)`: any mix of strings, bytes, integers and ids as arguments.
    @discardableResult
    public func send(_ name: String, _ args: any RedisArgumentConvertible...) async throws(RedisError) -> RedisValue {
        var argv: [RedisArgument] = [RedisArgument(name)]
        argv.reserveCapacity(args.count + 1)
        for arg in args { argv.append(arg.redisArgument) }
        return try await command(argv, timeout: nil)
    }
}

extension RedisCommandRunner {
    /// Runs the commands of `wire`: on our own runners the replies are mapped on the connection's
    /// thread by `transform`; any other conformer goes through `pipeline` and `fallback`.
    /// Either way an error reply throws (`.server`) once all replies were read.
    func execute<T: Sendable>(
        _ wire: RedisWire, timeout: Duration? = nil,
        _ transform: @escaping @Sendable (RedisReplyParser.Reply) throws(RedisError) -> T,
        fallback: (RedisValue) throws(RedisError) -> T
    ) async throws(RedisError) -> [T] {
        if let connection = self as? RedisConnection {
            return try await connection.execute(wire, timeout: timeout, transform)
        }
        if let client = self as? RedisClient { return try await client.execute(wire, timeout: timeout, transform) }
        var results: [T] = []
        for reply in try await pipeline(wire.decodedCommands(), timeout: timeout) {
            results.append(try fallback(try reply.throwingServerError()))
        }
        return results
    }
}
