import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitWire
import Foundation

/// How one device's delivery ended: its status, its error code, the last answer and the attempts
/// that led there. Pushes and Live Activity sends both end in one of these, and `Ledger.record`
/// writes it as the delivery's row, once.
public struct DeliveryOutcome: Sendable {
    public var device: ChunkDevice
    public var status: DeliveryStatus
    public var lastStatus: Int?
    public var lastReason: String?
    public var errorCode: DeliveryErrorCode?
    public var attempts: [APNsResponse]
    /// APNs called the token invalid (410, BadDeviceToken): since when, and why. The token is
    /// deactivated in the transaction that records the delivery.
    public var invalidation: (at: Date, reason: String)?
    /// Why the send policy held it back (status `suppressed`, no attempt); nil otherwise.
    public var suppressedReason: SuppressionReason?

    /// An outcome reached without APNs's answer (the tenant cannot send, the message expired or
    /// cannot be built, no client): no attempt.
    public init(
        device: ChunkDevice, status: DeliveryStatus, lastReason: String? = nil, errorCode: DeliveryErrorCode?
    ) {
        self.device = device
        self.status = status
        self.lastReason = lastReason
        self.errorCode = errorCode
        attempts = []
    }

    /// The send policy held the push back (`Policy.decide`): `suppressed` with its reason, no
    /// attempt, no APNs request.
    public init(device: ChunkDevice, suppressed reason: SuppressionReason) {
        self.init(device: device, status: .suppressed, errorCode: nil)
        suppressedReason = reason
    }

    /// THE mapping from what APNs answered to the ledger's outcome, for every sender:
    ///
    /// | `result.outcome` | status | error code | last reason |
    /// |---|---|---|---|
    /// | delivered | `sent` | | |
    /// | invalidToken(reason, timestamp) | `invalidToken` | | APNs's reason (and the token is deactivated as of `timestamp`, or now) |
    /// | failed(reason) with a reason | `failed` | `apnsCredentialsInvalid` for a credential problem, else `apnsRejected` | APNs's reason |
    /// | failed(nil) after a transport error | `failed` | `apnsCredentialsInvalid` for an invalid request (credentials that cannot sign), else `apnsUnreachable` | the error |
    /// | anything else | `failed` | `apnsUnreachable` | |
    ///
    /// `lastStatus` is the last attempt's HTTP status (0: no answer).
    public init(device: ChunkDevice, result: APNsDeliveryResult) {
        self.device = device
        attempts = result.attempts
        let last = result.attempts.last
        lastStatus = last.map(\.status)
        lastReason = last?.reason?.rawValue
        status = .failed
        switch result.outcome {
        case .delivered:
            status = .sent
        case .invalidToken(let reason, let timestamp):
            status = .invalidToken
            lastReason = reason.rawValue
            invalidation = (timestamp ?? Date(), reason.rawValue)
        case .failed(let reason):
            if let reason {
                errorCode = reason.isCredentialProblem ? .apnsCredentialsInvalid : .apnsRejected
            } else if let error = last?.transportError {
                errorCode = error.code == .invalidRequest ? .apnsCredentialsInvalid : .apnsUnreachable
                lastReason = error.description
            } else {
                errorCode = .apnsUnreachable
            }
        case .retry, .renewTokenAndRetry:
            errorCode = .apnsUnreachable  // not returned by sendWithRetries; kept total
        }
    }
}
