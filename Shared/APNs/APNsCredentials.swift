import BuzzKitCrypto

/// A tenant's APNs token-based authentication key: the team id, the key id and the .p8 key.
///
/// Tokens are cached per (team id, key id, public key), so several `APNsCredentials` values for
/// the same key share one JWT. The private key never appears in a description.
public struct APNsCredentials: Sendable, CustomStringConvertible {
    public let teamId: String
    public let keyId: String
    public let privateKey: ES256PrivateKey
    /// Tells keys with the same id apart (a rotated .p8): the public half's PEM.
    let fingerprint: String

    public init(teamId: String, keyId: String, privateKey: ES256PrivateKey) throws(APNsCredentialsError) {
        guard !teamId.isEmpty, teamId.utf8.count <= 64 else {
            throw APNsCredentialsError(.invalidTeamId, "the team id must be 1 to 64 characters")
        }
        guard !keyId.isEmpty, keyId.utf8.count <= 64 else {
            throw APNsCredentialsError(.invalidKeyId, "the key id must be 1 to 64 characters")
        }
        self.teamId = teamId
        self.keyId = keyId
        self.privateKey = privateKey
        fingerprint = privateKey.publicKeyPEM
    }

    /// Reads the key from Apple's .p8 file contents (PKCS#8 PEM, P-256).
    public init(teamId: String, keyId: String, privateKeyPEM: String) throws(APNsCredentialsError) {
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: privateKeyPEM)
        } catch {
            throw APNsCredentialsError(.invalidKey, "the APNs key is not a PEM-encoded P-256 private key")
        }
        try self.init(teamId: teamId, keyId: keyId, privateKey: key)
    }

    public var description: String { "APNsCredentials(team: \(teamId), key: \(keyId))" }
}

/// Why credentials could not be used. Messages never contain key material.
public struct APNsCredentialsError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidTeamId = Code("apns_invalid_team_id")
        public static let invalidKeyId = Code("apns_invalid_key_id")
        public static let invalidKey = Code("apns_invalid_key")
        public static let signingFailed = Code("apns_signing_failed")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
