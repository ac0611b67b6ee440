import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// Turns an `Authorization: Bearer <key>` header into the key's record: a format check, a SHA-256,
/// the in-memory cache, and on a miss one indexed query whose answer (found or not) is cached.
final class Authenticator: Sendable {
    let cache: AuthCache
    let store: KeyStore
    let recorder: LastUsedRecorder
    let cacheHits: Counter
    let cacheMisses: Counter

    init(cache: AuthCache, store: KeyStore, recorder: LastUsedRecorder, metrics: MetricsRegistry) {
        self.cache = cache
        self.store = store
        self.recorder = recorder
        cacheHits = metrics.counter(
            "bk_gateway_auth_cache_total", help: "API key lookups by cache outcome.",
            labels: [("outcome", "hit")])
        cacheMisses = metrics.counter(
            "bk_gateway_auth_cache_total", help: "API key lookups by cache outcome.",
            labels: [("outcome", "miss")])
    }

    /// What the cache alone can tell (no I/O: runs on the network thread).
    enum Cached: Sendable {
        case key(APIKeyRecord)
        case refused(APIError)
        /// Not cached: `authenticate` must ask the database for the key with this hash.
        case miss(hash: [UInt8])
    }

    /// The key from the header and the cache alone; a hit is recorded for `lastUsedAt`.
    func cached(authorization: String?) -> Cached {
        switch check(authorization) {
        case .failure(let error): return .refused(error)
        case .success(let hash):
            switch cache.lookup(hash) {
            case .hit(let record):
                cacheHits.increment()
                recorder.record(record.id)
                return .key(record)
            case .knownUnknown:
                cacheHits.increment()
                return .refused(Self.unknownKey)
            case .miss:
                return .miss(hash: hash)
            }
        }
    }

    /// The key from the header: the cache, and on a miss the database (its answer cached).
    func authenticate(authorization: String?) async throws -> APIKeyRecord {
        switch cached(authorization: authorization) {
        case .key(let record):
            return record
        case .refused(let error):
            throw error
        case .miss(let hash):
            cacheMisses.increment()
            let found = try await store.lookup(hash: hash)
            cache.store(hash, record: found)
            guard let found else { throw Self.unknownKey }
            recorder.record(found.id)
            return found
        }
    }

    /// The presented key's lookup hash, or why the header is refused before any lookup.
    private func check(_ authorization: String?) -> Result<[UInt8], APIError> {
        guard let authorization, let key = Self.bearerToken(authorization) else { return .failure(Self.missingKey) }
        guard APIKeyFormat.kind(of: key) != nil else { return .failure(Self.unknownKey) }
        return .success(APIKeyFormat.hash(key))
    }

    static let missingKey = APIError(.unauthorized, "an API key is required: Authorization: Bearer <key>")

    static let unknownKey = APIError(.unauthorized, "the API key is unknown or revoked")

    /// `Bearer <token>` (scheme case-insensitive, spaces and tabs around the parts ignored), nil for
    /// anything else. Byte-level: it runs on every request (Foundation's trimming cost 4% of a GET).
    static func bearerToken(_ header: String) -> String? {
        let utf8 = HTTPHeaders.trimmingWhitespace(header).utf8
        let scheme: StaticString = "bearer "
        guard utf8.count > 7 else { return nil }
        for (offset, byte) in utf8.prefix(7).enumerated()
        where byte | (offset < 6 ? 0x20 : 0) != scheme.utf8Start[offset] {
            return nil
        }
        let token = HTTPHeaders.trimmingWhitespace(String(Substring(utf8.dropFirst(7))))
        return token.isEmpty ? nil : token
    }
}
