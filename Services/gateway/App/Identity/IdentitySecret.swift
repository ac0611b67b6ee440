import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// A tenant's identity secret: `bk_is_` and 32 random bytes in base64url. Its backend signs
/// subscriber ids with it (`SubscriberSignature`). Stored sealed with `BUZZKIT_SECRET_KEY`
/// (associated data `identity:<tenant id>`, so a sealed secret cannot be moved to another tenant
/// or column), shown once when made. After a rotation the previous one still verifies for
/// `overlap`, so apps holding signatures made with it keep working until they identify again.
enum IdentitySecret {
    static let prefix = "bk_is_"
    static let overlap: TimeInterval = 24 * 3600

    static func generate() -> String { prefix + Base64URL.encode(SecureRandom.bytes(32)) }

    static func associatedData(_ tenant: UUID) -> [UInt8] { Array("identity:\(tenant.lowercasedText)".utf8) }
}

extension Gateway {
    /// The secrets that verify a signature now: the current one and, within its overlap, the
    /// previous one. Empty when the tenant has none.
    func identitySecrets(_ tenant: UUID) async throws -> [String] {
        guard
            let row = try await postgres.query(
                """
                SELECT identity_secret, CASE WHEN identity_secret_previous_until > now() THEN identity_secret_previous END
                FROM tenants WHERE id = $1::uuid
                """, [tenant]
            ).first
        else { return [] }
        var secrets: [String] = []
        for column in 0..<2 {
            guard let sealed = try row.decode(Data?.self, at: column) else { continue }
            let opened = try sealer.open([UInt8](sealed), associatedData: IdentitySecret.associatedData(tenant))
            if let text = String(validating: opened, as: UTF8.self) { secrets.append(text) }
        }
        return secrets
    }

    /// A client key acting for `subscriber` must do so for one of its installation's identities
    /// (403 `forbidden_installation`) and carry the subscriber's signature
    /// (`BuzzKit-Subscriber-Signature`, 403 `forbidden_subscriber`, also when the tenant has no
    /// identity secret): the installation binds the app, the signature proves the backend vouched
    /// for the id. Other keys act for any subscriber of their tenant.
    /// A header that is there must have a signature's shape, for every kind of key (as
    /// `BuzzKit-Installation`), so a malformed one is never silently ignored.
    func requireSubscriberSignature(_ context: RequestContext, subscriber: String) async throws {
        let signature = context.request.headers[SubscriberSignature.header].map(HTTPHeaders.trimmingWhitespace)
        if let signature, SubscriberSignature.rule.problem(with: signature) != nil {
            throw SubscriberSignature.forbidden
        }
        guard context.key?.kind == .client else { return }
        try await authorizeInstallation(context, subscriber: subscriber)
        guard let signature else { throw SubscriberSignature.forbidden }
        try await verifySignature(signature, subscriber: subscriber, tenant: try context.tenant)
    }

    /// 403 `forbidden_subscriber` unless `signature` is `subscriber`'s under the tenant's secret.
    func verifySignature(_ signature: String, subscriber: String, tenant: UUID) async throws {
        let secrets = try await identitySecrets(tenant)
        guard SubscriberSignature.isValid(signature, subscriber: subscriber, secrets: secrets) else {
            throw SubscriberSignature.forbidden
        }
    }

    /// `POST /v1/settings/identity-secret`: a new secret, answered once; the current one becomes
    /// the previous (verifying for `IdentitySecret.overlap` more).
    func rotateIdentitySecret(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let secret = IdentitySecret.generate()
        let sealed = Data(try sealer.seal(Array(secret.utf8), associatedData: IdentitySecret.associatedData(tenant)))
        let rows = try await postgres.query(
            """
            UPDATE tenants SET
                identity_secret_previous = identity_secret,
                identity_secret_previous_until = CASE WHEN identity_secret IS NULL THEN NULL
                                                      ELSE now() + make_interval(secs => $3) END,
                identity_secret = $2, identity_secret_created_at = now(), updated_at = now()
            WHERE id = $1::uuid
            RETURNING identity_secret_created_at, identity_secret_previous_until
            """, [tenant, sealed, IdentitySecret.overlap])
        guard let row = rows.first else { throw TenantResolver.notFound }
        return .json(
            [
                "secret": .string(secret),
                "createdAt": Self.timestamp(try row.decode(Date?.self, at: 0)),
                "previousValidUntil": Self.timestamp(try row.decode(Date?.self, at: 1))
            ], status: 201)
    }
}
