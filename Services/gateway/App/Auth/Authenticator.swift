import BuzzKitCore
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
        cacheHits = metrics.counter("bk_gateway_auth_cache_total", help: "API key lookups by cache outcome.",
                                    labels: [("outcome", "hit")])
        cacheMisses = metrics.counter("bk_gateway_auth_cache_total", help: "API key lookups by cache outcome.",
                                      labels: [("outcome", "miss")])
    }

    func authenticate(authorization: String?) async throws -> APIKeyRecord {
        guard let authorization, let key = Self.bearerToken(authorization) else {
            throw APIError(.unauthorized, "an API key is required: Authorization: Bearer <key>")
        }
        guard APIKeyFormat.kind(of: key) != nil else { throw Self.unknownKey }
        let hash = APIKeyFormat.hash(key)
        let record: APIKeyRecord
        switch cache.lookup(hash) {
        case .hit(let cached):
            cacheHits.increment()
            record = cached
        case .knownUnknown:
            cacheHits.increment()
            throw Self.unknownKey
        case .miss:
            cacheMisses.increment()
            let found = try await store.lookup(hash: hash)
            cache.store(hash, record: found)
            guard let found else { throw Self.unknownKey }
            record = found
        }
        recorder.record(record.id)
        return record
    }

    static let unknownKey = APIError(.unauthorized, "the API key is unknown or revoked")

    /// `Bearer <token>` (scheme case-insensitive), nil for anything else.
    static func bearerToken(_ header: String) -> String? {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        let token = trimmed.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
