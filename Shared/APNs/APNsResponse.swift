import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitWire
import Foundation

/// What happened to one attempt: what APNs answered (or why nothing came back) and what was sent,
/// for the delivery ledger. Never contains the JWT.
public struct APNsResponse: Sendable {
    /// The HTTP status; 0 when no response arrived (see `transportError`).
    public var status: Int
    /// APNs's `reason` for an error status.
    public var reason: APNsReason?
    /// `apns-id` as APNs answered it.
    public var apnsId: String?
    /// `apns-unique-id` (sandbox only at Apple), when present.
    public var uniqueId: String?
    /// For 410: when APNs learned the token stopped being valid (milliseconds since 1970).
    public var timestamp: Date?
    /// When the attempt went out (wall clock, just before sending): the ledger's attempt time.
    public var sentAt: Date
    /// From just before sending to the answer.
    public var latency: Duration
    /// The request headers exactly as sent, `authorization` redacted (`bearer <redacted kid=K iat=S>`),
    /// ending with the two libcurl adds itself (`accept: */*`, `content-length`).
    public var requestHeaders: HTTPHeaders
    /// The request's payload bytes, exactly as sent.
    public var payload: [UInt8]
    /// Why no response arrived (timeout, broken connection, ...), when `status` is 0.
    public var transportError: HTTPClientError?
    /// The provider token's `iat` (to invalidate exactly that token on `ExpiredProviderToken`).
    public var tokenIssuedAt: Date?
    /// True when this attempt opened a new connection.
    public var openedConnection: Bool
    /// For a retryable answer: how long the server asked to wait (`retry-after`), when it said.
    public var retryAfter: Duration?

    public init(
        status: Int, reason: APNsReason? = nil, apnsId: String? = nil, uniqueId: String? = nil,
        timestamp: Date? = nil, sentAt: Date = Date(), latency: Duration = .zero, requestHeaders: HTTPHeaders = [:],
        payload: [UInt8] = [], transportError: HTTPClientError? = nil, tokenIssuedAt: Date? = nil,
        openedConnection: Bool = false, retryAfter: Duration? = nil
    ) {
        self.status = status
        self.reason = reason
        self.apnsId = apnsId
        self.uniqueId = uniqueId
        self.timestamp = timestamp
        self.sentAt = sentAt
        self.latency = latency
        self.requestHeaders = requestHeaders
        self.payload = payload
        self.transportError = transportError
        self.tokenIssuedAt = tokenIssuedAt
        self.openedConnection = openedConnection
        self.retryAfter = retryAfter
    }

    /// The headers as a JSON object (names as sent), for the ledger's `headers` column.
    public var requestHeadersJSON: JSONValue {
        var object: [String: JSONValue] = [:]
        for field in requestHeaders { object[field.name] = .string(field.value) }
        return .object(object)
    }

    /// Latency in whole milliseconds.
    public var latencyMilliseconds: Int {
        let (seconds, attoseconds) = latency.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// What a sender should do (see `APNsOutcome.classify`), ignoring retry limits.
    public var disposition: APNsDisposition { APNsDisposition(self) }
}
