import Foundation
import Synchronization

/// Secret hash -> record, in memory, so an authenticated request costs a SHA-256 and a dictionary
/// lookup instead of a database round trip. Serves API keys (`AuthCache`) and installation tokens
/// (`InstallationCache`).
///
/// Entries live `ttl` (default 60 s); unknown secrets are remembered for `negativeTTL` (default
/// 5 s) so a flood of bad secrets does not reach Postgres. Revocation evicts at once
/// (`evict(where:)`, called by the revoking replica and by every replica's `RevocationListener`);
/// the TTL bounds the damage of a missed notification. At most `capacity` entries (default
/// 200,000); when full, expired entries are dropped, and if that is not enough, everything.
final class HashedSecretCache<Record: Sendable>: Sendable {
    enum Lookup: Sendable {
        case hit(Record)
        case knownUnknown
        case miss
    }

    private struct Entry: Sendable {
        var record: Record?
        var expires: ContinuousClock.Instant
    }

    let ttl: Duration
    let negativeTTL: Duration
    let capacity: Int
    private let entries = Mutex<[DigestKey: Entry]>([:])

    init(ttl: Duration = .seconds(60), negativeTTL: Duration = .seconds(5), capacity: Int = 200_000) {
        self.ttl = ttl
        self.negativeTTL = negativeTTL
        self.capacity = capacity
    }

    func lookup(_ hash: [UInt8]) -> Lookup {
        let hash = DigestKey(hash)
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

    /// Remembers `record` for `ttl`, or "unknown" (nil) for `negativeTTL`.
    func store(_ hash: [UInt8], record: Record?) {
        let hash = DigestKey(hash)
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

    /// Changes the cached record of this hash, if one is cached.
    func update(_ hash: [UInt8], _ change: (inout Record) -> Void) {
        let hash = DigestKey(hash)
        entries.withLock { entries in
            guard var record = entries[hash]?.record else { return }
            change(&record)
            entries[hash]?.record = record
        }
    }

    /// Forgets every cached record that matches (revoked).
    func evict(where matches: (Record) -> Bool) {
        entries.withLock { entries in
            entries = entries.filter { entry in entry.value.record.map { !matches($0) } ?? true }
        }
    }

    /// Forgets the "unknown" answer for a hash (a secret was just created with it).
    func forget(_ hash: [UInt8]) {
        let hash = DigestKey(hash)
        _ = entries.withLock { $0.removeValue(forKey: hash) }
    }

    var count: Int { entries.withLock { $0.count } }
}

/// A secret's SHA-256 as a dictionary key: four words, hashed in one `Hasher` call each (an
/// `[UInt8]` key hashes byte by byte and costs an array per lookup). Hashes of another length
/// (never produced here) fold their bytes in.
struct DigestKey: Hashable, Sendable {
    var a: UInt64 = 0, b: UInt64 = 0, c: UInt64 = 0, d: UInt64 = 0
    var extra: [UInt8] = []

    init(_ bytes: [UInt8]) {
        guard bytes.count == 32 else {
            extra = bytes
            return
        }
        bytes.withUnsafeBytes { raw in
            a = raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            b = raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            c = raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            d = raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
        }
    }
}
