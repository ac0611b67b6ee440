import Foundation

/// What one response means, before retry limits: the table every sender follows.
///
/// | answer | disposition |
/// |---|---|
/// | 200 | `delivered` |
/// | 403 ExpiredProviderToken | `renewToken` |
/// | 410 (Unregistered, ExpiredToken), 400 BadDeviceToken | `invalidToken` (with APNs's timestamp) |
/// | 429, 500, 503 (any 5xx), 400 IdleTimeout; timeouts, failed connects, broken connections | `retryable` |
/// | any other 4xx; TLS failures, invalid requests, shutdown | `failed` |
public enum APNsDisposition: Sendable, Hashable {
    case delivered(apnsId: String)
    /// `reason` nil: no response (a timeout or broken connection).
    case retryable(reason: APNsReason?)
    case renewToken
    case invalidToken(reason: APNsReason, timestamp: Date?)
    /// `reason` nil: no response (see the response's `transportError`).
    case failed(reason: APNsReason?)

    public init(_ response: APNsResponse) {
        self = Self.classify(
            status: response.status, reason: response.reason, apnsId: response.apnsId,
            timestamp: response.timestamp, transportRetryable: response.transportError?.isRetryable)
    }

    /// The table above. `transportRetryable` is nil when a response arrived.
    public static func classify(
        status: Int, reason: APNsReason?, apnsId: String?, timestamp: Date?,
        transportRetryable: Bool?
    ) -> APNsDisposition {
        if let transportRetryable, status == 0 {
            return transportRetryable ? .retryable(reason: nil) : .failed(reason: nil)
        }
        switch (status, reason) {
        case (200, _): return .delivered(apnsId: apnsId ?? "")
        case (403, .expiredProviderToken?): return .renewToken
        case (410, _): return .invalidToken(reason: reason ?? .unregistered, timestamp: timestamp)
        case (400, .badDeviceToken?): return .invalidToken(reason: .badDeviceToken, timestamp: nil)
        case (400, .idleTimeout?): return .retryable(reason: reason)
        case (429, _): return .retryable(reason: reason ?? .tooManyRequests)
        case (500...599, _): return .retryable(reason: reason)
        default: return .failed(reason: reason)
        }
    }
}

/// What the sender does next with a delivery after an attempt, retry limits applied.
public enum APNsOutcome: Sendable, Hashable {
    /// APNs accepted the push: the delivery is `sent`.
    case delivered(apnsId: String)
    /// Try again after this wait (backoff with jitter).
    case retry(after: Duration)
    /// The provider token expired: renew it (`APNsTokenCache.invalidate`) and retry at once.
    case renewTokenAndRetry
    /// The device token is dead: deactivate the device unless it registered again after
    /// `timestamp`. The delivery is `invalid_token`.
    case invalidToken(reason: APNsReason, timestamp: Date?)
    /// Give up: the delivery is `failed`, with the last reason APNs gave (nil: no response, see
    /// the last attempt's `transportError`). Retries running out ends here too.
    case failed(reason: APNsReason?)

    /// The outcome of `attempt` (1-based) given its `response`: a retryable answer becomes
    /// `.retry(after:)` while `policy` allows another attempt, `.failed` after that; a token
    /// renewal counts as an attempt too. A `retry-after` the server sent lengthens the wait to
    /// at least that (at most `policy.maxDelay`); without one the backoff alone decides.
    public static func classify(
        _ response: APNsResponse, attempt: Int, policy: RetryPolicy,
        using generator: inout some RandomNumberGenerator
    ) -> APNsOutcome {
        classify(response.disposition, attempt: attempt, policy: policy) {
            policy.delay(afterAttempt: attempt, using: &generator)
        }.honouring(response.retryAfter, policy: policy)
    }

    /// As above with the random unit given (tests, tables).
    public static func classify(_ response: APNsResponse, attempt: Int, policy: RetryPolicy, unit: Double)
        -> APNsOutcome
    {
        classify(response.disposition, attempt: attempt, policy: policy, unit: unit)
            .honouring(response.retryAfter, policy: policy)
    }

    /// As above with the random unit drawn only when the answer is retryable (a sender's hot
    /// path: most answers are final and need no backoff).
    public static func classify(
        _ response: APNsResponse, attempt: Int, policy: RetryPolicy, unit: () -> Double
    ) -> APNsOutcome {
        classify(response.disposition, attempt: attempt, policy: policy) {
            policy.delay(afterAttempt: attempt, unit: unit())
        }.honouring(response.retryAfter, policy: policy)
    }

    /// A retry waits at least `retryAfter` (capped at `policy.maxDelay`, so one answer cannot
    /// park a delivery for longer than the policy's longest backoff).
    func honouring(_ retryAfter: Duration?, policy: RetryPolicy) -> APNsOutcome {
        guard case .retry(let backoff) = self, let retryAfter else { return self }
        return .retry(after: max(backoff, min(retryAfter, policy.maxDelay)))
    }

    /// As above with the random unit given (tests, tables).
    public static func classify(
        _ disposition: APNsDisposition, attempt: Int, policy: RetryPolicy,
        unit: Double
    ) -> APNsOutcome {
        classify(disposition, attempt: attempt, policy: policy) { policy.delay(afterAttempt: attempt, unit: unit) }
    }

    private static func classify(
        _ disposition: APNsDisposition, attempt: Int, policy: RetryPolicy,
        delay: () -> Duration
    ) -> APNsOutcome {
        switch disposition {
        case .delivered(let apnsId): return .delivered(apnsId: apnsId)
        case .invalidToken(let reason, let timestamp): return .invalidToken(reason: reason, timestamp: timestamp)
        case .failed(let reason): return .failed(reason: reason)
        case .renewToken:
            return policy.allowsRetry(afterAttempt: attempt)
                ? .renewTokenAndRetry : .failed(reason: .expiredProviderToken)
        case .retryable(let reason):
            return policy.allowsRetry(afterAttempt: attempt) ? .retry(after: delay()) : .failed(reason: reason)
        }
    }
}
