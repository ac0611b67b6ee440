import BuzzKitCrypto
import BuzzKitWire

/// The text form of installation tokens: `bk_inst_` followed by 32 random bytes in base64url (43
/// characters). Only the SHA-256 of the whole string is stored; the token is shown once, in the
/// answer to `POST /v1/installations`.
public enum InstallationToken {
    public static let prefix = "bk_inst_"
    /// The header every client-key request (but the registration itself) carries.
    public static let header = "BuzzKit-Installation"

    /// The header's rule, as the OpenAPI document states it: the prefix and 43 base64url characters.
    public static let rule = TextRule(
        minLength: 51, maxLength: 51, pattern: "^bk_inst_[A-Za-z0-9_-]{43}$",
        problem: "must be an installation token (bk_inst_...)", accepts: isWellFormed)

    /// A fresh token; returned to the caller once and never stored.
    static func generate() -> String {
        prefix + Base64URL.encode(SecureRandom.bytes(32))
    }

    /// The stored lookup hash of a presented token.
    static func hash(_ token: String) -> [UInt8] {
        Digest.sha256(Array(token.utf8))
    }

    /// Whether `token` has the shape of an installation token (a cheap check that spares the
    /// cache and the database from garbage).
    static func isWellFormed(_ token: String) -> Bool {
        guard token.utf8.count == prefix.utf8.count + 43, token.hasPrefix(prefix) else { return false }
        return token.utf8.dropFirst(prefix.utf8.count).allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }
}
