import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitWire
import Foundation

/// One push as APNs receives it: `POST /3/device/<token>` with the `apns-*` headers and the
/// payload bytes. Pure data: the JWT is added when it is sent (`APNsClient`).
public struct APNsRequest: Sendable, Hashable {
    /// The device token, hex as the device reported it.
    public var deviceToken: String
    /// `apns-topic`: the app's bundle id (plus a suffix for some push types).
    public var topic: String
    /// Default `.alert`.
    public var pushType: APNsPushType
    /// `apns-priority`: 10, 5 or 1; nil leaves it out (APNs then uses 10, background 5).
    public var priority: Int?
    /// `apns-expiration` in whole seconds since 1970; nil leaves it out (APNs stores and retries
    /// for a while). `Date(timeIntervalSince1970: 0)` means "now or never".
    public var expiration: Date?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseId: String?
    /// `apns-id`: a UUID naming this notification; APNs echoes it (or makes one up when nil).
    /// Keep it the same across retries of one delivery.
    public var apnsId: String?
    /// The JSON payload, sent exactly as is.
    public var payload: [UInt8]

    public init(
        deviceToken: String, topic: String, pushType: APNsPushType = .alert, priority: Int? = nil,
        expiration: Date? = nil, collapseId: String? = nil, apnsId: String? = nil, payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
        self.apnsId = apnsId
        self.payload = payload
    }

    /// The request for one message to one device: payload from `PushPayload(content:messageId:)`,
    /// push type `background` for a silent message (else `alert`), the message's priority,
    /// expiration and collapse id: its own `collapseId`, else the message id, so a push sent twice
    /// (a retry after a timeout, a re-send after a sender died) shows once on the device.
    public init(deviceToken: String, topic: String, content: MessageContent, messageId: String, apnsId: String? = nil) {
        let payload = PushPayload(content: content, messageId: messageId)
        self.init(
            deviceToken: deviceToken, topic: topic, pushType: content.isSilent ? .background : .alert,
            priority: content.effectivePriority.rawValue, expiration: content.expiresAt,
            collapseId: content.collapseId ?? messageId, apnsId: apnsId, payload: payload.encode())
    }

    /// A silent push carrying BuzzKit's own instructions (`bk.local`, `bk.cancel`): `payload` as
    /// given (its `aps` holds only `content-available`), push type `background`, priority 5 (APNs
    /// refuses 10 for background pushes), no expiration, collapse id the message id.
    public static func silent(deviceToken: String, topic: String, payload: PushPayload, messageId: String)
        -> APNsRequest
    {
        APNsRequest(
            deviceToken: deviceToken, topic: topic, pushType: .background, priority: PushPriority.normal.rawValue,
            collapseId: messageId, payload: payload.encode())
    }

    /// `/3/device/<token>`, written straight into its string (one per push).
    public var path: String {
        let prefix = Self.pathPrefix
        var token = deviceToken
        return token.withUTF8 { token in
            String(unsafeUninitializedCapacity: prefix.count + token.count) { out in
                let middle = out.initialize(fromContentsOf: prefix)
                return middle + UnsafeMutableBufferPointer(rebasing: out[middle...]).initialize(fromContentsOf: token)
            }
        }
    }

    private static let pathPrefix = Array("/3/device/".utf8)

    /// The headers in the order they are sent: `authorization` (when given), `apns-push-type`,
    /// `apns-topic`, then `apns-priority`, `apns-expiration`, `apns-collapse-id`, `apns-id` when set.
    public func headers(authorization: String?) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if let authorization { headers.add(name: "authorization", value: authorization) }
        headers.add(name: "apns-push-type", value: pushType.rawValue)
        headers.add(name: "apns-topic", value: topic)
        if let priority { headers.add(name: "apns-priority", value: String(priority)) }
        if let expiration {
            headers.add(
                name: "apns-expiration", value: String(Int64(max(0, expiration.timeIntervalSince1970.rounded(.down)))))
        }
        if let collapseId { headers.add(name: "apns-collapse-id", value: collapseId) }
        if let apnsId { headers.add(name: "apns-id", value: apnsId) }
        return headers
    }
}
