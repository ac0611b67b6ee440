import Foundation

/// API key hash -> key record (see `HashedSecretCache`).
typealias AuthCache = HashedSecretCache<APIKeyRecord>

extension HashedSecretCache where Record == APIKeyRecord {
    /// Forgets the key with this id (revoked): its next request goes to the database.
    func evict(keyID: UUID) { evict { $0.id == keyID } }
}
