import Foundation
import Synchronization

/// Key hash -> key record, in memory, so an authenticated request costs a SHA-256 and a dictionary
/// lookup instead of a database round trip.
///
/// Entries live `ttl` (default 60 s); unknown keys are remembered for `negativeTTL` (default 5 s)
/// so a flood of bad keys does not reach Postgres. Revocation evicts at once (`evict(keyID:)`),
/// called by the revoking replica and by every replica's `RevocationListener`; the TTL bounds the
/// damage of a missed notification. At most `capacity` entries (default 100,000); when full,
/// expired entries are dropped, and if that is not enough, everything.
final class AuthCache: Sendable {
    struct Entry: Sendable {
        var record: APIKeyRecord?
        var expires: ContinuousClock.Instant
    }

    enum Lookup: Sendable {
        case hit(APIKeyRecord)
        case knownUnknown
        case miss
    }

    let ttl: Duration
    let negativeTTL: Duration
    let capacity: Int
    private let entries = Mutex<[[UInt8]: Entry]>([:])

    init(ttl: Duration = .seconds(60), negativeTTL: Duration = .seconds(5), capacity: Int = 100_000) {
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

    func store(_ hash: [UInt8], record: APIKeyRecord?) {
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

    /// Forgets the key with this id (revoked): its next request goes to the database.
    func evict(keyID: UUID) {
        entries.withLock { entries in
            entries = entries.filter { $0.value.record?.id != keyID }
        }
    }

    /// Forgets the "unknown key" answer for a hash (a key was just created with it).
    func forget(_ hash: [UInt8]) {
        _ = entries.withLock { $0.removeValue(forKey: hash) }
    }

    var count: Int { entries.withLock { $0.count } }
}
