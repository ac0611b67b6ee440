import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitHTTPClient
import BuzzKitLedger
import Foundation
import Testing

/// The one mapping from what APNs answered to a delivery's outcome (`DeliveryOutcome(device:
/// result:)`), which pushes and Live Activity sends share: status, error code, last status and
/// reason, and the token's invalidation.
@Suite("delivery outcome")
struct DeliveryOutcomeTests {
    static let device = ChunkDevice(messageId: UUID(), token: "aa01", subscriberId: "s", environment: "sandbox")

    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var last: APNsResponse
        var outcome: APNsOutcome
        var status: DeliveryStatus
        var code: DeliveryErrorCode?
        var reason: String?
    }

    static let cases: [Case] = [
        Case(
            description: "accepted", last: APNsResponse(status: 200, apnsId: "x"), outcome: .delivered(apnsId: "x"),
            status: .sent, code: nil, reason: nil),
        Case(
            description: "token gone", last: APNsResponse(status: 410, reason: .unregistered),
            outcome: .invalidToken(reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000)),
            status: .invalidToken, code: nil, reason: "Unregistered"),
        Case(
            description: "refused for good", last: APNsResponse(status: 413, reason: .payloadTooLarge),
            outcome: .failed(reason: .payloadTooLarge), status: .failed, code: .apnsRejected,
            reason: "PayloadTooLarge"),
        Case(
            description: "credentials refused", last: APNsResponse(status: 403, reason: .invalidProviderToken),
            outcome: .failed(reason: .invalidProviderToken), status: .failed, code: .apnsCredentialsInvalid,
            reason: "InvalidProviderToken"),
        Case(
            description: "credentials that cannot sign",
            last: APNsResponse(status: 0, transportError: HTTPClientError(code: .invalidRequest, message: "no key")),
            outcome: .failed(reason: nil), status: .failed, code: .apnsCredentialsInvalid, reason: "no key"),
        Case(
            description: "no answer after every retry",
            last: APNsResponse(status: 0, transportError: HTTPClientError(code: .timeout, message: "timed out")),
            outcome: .failed(reason: nil), status: .failed, code: .apnsUnreachable, reason: "timed out")
    ]

    @Test(arguments: cases)
    func theMapping(_ c: Case) {
        let outcome = DeliveryOutcome(
            device: Self.device, result: APNsDeliveryResult(attempts: [c.last], outcome: c.outcome))
        #expect(outcome.status == c.status)
        #expect(outcome.errorCode == c.code)
        #expect(outcome.lastStatus == c.last.status)
        #expect(outcome.lastReason.map { $0.contains(c.reason ?? "\u{0}") } ?? (c.reason == nil))
        #expect(outcome.attempts.count == 1)
        #expect((outcome.invalidation != nil) == (c.status == .invalidToken))
        if case .invalidToken(_, let timestamp?) = c.outcome { #expect(outcome.invalidation?.at == timestamp) }
    }
}
