/// The `reason` APNs gives for a refused push (Apple's documented list), open for new ones.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden
    case invalidProviderToken, missingProviderToken, unrelatedKeyIdInToken
    case badPath, methodNotAllowed, expiredToken, unregistered, payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests, internalServerError, serviceUnavailable, shutdown
    /// A reason this module does not know (kept verbatim).
    case unknown(String)

    private static let table: [(APNsReason, String)] = [
        (.badCollapseId, "BadCollapseId"), (.badDeviceToken, "BadDeviceToken"),
        (.badExpirationDate, "BadExpirationDate"), (.badMessageId, "BadMessageId"), (.badPriority, "BadPriority"),
        (.badTopic, "BadTopic"), (.deviceTokenNotForTopic, "DeviceTokenNotForTopic"),
        (.duplicateHeaders, "DuplicateHeaders"), (.idleTimeout, "IdleTimeout"), (.invalidPushType, "InvalidPushType"),
        (.missingDeviceToken, "MissingDeviceToken"), (.missingTopic, "MissingTopic"), (.payloadEmpty, "PayloadEmpty"),
        (.topicDisallowed, "TopicDisallowed"), (.badCertificate, "BadCertificate"),
        (.badCertificateEnvironment, "BadCertificateEnvironment"), (.expiredProviderToken, "ExpiredProviderToken"),
        (.forbidden, "Forbidden"), (.invalidProviderToken, "InvalidProviderToken"),
        (.missingProviderToken, "MissingProviderToken"), (.unrelatedKeyIdInToken, "UnrelatedKeyIdInToken"),
        (.badPath, "BadPath"), (.methodNotAllowed, "MethodNotAllowed"), (.expiredToken, "ExpiredToken"),
        (.unregistered, "Unregistered"), (.payloadTooLarge, "PayloadTooLarge"),
        (.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates"), (.tooManyRequests, "TooManyRequests"),
        (.internalServerError, "InternalServerError"), (.serviceUnavailable, "ServiceUnavailable"),
        (.shutdown, "Shutdown")
    ]
    private static let byName: [String: APNsReason] = Dictionary(uniqueKeysWithValues: table.map { ($0.1, $0.0) })

    /// Every documented reason.
    public static let allKnown: [APNsReason] = table.map(\.0)

    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? .unknown(rawValue)
    }

    /// The reason as APNs spells it.
    public var rawValue: String {
        if case .unknown(let text) = self { return text }
        return Self.table.first { $0.0 == self }?.1 ?? ""
    }

    public var description: String { rawValue }

    /// The tenant's key, team or topic is wrong: every push with these credentials will fail the
    /// same way, so a sender fails the message with a clear code instead of retrying.
    public var isCredentialProblem: Bool {
        switch self {
        case .badCertificate, .badCertificateEnvironment, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .topicDisallowed, .badTopic:
            true
        default:
            false
        }
    }
}
