import Foundation
import Synchronization

/// Token hash -> installation, in memory, so a client-key request costs a SHA-256 and a
/// dictionary lookup instead of a database round trip (like `AuthCache` for keys).
///
/// Entries live `ttl` (default 60 s); unknown tokens are remembered for `negativeTTL` (default
/// 5 s). A cached installation can lag behind an identify done on another replica: callers that
/// see an identity mismatch re-read the row before refusing (`InstallationAuthenticator.refresh`),
/// so the cache can only make a request slower, never wrongly refused. Revoking a key evicts its
/// installations at once (`evict(apiKeyID:)`, also called by the revocation listener). At most
/// `capacity` entries (default 200,000); when full, expired entries go, and if that is not
/// enough, everything.
final class InstallationCache: Sendable {
    enum Lookup: Sendable {
        case hit(InstallationRecord)
        case knownUnknown
        case miss
    }

    private struct Entry: Sendable {
        var record: InstallationRecord?
        var expires: ContinuousClock.Instant
    }

    let ttl: Duration
    let negativeTTL: Duration
    let capacity: Int
    private let entries = Mutex<[[UInt8]: Entry]>([:])

    init(ttl: Duration = .seconds(60), negativeTTL: Duration = .seconds(5), capacity: Int = 200_000) {
        self.ttl = ttl
        self.negativeTTL = negativeTTL
        self.capacity = capacity
    }

    func lookup(_ hash: [UInt8]) -> Lookup {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[hash] else { return .miss }
            guard entry.expires > now else {
                entries[hash] = nil
                return .miss
            }
            if let record = entry.record { return .hit(record) }
            return .knownUnknown
        }
    }

    func store(_ hash: [UInt8], record: InstallationRecord?) {
        let now = ContinuousClock.now
        let entry = Entry(record: record, expires: now + (record == nil ? negativeTTL : ttl))
        entries.withLock { entries in
            if entries.count >= capacity {
                entries = entries.filter { $0.value.expires > now }
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[hash] = entry
        }
    }

    /// Updates the cached subscriber id of the installation with this token hash (identify on
    /// this replica).
    func setSubscriber(_ subscriberID: String, hash: [UInt8]) {
        entries.withLock { entries in
            entries[hash]?.record?.subscriberID = subscriberID
        }
    }

    /// Forgets every installation registered with this key (the key was revoked).
    func evict(apiKeyID: UUID) {
        entries.withLock { entries in
            entries = entries.filter { $0.value.record?.apiKeyID != apiKeyID }
        }
    }

    /// Forgets the "unknown token" answer for a hash (an installation was just created with it).
    func forget(_ hash: [UInt8]) {
        _ = entries.withLock { $0.removeValue(forKey: hash) }
    }

    var count: Int { entries.withLock { $0.count } }
}
