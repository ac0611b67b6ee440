import BuzzKitHTTPClient
import Foundation
import Testing

@testable import BuzzKitAPNs

@Suite("Retry policy and outcome classification")
struct RetryPolicyTests {
    @Test(
        arguments: [
            // attempt, unit, expected milliseconds (base 500 ms, cap 30 s, jitter 0.5)
            (1, 0.0, 250), (1, 1.0, 500), (1, 0.5, 375),
            (2, 1.0, 1000), (3, 1.0, 2000), (4, 0.0, 2000), (6, 1.0, 16000),
            (7, 1.0, 30000), (7, 0.0, 15000), (50, 1.0, 30000), (0, 1.0, 500)
        ] as [(Int, Double, Int)])
    func backoffTable(attempt: Int, unit: Double, expectedMilliseconds: Int) {
        #expect(RetryPolicy.default.delay(afterAttempt: attempt, unit: unit) == .milliseconds(expectedMilliseconds))
    }

    @Test func noJitterAndCustomBase() {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), maxDelay: .milliseconds(250), jitter: 0)
        #expect(policy.delay(afterAttempt: 1, unit: 0.3) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 2, unit: 0.9) == .milliseconds(200))
        #expect(policy.delay(afterAttempt: 3, unit: 0.1) == .milliseconds(250))
        #expect(policy.allowsRetry(afterAttempt: 2))
        #expect(!policy.allowsRetry(afterAttempt: 3))
    }

    @Test func seededGeneratorStaysInRange() {
        var generator = FixedGenerator(value: UInt64.max / 4)
        let delay = RetryPolicy.default.delay(afterAttempt: 3, using: &generator)
        #expect(delay >= .milliseconds(1000) && delay <= .milliseconds(2000))
    }

    @Test(
        arguments: [
            (200, nil, nil, APNsDisposition.delivered(apnsId: "id-1")),
            (403, "ExpiredProviderToken", nil, .renewToken),
            (
                410, "Unregistered", nil,
                .invalidToken(reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000.123))
            ),
            (
                410, "ExpiredToken", nil,
                .invalidToken(reason: .expiredToken, timestamp: Date(timeIntervalSince1970: 1_700_000_000.123))
            ),
            (400, "BadDeviceToken", nil, .invalidToken(reason: .badDeviceToken, timestamp: nil)),
            (429, "TooManyRequests", nil, .retryable(reason: .tooManyRequests)),
            (429, "TooManyProviderTokenUpdates", nil, .retryable(reason: .tooManyProviderTokenUpdates)),
            (500, "InternalServerError", nil, .retryable(reason: .internalServerError)),
            (503, "ServiceUnavailable", nil, .retryable(reason: .serviceUnavailable)),
            (503, "Shutdown", nil, .retryable(reason: .shutdown)),
            (400, "IdleTimeout", nil, .retryable(reason: .idleTimeout)),
            (400, "BadTopic", nil, .failed(reason: .badTopic)),
            (400, "DeviceTokenNotForTopic", nil, .failed(reason: .deviceTokenNotForTopic)),
            (403, "InvalidProviderToken", nil, .failed(reason: .invalidProviderToken)),
            (413, "PayloadTooLarge", nil, .failed(reason: .payloadTooLarge)),
            (400, "SomethingNew", nil, .failed(reason: .unknown("SomethingNew"))),
            (0, nil, true, .retryable(reason: nil)),
            (0, nil, false, .failed(reason: nil))
        ] as [(Int, String?, Bool?, APNsDisposition)])
    func dispositionTable(status: Int, reason: String?, transportRetryable: Bool?, expected: APNsDisposition) {
        let timestamp: Date? = status == 410 ? Date(timeIntervalSince1970: 1_700_000_000.123) : nil
        let got = APNsDisposition.classify(
            status: status, reason: reason.map(APNsReason.init(rawValue:)), apnsId: "id-1",
            timestamp: timestamp, transportRetryable: transportRetryable)
        #expect(got == expected)
    }

    @Test func outcomeAppliesLimits() {
        let policy = RetryPolicy(maxAttempts: 3)
        #expect(
            APNsOutcome.classify(.retryable(reason: .serviceUnavailable), attempt: 1, policy: policy, unit: 1)
                == .retry(after: .milliseconds(500)))
        #expect(
            APNsOutcome.classify(.retryable(reason: .serviceUnavailable), attempt: 2, policy: policy, unit: 1)
                == .retry(after: .seconds(1)))
        #expect(
            APNsOutcome.classify(.retryable(reason: .serviceUnavailable), attempt: 3, policy: policy, unit: 1)
                == .failed(reason: .serviceUnavailable))
        #expect(APNsOutcome.classify(.renewToken, attempt: 1, policy: policy, unit: 0) == .renewTokenAndRetry)
        #expect(
            APNsOutcome.classify(.renewToken, attempt: 3, policy: policy, unit: 0)
                == .failed(reason: .expiredProviderToken))
        #expect(
            APNsOutcome.classify(.failed(reason: .badTopic), attempt: 1, policy: policy, unit: 0)
                == .failed(reason: .badTopic))
    }

    @Test func reasonsRoundTrip() {
        #expect(APNsReason.allKnown.count == 31)
        for reason in APNsReason.allKnown { #expect(APNsReason(rawValue: reason.rawValue) == reason) }
        #expect(APNsReason(rawValue: "Nope") == .unknown("Nope"))
        #expect(APNsReason.invalidProviderToken.isCredentialProblem)
        #expect(!APNsReason.unregistered.isCredentialProblem)
    }

    @Test func responseParsing() {
        let response = APNsClient.parse(
            status: 410, headers: ["apns-id": "A-1"],
            body: Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8), latency: .milliseconds(3))
        #expect(response.reason == .unregistered)
        #expect(response.apnsId == "A-1")
        #expect(response.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(response.latencyMilliseconds == 3)
        #expect(APNsClient.parse(status: 503, headers: [:], body: [], latency: .zero).reason == .serviceUnavailable)
    }
}

struct FixedGenerator: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}
