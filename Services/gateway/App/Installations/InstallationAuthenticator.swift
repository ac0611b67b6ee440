import BuzzKitContracts
import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// Turns the `BuzzKit-Installation` header of a client-key request into its installation: a
/// shape check, a SHA-256, the in-memory cache, and on a miss one indexed query whose answer
/// (found or not) is cached.
///
/// - no header: `401 installation_required`;
/// - unknown, revoked (its key revoked) or of another tenant: `401 unauthorized`.
final class InstallationAuthenticator: Sendable {
    let cache: InstallationCache
    let store: InstallationStore

    init(cache: InstallationCache, store: InstallationStore) {
        self.cache = cache
        self.store = store
    }

    static let required = APIError(
        .installationRequired,
        "client keys must send the BuzzKit-Installation header; register with POST /v1/installations")
    static let unknown = APIError(.unauthorized, "the installation token is unknown or revoked")
    static let forbidden = APIError(
        .forbiddenInstallation, "a client key may only act for its own installation's identities")

    func authenticate(header: String?, tenantID: UUID) async throws -> InstallationRecord {
        guard let token = header.map(HTTPHeaders.trimmingWhitespace), !token.isEmpty else { throw Self.required }
        guard InstallationToken.isWellFormed(token) else { throw Self.unknown }
        let hash = InstallationToken.hash(token)
        let record: InstallationRecord
        switch cache.lookup(hash) {
        case .hit(let cached):
            record = cached
        case .knownUnknown:
            throw Self.unknown
        case .miss:
            let found = try await store.lookup(hash: hash)
            cache.store(hash, record: found)
            guard let found else { throw Self.unknown }
            record = found
        }
        guard record.tenantID == tenantID else { throw Self.unknown }
        return record
    }

    /// Whether `installation` may act for `identity`. A cached installation may lag behind an
    /// identify done on another replica, so a mismatch re-reads the row once before refusing.
    /// Returns the (possibly refreshed) installation, or throws `403 forbidden_installation`
    /// (`401 unauthorized` if it was revoked meanwhile).
    func authorize(_ installation: InstallationRecord, identity: String) async throws -> InstallationRecord {
        if installation.identities.contains(identity) { return installation }
        let fresh = try await refresh(installation)
        guard fresh.identities.contains(identity) else { throw Self.forbidden }
        return fresh
    }

    /// The installation as the database has it now (and the cache from now on).
    func refresh(_ installation: InstallationRecord) async throws -> InstallationRecord {
        let found = try await store.lookup(hash: installation.tokenHash)
        cache.store(installation.tokenHash, record: found)
        guard let found, found.tenantID == installation.tenantID else { throw Self.unknown }
        return found
    }
}
