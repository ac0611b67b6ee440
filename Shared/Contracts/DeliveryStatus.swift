/// Where one delivery (one message to one device) is, as the ledger routes answer it.
///
/// `queued` (a device of a chunk no replica holds yet) → `sending` (a device of a chunk a replica
/// holds) → `sent` (APNs accepted it) | `failed` (`error_code` says why, `DeliveryErrorCode`)
/// | `expired` (its message's `expiresAt` passed first) | `invalidToken` (APNs said the token is
/// gone; the device or Live Activity token is deactivated) | `suppressed` (the send policy held it
/// back, `deliveries.suppressed_reason` says why, and no APNs request went out; migration 0021). `queued` and `sending` are never
/// stored in a `deliveries` row any more: a delivery row is written once, with its outcome, and
/// a pending device is read from `delivery_chunks` (migrations 0016 and 0018); older rows may
/// still hold them. The raw values are the SQL `CHECK` list of `deliveries.status` (migration
/// 0004); `StatusCheckTests` holds the two equal.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable {
    case queued
    case sending
    case sent
    case failed
    case expired
    case invalidToken = "invalid_token"
    case suppressed

    /// The delivery's outcome is known (it is no longer pending).
    public var isDecided: Bool { self != .queued && self != .sending }
}

/// Why a delivery ended `failed` or `expired`, as `deliveries.error_code` stores it.
///
/// - `apnsCredentialsMissing` / `apnsCredentialsInvalid`: the tenant cannot send (no complete
///   credentials, a key that does not open or that APNs refused).
/// - `apnsRejected`: APNs refused the push for good (its reason in `last_reason`).
/// - `apnsUnreachable`: no answer came after every retry (timeouts, broken connections).
/// - `apnsClientUnavailable`: no HTTP/2 client could be made for the team and environment.
/// - `messageInvalid`: the stored content no longer builds a request.
/// - `messageExpired`: the message's `expiresAt` passed before the push went out.
/// - `senderLost`: the replica sending it stopped after deciding it and before recording it, and
///   the push is not sent again (a Live Activity update): whether APNs had it is unknown.
public enum DeliveryErrorCode: String, Sendable, Hashable, CaseIterable {
    case apnsCredentialsMissing = "apns_credentials_missing"
    case apnsCredentialsInvalid = "apns_credentials_invalid"
    case apnsRejected = "apns_rejected"
    case apnsUnreachable = "apns_unreachable"
    case apnsClientUnavailable = "apns_client_unavailable"
    case messageInvalid = "message_invalid"
    case messageExpired = "message_expired"
    case senderLost = "sender_lost"
}
