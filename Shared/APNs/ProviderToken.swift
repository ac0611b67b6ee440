import BuzzKitCrypto
import BuzzKitWire
import Foundation

/// An APNs provider authentication token: an ES256 JWT `{"alg":"ES256","kid":K}.{"iss":T,"iat":S}`.
///
/// APNs accepts a token for one hour after `iat` and refuses new tokens more often than every
/// 20 minutes per connection, so tokens are made by `APNsTokenCache`, not per request.
public struct ProviderToken: Sendable, Hashable {
    /// The compact JWT (what follows `bearer ` in `authorization`). A secret: never log it.
    public let value: String
    /// `iat`, whole seconds.
    public let issuedAt: Date
    public let keyId: String
    /// The team the token speaks for (`iss`): the transport keeps each team on its own connections.
    public let teamId: String

    /// Signs a token for `credentials` issued at `issuedAt` (truncated to whole seconds).
    public init(credentials: APNsCredentials, issuedAt: Date) throws(APNsCredentialsError) {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        var header = JSONWriter(capacity: 64)
        header.object(["alg": "ES256", "kid": .string(credentials.keyId)])
        var claims = JSONWriter(capacity: 64)
        claims.object(["iss": .string(credentials.teamId), "iat": .int(iat)])
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        let signature: [UInt8]
        do {
            signature = try credentials.privateKey.sign(Array(signingInput.utf8))
        } catch {
            throw APNsCredentialsError(.signingFailed, "signing the provider token failed")
        }
        value = signingInput + "." + Base64URL.encode(signature)
        self.issuedAt = Date(timeIntervalSince1970: Double(iat))
        keyId = credentials.keyId
        teamId = credentials.teamId
    }

    /// The `authorization` header value.
    public var authorization: String { "bearer \(value)" }

    /// What the ledger shows instead of the token: the key id and issue time, not the signature.
    public var redactedAuthorization: String {
        "bearer <redacted kid=\(keyId) iat=\(Int64(issuedAt.timeIntervalSince1970))>"
    }
}
