import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitWire
import Foundation
import Synchronization

/// A tenant's APNs settings as a sender (apns-sender, liveactivity) needs them: credentials that can sign, the bundle id
/// (`apns-topic`), or why the tenant cannot send.
public struct TenantAPNs: Sendable {
    public var credentials: APNsCredentials?
    public var bundleId: String?
    /// Set when the tenant cannot send: `apnsCredentialsMissing` or `apnsCredentialsInvalid`
    /// (each of its deliveries ends `failed` with that code; a fan-out's message too).
    public var problem: (code: DeliveryErrorCode, message: String)?
}

/// Loads tenants' APNs credentials and opens the sealed .p8 (AES-256-GCM, associated data the
/// tenant id, as the gateway sealed it), cached for `ttl` so a chunk costs no extra query.
/// A tenant without credentials, or whose key does not open, is cached as such too: its
/// deliveries fail at once with a clear code, with no retry storm.
public final class TenantCredentialStore: Sendable {
    private let postgres: PostgresClient
    private let sealer: AESGCM
    private let ttl: Duration
    private let cache = Mutex<[UUID: (TenantAPNs, ContinuousClock.Instant)]>([:])

    public init(postgres: PostgresClient, secretKey: [UInt8], ttl: Duration) throws {
        self.postgres = postgres
        self.sealer = try AESGCM(key: secretKey)
        self.ttl = ttl
    }

    public func get(_ tenant: UUID) async throws -> TenantAPNs {
        let now = ContinuousClock.now
        if let (value, expires) = cache.withLock({ $0[tenant] }), expires > now { return value }
        let rows = try await postgres.query(
            """
            SELECT apns_team_id, apns_key_id, apns_private_key, apns_bundle_id FROM tenants WHERE id = $1::uuid
            """, [tenant])
        let value: TenantAPNs
        if let row = rows.first {
            value = open(
                tenant: tenant, teamId: try row.decode(String?.self, at: 0), keyId: try row.decode(String?.self, at: 1),
                sealed: try row.decode(Data?.self, at: 2), bundleId: try row.decode(String?.self, at: 3))
        } else {
            value = TenantAPNs(problem: (.apnsCredentialsMissing, "the tenant does not exist"))
        }
        cache.withLock { $0[tenant] = (value, now + ttl) }
        return value
    }

    /// Forgets a tenant (APNs refused its token: the key may have been replaced since).
    public func invalidate(_ tenant: UUID) { _ = cache.withLock { $0.removeValue(forKey: tenant) } }

    private func open(tenant: UUID, teamId: String?, keyId: String?, sealed: Data?, bundleId: String?) -> TenantAPNs {
        guard let teamId, let keyId, let sealed, let bundleId else {
            return TenantAPNs(
                bundleId: bundleId,
                problem: (
                    .apnsCredentialsMissing,
                    "the tenant has no complete APNs credentials (teamId, keyId, privateKey, bundleId)"
                ))
        }
        do {
            let pem = try sealer.open(Array(sealed), associatedData: Array(tenant.lowercasedText.utf8))
            let credentials = try APNsCredentials(
                teamId: teamId, keyId: keyId, privateKeyPEM: String(decoding: pem, as: UTF8.self))
            return TenantAPNs(credentials: credentials, bundleId: bundleId)
        } catch {
            return TenantAPNs(
                bundleId: bundleId,
                problem: (
                    .apnsCredentialsInvalid,
                    "the tenant's APNs key cannot be opened or is not a P-256 key (was BUZZKIT_SECRET_KEY changed?)"
                ))
        }
    }
}
