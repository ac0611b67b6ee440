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
    /// Retryable answers wait `policy`'s backoff, or the server's `retry-after` when longer
    /// (through `sleep`, injectable); an
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
        return await sendAgain(
            request, after: [], credentials: credentials, policy: policy, unitRandom: unitRandom,
            sleep: sleep, onAttempt: onAttempt)
    }

    /// Sends every request, each until APNs accepts it, rejects it for good, or `policy` runs out
    /// (as `sendWithRetries(_:credentials:policy:)` does for one), and returns one result per
    /// request, in order.
    ///
    /// First attempts go out as ONE batch (`send(batch:credentials:)`); only the requests that
    /// need another attempt continue one by one, concurrently. Requests without an `apns-id` get
    /// one, kept across their attempts.
    public func sendWithRetries(
        batch requests: [APNsRequest], credentials: APNsCredentials, policy: RetryPolicy = .default,
        unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async -> [APNsDeliveryResult] {
        var requests = requests
        for index in requests.indices where requests[index].apnsId == nil { requests[index].apnsId = UUID().uuidString }
        let first = await send(batch: requests, credentials: credentials)
        // In order; a request to be sent again holds a placeholder (no attempts) until its
        // result is in.
        var results: [APNsDeliveryResult] = []
        results.reserveCapacity(requests.count)
        var again: [(index: Int, response: APNsResponse, outcome: APNsOutcome)] = []
        for (index, response) in first.enumerated() {
            // The random unit only for an answer that waits a backoff: drawing it for every
            // accepted push cost a getrandom system call per delivery.
            let outcome = APNsOutcome.classify(response, attempt: 1, policy: policy, unit: unitRandom)
            switch outcome {
            case .delivered, .invalidToken, .failed:
                results.append(APNsDeliveryResult(attempts: [response], outcome: outcome))
            case .retry, .renewTokenAndRetry:
                results.append(APNsDeliveryResult(attempts: [], outcome: .failed(reason: nil)))
                again.append((index, response, outcome))
            }
        }
        if !again.isEmpty {
            let requests = requests
            await withTaskGroup(of: (Int, APNsDeliveryResult).self) { group in
                for (index, response, outcome) in again {
                    group.addTask {
                        if let result = await self.afterAttempt(
                            response, outcome, attempts: [response], credentials: credentials,
                            sleep: sleep)
                        {
                            return (index, result)
                        }
                        return (
                            index,
                            await self.sendAgain(
                                requests[index], after: [response], credentials: credentials,
                                policy: policy, unitRandom: unitRandom, sleep: sleep)
                        )
                    }
                }
                for await (index, result) in group { results[index] = result }
            }
        }
        return results
    }

    /// Sends `request` after its earlier `attempts` (whose last one asked for another) until an
    /// attempt's outcome is final: the loop both `sendWithRetries` share.
    private func sendAgain(
        _ request: APNsRequest, after earlier: [APNsResponse], credentials: APNsCredentials, policy: RetryPolicy,
        unitRandom: () -> Double, sleep: (Duration) async throws -> Void,
        onAttempt: (APNsResponse, APNsOutcome) async -> Void = { _, _ in }
    ) async -> APNsDeliveryResult {
        var attempts = earlier
        while true {
            let response = await send(request, credentials: credentials)
            attempts.append(response)
            let outcome = APNsOutcome.classify(response, attempt: attempts.count, policy: policy, unit: unitRandom)
            await onAttempt(response, outcome)
            if let result = await afterAttempt(
                response, outcome, attempts: attempts, credentials: credentials, sleep: sleep)
            {
                return result
            }
        }
    }

    /// The step after one attempt: the final result, or nil to try again (after renewing the
    /// token or sleeping the backoff).
    private func afterAttempt(
        _ response: APNsResponse, _ outcome: APNsOutcome, attempts: [APNsResponse],
        credentials: APNsCredentials,
        sleep: (Duration) async throws -> Void
    ) async -> APNsDeliveryResult? {
        switch outcome {
        case .delivered, .invalidToken, .failed:
            return APNsDeliveryResult(attempts: attempts, outcome: outcome)
        case .renewTokenAndRetry:
            if let issuedAt = response.tokenIssuedAt { tokenCache.invalidate(credentials, issuedAt: issuedAt) }
            return nil
        case .retry(let delay):
            do { try await sleep(delay) } catch {
                return APNsDeliveryResult(attempts: attempts, outcome: .failed(reason: response.reason))
            }
            return nil
        }
    }
}
