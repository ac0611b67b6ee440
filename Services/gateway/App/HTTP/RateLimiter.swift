import BuzzKitCore
import BuzzKitRedis
import BuzzKitWire
import Foundation
import Synchronization

/// Per-key rate limits as a token bucket in Redis, shared by every gateway replica.
///
/// The bucket (`<prefix><key id>`: tokens and last refill time) refills at `requestsPerSecond`
/// up to `burst`, using Redis's own clock (`TIME`) so replicas need not agree on time. To keep a
/// request's cost down, a replica takes tokens in leases of `leaseSize` (one `EVALSHA` round trip
/// per lease, default burst/20 capped at 100 and at least 1) and spends them locally; tokens a
/// replica leased and did not use are lost to the others, which bounds the error to one lease
/// per replica. When Redis fails the request is let through (availability over strictness) and
/// a warning is logged.
public struct RateLimitConfiguration: Sendable {
    /// Sustained rate per key, in requests per second; fractions refill slower than one a second
    /// (0.01: one request every 100 s). Default 1000/s, at least 0.001.
    public var requestsPerSecond: Double
    /// Bucket size (requests allowed at once after idling). Default 2000.
    public var burst: Int
    /// Tokens taken from Redis per round trip. Default: `burst / 20`, clamped to 1...100.
    public var leaseSize: Int
    /// Off: no limits, no Redis traffic. Default on.
    public var enabled: Bool
    /// Redis key prefix of the buckets. Default `bk:ratelimit:`.
    public var keyPrefix: String

    public init(
        requestsPerSecond: Double = 1000, burst: Int = 2000, leaseSize: Int? = nil, enabled: Bool = true,
        keyPrefix: String = "bk:ratelimit:"
    ) {
        self.requestsPerSecond = max(0.001, requestsPerSecond)
        self.burst = max(1, burst)
        self.leaseSize = leaseSize ?? min(100, max(1, burst / 20))
        self.enabled = enabled
        self.keyPrefix = keyPrefix
    }
}

final class RateLimiter: Sendable {
    /// What a request learns: allowed or not, and the header values.
    struct Decision: Sendable {
        var allowed: Bool
        var limit: Int
        var remaining: Int
        /// Seconds until the bucket is full again.
        var resetSeconds: Int
        /// Seconds to wait before retrying (denied requests).
        var retryAfterSeconds: Int

    }

    private struct Local: Sendable {
        var tokens: Int
        var remoteRemaining: Int
    }

    let configuration: RateLimitConfiguration
    let redis: RedisClient
    let logger: Logger
    private let local = Mutex<[UUID: Local]>([:])

    static let script = RedisScript(
        """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local rate = tonumber(ARGV[1])
        local burst = tonumber(ARGV[2])
        local want = tonumber(ARGV[3])
        local b = redis.call('HMGET', KEYS[1], 't', 'ts')
        local tokens = tonumber(b[1])
        local ts = tonumber(b[2])
        if tokens == nil or ts == nil then tokens = burst; ts = now end
        if now > ts then tokens = math.min(burst, tokens + (now - ts) * rate / 1000) end
        local granted = math.min(want, math.floor(tokens))
        tokens = tokens - granted
        redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', tostring(math.max(now, ts)))
        redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
        local retry = 0
        if granted == 0 then retry = math.ceil((1 - tokens) * 1000 / rate) end
        return {granted, math.floor(tokens), retry}
        """)

    init(configuration: RateLimitConfiguration, redis: RedisClient, logger: Logger) {
        self.configuration = configuration
        self.redis = redis
        self.logger = logger
    }

    /// Spends one token of `keyID`'s bucket.
    func acquire(_ keyID: UUID) async -> Decision {
        let c = configuration
        if let decision = acquireLocally(keyID) { return decision }
        do {
            let reply = try await redis.run(
                Self.script, keys: [c.keyPrefix + keyID.lowercasedText],
                args: [
                    RedisArgument(String(c.requestsPerSecond)), RedisArgument(c.burst),
                    RedisArgument(c.leaseSize)
                ])
            guard let values = reply.array, values.count == 3, let granted = values[0].int,
                let remaining = values[1].int, let retryMs = values[2].int
            else {
                logger.warning("ratelimit.unexpected_reply")
                return allowAll()
            }
            if granted == 0 {
                return Decision(
                    allowed: false, limit: c.burst, remaining: 0,
                    resetSeconds: resetSeconds(remaining: remaining),
                    retryAfterSeconds: max(1, (retryMs + 999) / 1000))
            }
            let localTokens = local.withLock { state -> Int in
                var entry = state[keyID] ?? Local(tokens: 0, remoteRemaining: remaining)
                entry.tokens += granted - 1
                entry.remoteRemaining = remaining
                state[keyID] = entry
                return entry.tokens
            }
            let left = remaining + localTokens
            return Decision(
                allowed: true, limit: c.burst, remaining: left, resetSeconds: resetSeconds(remaining: left),
                retryAfterSeconds: 0)
        } catch {
            logger.warning("ratelimit.redis_failed", metadata: ["error": "\(error)"])
            return allowAll()
        }
    }

    /// Spends one of the tokens this replica leased, without I/O; nil when it holds none (then
    /// `acquire` must lease more from Redis).
    func acquireLocally(_ keyID: UUID) -> Decision? {
        let left: Int? = local.withLock { state in
            guard var entry = state[keyID], entry.tokens > 0 else { return nil }
            entry.tokens -= 1
            state[keyID] = entry
            return entry.tokens + entry.remoteRemaining
        }
        guard let left else { return nil }
        return Decision(
            allowed: true, limit: configuration.burst, remaining: left,
            resetSeconds: resetSeconds(remaining: left), retryAfterSeconds: 0)
    }

    private func allowAll() -> Decision {
        Decision(
            allowed: true, limit: configuration.burst, remaining: configuration.burst, resetSeconds: 0,
            retryAfterSeconds: 0)
    }

    private func resetSeconds(remaining: Int) -> Int {
        let missing = max(0, configuration.burst - remaining)
        return Int((Double(missing) / configuration.requestsPerSecond).rounded(.up))
    }
}
