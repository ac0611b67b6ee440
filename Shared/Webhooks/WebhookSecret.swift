import BuzzKitCrypto
import Foundation

/// An endpoint's signing secret: `whsec_` + base64 of `byteCount` random bytes, as Standard
/// Webhooks writes them. The HMAC key is the decoded bytes. Shown once (create, rotate); at rest
/// it is sealed with AES-256-GCM (`BUZZKIT_SECRET_KEY`), its associated data the endpoint id, so a
/// sealed secret cannot be moved to another endpoint's row. Never logged.
public struct WebhookSecret: Sendable, Hashable {
    public static let prefix = "whsec_"
    /// 32 random bytes (the specification asks for 24 to 64).
    public static let byteCount = 32

    /// The HMAC-SHA256 key.
    public let key: [UInt8]

    public init(key: [UInt8]) { self.key = key }

    /// A fresh random secret.
    public static func generate() -> WebhookSecret { WebhookSecret(key: SecureRandom.bytes(byteCount)) }

    /// `whsec_<base64>`: what the tenant's verifier is configured with.
    public var text: String { Self.prefix + Data(key).base64EncodedString() }

    /// Reads `whsec_<base64>` (nil for anything else).
    public init?(text: String) {
        guard text.hasPrefix(Self.prefix), let data = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
            (24...64).contains(data.count)
        else { return nil }
        key = Array(data)
    }

    public func sealed(by sealer: AESGCM, endpointId: UUID) throws -> [UInt8] {
        try sealer.seal(key, associatedData: Self.associatedData(endpointId))
    }

    public static func open(_ box: [UInt8], by sealer: AESGCM, endpointId: UUID) throws -> WebhookSecret {
        WebhookSecret(key: try sealer.open(box, associatedData: associatedData(endpointId)))
    }

    static func associatedData(_ endpointId: UUID) -> [UInt8] {
        Array(("webhook:" + endpointId.uuidString.lowercased()).utf8)
    }
}

/// The `webhook-signature` header of Standard Webhooks: `v1,<base64 of HMAC-SHA256(key,
/// "<webhook-id>.<webhook-timestamp>.<body>")>`, one such value per secret, separated by spaces
/// (during a rotation's overlap both the new and the previous secret sign).
public enum WebhookSignature {
    public static func header(id: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) -> String {
        var signed: [UInt8] = []
        signed.reserveCapacity(id.utf8.count + 24 + body.count)
        signed.append(contentsOf: id.utf8)
        signed.append(UInt8(ascii: "."))
        signed.append(contentsOf: String(timestamp).utf8)
        signed.append(UInt8(ascii: "."))
        signed.append(contentsOf: body)
        return secrets.map { "v1," + Data(Digest.hmacSHA256(key: $0.key, message: signed)).base64EncodedString() }
            .joined(separator: " ")
    }
}
