import Foundation

/// Installation token hash -> installation (see `HashedSecretCache`).
///
/// A cached installation can lag behind an identify done on another replica: callers that see an
/// identity mismatch re-read the row before refusing (`InstallationAuthenticator.refresh`), so the
/// cache can only make a request slower, never wrongly refused. Revoking a key evicts its
/// installations at once (`evict(apiKeyID:)`, also called by the revocation listener).
typealias InstallationCache = HashedSecretCache<InstallationRecord>

extension HashedSecretCache where Record == InstallationRecord {
    /// Updates the cached subscriber id of the installation with this token hash (identify on
    /// this replica).
    func setSubscriber(_ subscriberID: String, hash: [UInt8]) { update(hash) { $0.subscriberID = subscriberID } }

    /// Forgets every installation registered with this key (the key was revoked).
    func evict(apiKeyID: UUID) { evict { $0.apiKeyID == apiKeyID } }
}
