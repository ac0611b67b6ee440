import Foundation
import Synchronization

/// One provider token per key, refreshed well inside its hour and never too often.
///
/// `token(for:)` returns the cached JWT while it is younger than `refreshAfter` (default 50 min)
/// and signs a new one after that. APNs answers `TooManyProviderTokenUpdates` when a connection
/// sees a new token less than 20 minutes after the previous one, so a token is never replaced
/// before `minimumRenewalInterval` (default 20 min), not even by `invalidate`. Time comes from
/// `now`, injectable for tests. Thread-safe; signing happens under the lock, once per refresh.
public final class APNsTokenCache: Sendable {
    public let refreshAfter: TimeInterval
    public let minimumRenewalInterval: TimeInterval
    private let now: @Sendable () -> Date
    private let state = Mutex<[Key: ProviderToken]>([:])

    private struct Key: Hashable {
        var teamId: String
        var keyId: String
        var fingerprint: String
    }

    public init(
        refreshAfter: TimeInterval = 50 * 60, minimumRenewalInterval: TimeInterval = 20 * 60,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.refreshAfter = refreshAfter
        self.minimumRenewalInterval = minimumRenewalInterval
        self.now = now
    }

    /// The current token for `credentials`, signing one when there is none or it is due.
    public func token(for credentials: APNsCredentials) throws(APNsCredentialsError) -> ProviderToken {
        let key = Key(teamId: credentials.teamId, keyId: credentials.keyId, fingerprint: credentials.fingerprint)
        let now = self.now()
        let refreshAfter = self.refreshAfter
        return try state.withLock {
            (tokens: inout [Key: ProviderToken]) throws(APNsCredentialsError) -> ProviderToken in
            if let token = tokens[key], now.timeIntervalSince(token.issuedAt) < refreshAfter {
                return token
            }
            let token = try ProviderToken(credentials: credentials, issuedAt: now)
            tokens[key] = token
            return token
        }
    }

    /// APNs called the token issued at `issuedAt` expired (`ExpiredProviderToken`): drop it so
    /// the next `token(for:)` signs a new one. Returns false (and keeps it) when a newer token
    /// already replaced it, or when it is younger than `minimumRenewalInterval` (then a clock is
    /// wrong and a new token would only earn `TooManyProviderTokenUpdates`).
    @discardableResult
    public func invalidate(_ credentials: APNsCredentials, issuedAt: Date) -> Bool {
        let key = Key(teamId: credentials.teamId, keyId: credentials.keyId, fingerprint: credentials.fingerprint)
        let now = self.now()
        let minimum = minimumRenewalInterval
        return state.withLock { tokens in
            guard let token = tokens[key] else { return true }
            guard token.issuedAt == issuedAt else { return token.issuedAt > issuedAt }
            guard now.timeIntervalSince(token.issuedAt) >= minimum else { return false }
            tokens[key] = nil
            return true
        }
    }
}
