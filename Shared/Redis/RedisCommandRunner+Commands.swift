import Synchronization

// MARK: - Typed helpers for what services need (keys, counters, hashes, scripts, readiness)

extension RedisCommandRunner {
    /// `PING`; throws when Redis is unreachable (readiness checks).
    public func ping() async throws(RedisError) {
        let reply = try await command(["PING"])
        guard reply.string == "PONG" else { throw .unexpected("PING", reply) }
    }

    public func get(_ key: String) async throws(RedisError) -> [UInt8]? {
        try await command(["GET", RedisArgument(key)]).bytes
    }

    public func getString(_ key: String) async throws(RedisError) -> String? {
        try await get(key).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `SET key value [PX ms] [NX]`. Returns false when NX prevented the write.
    @discardableResult
    public func set(
        _ key: String, _ value: some RedisArgumentConvertible, expiry: Duration? = nil,
        onlyIfNotExists: Bool = false
    ) async throws(RedisError) -> Bool {
        var args: [RedisArgument] = ["SET", RedisArgument(key), value.redisArgument]
        if let expiry { args += ["PX", RedisArgument(max(1, RedisConfiguration.milliseconds(expiry)))] }
        if onlyIfNotExists { args.append("NX") }
        return try await !command(args).isNull
    }

    @discardableResult
    public func del(_ keys: String...) async throws(RedisError) -> Int { try await del(keys: keys) }

    @discardableResult
    public func del(keys: [String]) async throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        return try await integer(["DEL"] + keys.map { RedisArgument($0) }, "DEL")
    }

    @discardableResult
    public func incr(_ key: String) async throws(RedisError) -> Int {
        try await integer(["INCR", RedisArgument(key)], "INCR")
    }

    @discardableResult
    public func incrBy(_ key: String, _ amount: Int) async throws(RedisError) -> Int {
        try await integer(["INCRBY", RedisArgument(key), RedisArgument(amount)], "INCRBY")
    }

    @discardableResult
    public func hincrBy(_ key: String, field: String, by amount: Int) async throws(RedisError) -> Int {
        try await integer(["HINCRBY", RedisArgument(key), RedisArgument(field), RedisArgument(amount)], "HINCRBY")
    }

    /// `HSET key f v [f v ...]`; returns how many fields were new.
    @discardableResult
    public func hset(_ key: String, fields: [(String, any RedisArgumentConvertible)]) async throws(RedisError) -> Int {
        var args: [RedisArgument] = ["HSET", RedisArgument(key)]
        for (name, value) in fields { args += [RedisArgument(name), value.redisArgument] }
        return try await integer(args, "HSET")
    }

    @discardableResult
    public func hset(_ key: String, field: String, value: some RedisArgumentConvertible) async throws(RedisError) -> Int
    {
        try await integer(["HSET", RedisArgument(key), RedisArgument(field), value.redisArgument], "HSET")
    }

    public func hget(_ key: String, field: String) async throws(RedisError) -> [UInt8]? {
        try await command(["HGET", RedisArgument(key), RedisArgument(field)]).bytes
    }

    public func hgetAll(_ key: String) async throws(RedisError) -> [String: [UInt8]] {
        let reply = try await command(["HGETALL", RedisArgument(key)])
        guard let items = reply.array, items.count % 2 == 0 else { throw .unexpected("HGETALL", reply) }
        var result: [String: [UInt8]] = [:]
        for i in stride(from: 0, to: items.count, by: 2) {
            guard let name = items[i].string, let value = items[i + 1].bytes else {
                throw .unexpected("HGETALL", reply)
            }
            result[name] = value
        }
        return result
    }

    @discardableResult
    public func hdel(_ key: String, fields: [String]) async throws(RedisError) -> Int {
        guard !fields.isEmpty else { return 0 }
        return try await integer(["HDEL", RedisArgument(key)] + fields.map { RedisArgument($0) }, "HDEL")
    }

    /// `PEXPIRE key ms`; false when the key does not exist.
    @discardableResult
    public func expire(_ key: String, after: Duration) async throws(RedisError) -> Bool {
        try await integer(
            ["PEXPIRE", RedisArgument(key), RedisArgument(RedisConfiguration.milliseconds(after))],
            "PEXPIRE") == 1
    }

    // MARK: Scripts

    public func eval(_ source: String, keys: [String] = [], args: [RedisArgument] = []) async throws(RedisError)
        -> RedisValue
    {
        try await command(
            ["EVAL", RedisArgument(source), RedisArgument(keys.count)] + keys.map { RedisArgument($0) } + args)
    }

    public func evalSHA(_ sha: String, keys: [String] = [], args: [RedisArgument] = []) async throws(RedisError)
        -> RedisValue
    {
        try await command(
            ["EVALSHA", RedisArgument(sha), RedisArgument(keys.count)] + keys.map { RedisArgument($0) } + args)
    }

    /// `SCRIPT LOAD`; returns the SHA1.
    public func scriptLoad(_ source: String) async throws(RedisError) -> String {
        let reply = try await command(["SCRIPT", "LOAD", RedisArgument(source)])
        guard let sha = reply.string else { throw .unexpected("SCRIPT LOAD", reply) }
        return sha
    }

    /// Runs `script` with EVALSHA, loading it first (and again after `NOSCRIPT`, e.g. a server restart).
    public func run(_ script: RedisScript, keys: [String] = [], args: [RedisArgument] = []) async throws(RedisError)
        -> RedisValue
    {
        if let sha = script.loadedSHA {
            do {
                return try await evalSHA(sha, keys: keys, args: args)
            } catch  where error.serverErrorPrefix == "NOSCRIPT" {
                // fall through and load it again
            }
        }
        let sha = try await scriptLoad(script.source)
        script.remember(sha)
        return try await evalSHA(sha, keys: keys, args: args)
    }

    func integer(_ args: [RedisArgument], _ what: String) async throws(RedisError) -> Int {
        let reply = try await command(args)
        guard case .integer(let value) = reply else { throw .unexpected(what, reply) }
        return value
    }
}

/// A Lua script run with EVALSHA (its SHA1 is learnt from `SCRIPT LOAD` on first use).
/// Keep one instance per script for the life of the process (e.g. a `static let`).
public final class RedisScript: Sendable {
    public let source: String
    private let sha = Mutex<String?>(nil)

    public init(_ source: String) { self.source = source }

    var loadedSHA: String? { sha.withLock { $0 } }
    func remember(_ value: String) { sha.withLock { $0 = value } }
}
