/// How often and how long to wait before trying a push again: exponential backoff with jitter,
/// capped. A pure value: the delay depends only on the attempt number and a random unit value.
///
/// Delay before attempt `n + 1` after `n` failed attempts: `d = min(maxDelay, baseDelay * 2^(n-1))`,
/// then jittered into `[d * (1 - jitter), d]`. Defaults: 5 attempts, 0.5 s base, 30 s cap, jitter 0.5.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included. Default 5.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// Fraction of the delay that is random, 0...1. Default 0.5.
    public var jitter: Double

    public init(
        maxAttempts: Int = 5, baseDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(30),
        jitter: Double = 0.5
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = min(1, max(0, jitter))
    }

    public static let `default` = RetryPolicy()

    /// True when another attempt may follow `attempt` failed attempts.
    public func allowsRetry(afterAttempt attempt: Int) -> Bool { attempt < maxAttempts }

    /// The wait after `attempt` (1-based) failed, for a random `unit` in 0...1.
    public func delay(afterAttempt attempt: Int, unit: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 40)
        let base = Self.nanoseconds(baseDelay)
        let cap = Self.nanoseconds(maxDelay)
        var capped = cap
        if exponent < 40 {
            let (product, overflow) = base.multipliedReportingOverflow(by: Int64(1) << Int64(exponent))
            if !overflow { capped = min(product, cap) }
        }
        let u = min(1, max(0, unit))
        let factor = 1 - jitter + jitter * u
        return .nanoseconds(Int64((Double(capped) * factor).rounded()))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The wait after `attempt` failed, drawing the random unit from `generator`.
    public func delay(afterAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        delay(afterAttempt: attempt, unit: Double.random(in: 0...1, using: &generator))
    }
}
