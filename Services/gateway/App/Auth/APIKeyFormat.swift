import BuzzKitCrypto

/// The text form of API keys: `bk_<kind>_` followed by 32 random bytes in base64url (43
/// characters). Only the SHA-256 of the whole string is stored; `visiblePrefix` (kind prefix plus 8
/// characters of the secret) is stored in clear so people can tell their keys apart.
public enum APIKeyFormat {
    public static let secretByteCount = 32
    /// Characters of the secret kept in the visible prefix.
    static let visibleSecretCharacters = 8

    /// A fresh key of `kind`. The returned string is shown to the caller once and never stored.
    public static func generate(kind: APIKeyKind) -> String {
        kind.keyPrefix + Base64URL.encode(SecureRandom.bytes(secretByteCount))
    }

    /// The stored lookup hash of a presented key string.
    public static func hash(_ key: String) -> [UInt8] {
        Digest.sha256(Array(key.utf8))
    }

    public static func visiblePrefix(of key: String) -> String {
        String(key.prefix(6 + visibleSecretCharacters))
    }

    /// Whether `key` has the shape of a BuzzKit key (kind prefix, 43 base64url characters); a
    /// cheap check that spares the cache and the database from garbage.
    public static func kind(of key: String) -> APIKeyKind? {
        guard key.utf8.count == 6 + 43 else { return nil }
        guard let kind = APIKeyKind.allCases.first(where: { key.hasPrefix($0.keyPrefix) }) else { return nil }
        for byte in key.utf8.dropFirst(6) {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                continue
            default:
                return nil
            }
        }
        return kind
    }
}
