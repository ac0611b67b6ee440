import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitPush
import BuzzKitWire
import Foundation

/// A token a Live Activity send goes to: its delivery (written `sending` when the send was
/// decided) and the `apns-id` every attempt carries.
struct LiveActivityTarget: Sendable {
    var deliveryId: UUID
    var apnsId: UUID
    var token: String
    var environment: APNsEnvironment
    var bundleId: String?
}

/// What deciding found for one request (`LiveActivityLedger.decide`).
enum LiveActivityPlan: Sendable {
    /// Decided before (its message exists): answered from the ledger, never sent again.
    case replay
    /// The request ends in this error (`live_activity_not_found`, `no_push_to_start_token`).
    case error(code: ErrorCode, message: String)
    /// The tokens it goes to, and those it skips (with why: `activity_ended`, ...).
    case send(targets: [LiveActivityTarget], skipped: [LiveActivityResult])
}

/// One target's outcome: the ledger row's final state and its attempts.
struct LiveActivityOutcome: Sendable {
    var tenantId: UUID
    var target: LiveActivityTarget
    /// `sent`, `failed` or `invalid_token` (the delivery's status too).
    var status: String
    var reason: String?
    var errorCode: String?
    var attempts: [APNsResponse] = []
    /// APNs said the token is dead, as of this time.
    var invalidAt: Date?

    init(tenantId: UUID, target: LiveActivityTarget, status: String, reason: String?, errorCode: String?) {
        self.tenantId = tenantId
        self.target = target
        self.status = status
        self.reason = reason
        self.errorCode = errorCode
    }

    init(tenantId: UUID, _ target: LiveActivityTarget, _ result: APNsDeliveryResult) {
        self.tenantId = tenantId
        self.target = target
        attempts = result.attempts
        let last = result.attempts.last
        reason = last?.reason?.rawValue
        switch result.outcome {
        case .delivered:
            status = "sent"
        case .invalidToken(let reason, let timestamp):
            status = "invalid_token"
            self.reason = reason.rawValue
            invalidAt = timestamp ?? Date()
        case .failed(let reason):
            status = "failed"
            if let reason {
                errorCode = reason.isCredentialProblem ? "apns_credentials_invalid" : "apns_rejected"
            } else if let error = last?.transportError {
                errorCode = error.code == .invalidRequest ? "apns_credentials_invalid" : "apns_unreachable"
                self.reason = error.description
            } else {
                errorCode = "apns_unreachable"
            }
        case .retry, .renewTokenAndRetry:
            status = "failed"
            errorCode = "apns_unreachable"
        }
    }

    /// The answer's result for this token.
    func result(for request: LiveActivitySendRequest) -> LiveActivityResult {
        LiveActivityResult(
            activityId: request.event == .start ? nil : request.activityId,
            attributesType: request.event == .start ? request.attributesType : nil,
            token: target.token, deliveryId: target.deliveryId, status: status,
            apnsStatus: attempts.last?.status, reason: reason,
            apnsId: attempts.last?.apnsId ?? target.apnsId.uuidString.lowercased())
    }
}
