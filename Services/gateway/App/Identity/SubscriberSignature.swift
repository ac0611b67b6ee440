import BuzzKitCrypto
import BuzzKitWire

/// How an app proves which subscriber it is: the tenant's backend signs the subscriber id with
/// the tenant's identity secret (`bk_is_...`, `POST /v1/settings/identity-secret`) and the app
/// passes the signature (the SDK's `identify(_:signature:)`); the gateway recomputes it.
///
/// The signature is the lowercase hex of HMAC-SHA256, keyed with the secret's text (UTF-8), over
/// the subscriber id's UTF-8 bytes: `printf %s "$ID" | openssl dgst -sha256 -hmac "$SECRET"`.
public enum SubscriberSignature {
    /// The header a client-key request for a subscriber's preferences carries.
    public static let header = "BuzzKit-Subscriber-Signature"

    /// 64 hexadecimal characters (either case).
    public static let rule = TextRule(
        minLength: 64, maxLength: 64, pattern: "^[0-9A-Fa-f]{64}$",
        problem: "must be 64 hexadecimal characters (an HMAC-SHA256)"
    ) { text in
        text.utf8.count == 64 && text.utf8.allSatisfy(FieldRules.isHex)
    }

    /// The signature of `subscriber` under `secret`.
    public static func sign(_ subscriber: String, secret: String) -> String {
        Hex.string(Digest.hmacSHA256(key: Array(secret.utf8), message: Array(subscriber.utf8)))
    }

    /// Whether `signature` is `subscriber`'s under one of `secrets` (compared in constant time).
    static func isValid(_ signature: String, subscriber: String, secrets: [String]) -> Bool {
        guard rule.problem(with: signature) == nil else { return false }
        let presented = Array(signature.lowercased().utf8)
        var valid = false
        for secret in secrets {
            valid = Digest.constantTimeEquals(presented, Array(sign(subscriber, secret: secret).utf8)) || valid
        }
        return valid
    }

    static let forbidden = APIError(
        .forbiddenSubscriber,
        "a client key may act for a subscriber only with its BuzzKit-Subscriber-Signature: the HMAC-SHA256 of the subscriber id with the tenant's identity secret"
    )
}
