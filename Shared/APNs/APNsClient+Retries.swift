import Foundation

/// Every attempt of one delivery and how it ended.
public struct APNsDeliveryResult: Sendable {
    /// One entry per attempt, in order (each with what was sent and what APNs said).
    public var attempts: [APNsResponse]
    /// The final outcome: `.delivered`, `.invalidToken` or `.failed` (never a retry).
    public var outcome: APNsOutcome

    public init(attempts: [APNsResponse], outcome: APNsOutcome) {
        self.attempts = attempts
        self.outcome = outcome
    }
}

extension APNsClient {
    /// Sends `request` until APNs accepts it, rejects it for good, or `policy` runs out.
    ///
    /// Retryable answers wait `policy`'s backoff (through `sleep`, injectable); an
    /// `ExpiredProviderToken` renews the token and retries at once. Every attempt carries the
    /// same `apns-id` (one is generated when the request has none). `onAttempt` sees each attempt
    /// and its outcome as it happens (e.g. to write the ledger). Task cancellation stops the loop
    /// with `.failed(reason: nil)`.
    public func sendWithRetries(
        _ request: APNsRequest, credentials: APNsCredentials, policy: RetryPolicy = .default,
        unitRandom: @Sendable () -> Double = { Double.random(in: 0...1) },
        sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        onAttempt: (APNsResponse, APNsOutcome) async -> Void = { _, _ in }
    ) async -> APNsDeliveryResult {
        var request = request
        if request.apnsId == nil { request.apnsId = UUID().uuidString }
        var attempts: [APNsResponse] = []
        var attempt = 0
        while true {
            attempt += 1
            let response = await send(request, credentials: credentials)
            attempts.append(response)
            let outcome = APNsOutcome.classify(response.disposition, attempt: attempt, policy: policy, unit: unitRandom())
            await onAttempt(response, outcome)
            switch outcome {
            case .delivered, .invalidToken, .failed:
                return APNsDeliveryResult(attempts: attempts, outcome: outcome)
            case .renewTokenAndRetry:
                if let issuedAt = response.tokenIssuedAt { tokenCache.invalidate(credentials, issuedAt: issuedAt) }
            case .retry(let delay):
                do { try await sleep(delay) } catch {
                    return APNsDeliveryResult(attempts: attempts, outcome: .failed(reason: response.reason))
                }
            }
        }
    }
}
