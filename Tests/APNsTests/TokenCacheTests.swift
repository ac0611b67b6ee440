import BuzzKitAPNs
import BuzzKitCrypto
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// A wall clock the test moves by hand.
final class ManualClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(minutes: Double) { current.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
    func set(_ date: Date) { current.withLock { $0 = date } }
}

@Suite("Provider tokens")
struct TokenCacheTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    private func credentials(team: String = "TEAM000001", key: String = "KEY0000001") throws -> APNsCredentials {
        try APNsCredentials(teamId: team, keyId: key, privateKey: ES256PrivateKey.generate())
    }

    @Test func tokenIsAVerifiableES256JWT() throws {
        let creds = try credentials()
        let token = try ProviderToken(credentials: creds, issuedAt: Self.start.addingTimeInterval(0.9))
        let parts = token.value.split(separator: ".")
        try #require(parts.count == 3)
        let header = try JSONValue.parse(#require(Base64URL.decode(parts[0])))
        let claims = try JSONValue.parse(#require(Base64URL.decode(parts[1])))
        #expect(header == ["alg": "ES256", "kid": "KEY0000001"])
        #expect(claims == ["iss": "TEAM000001", "iat": 1_700_000_000])
        #expect(token.value.hasPrefix(Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY0000001"}"#.utf8)) + "."))
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let publicKey = try ES256PublicKey(pem: creds.privateKey.publicKeyPEM)
        #expect(publicKey.verify(signature: signature, message: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(token.issuedAt == Self.start)
        #expect(token.authorization == "bearer \(token.value)")
        #expect(token.redactedAuthorization == "bearer <redacted kid=KEY0000001 iat=1700000000>")
    }

    @Test func refreshesAfterFiftyMinutesNotBefore() throws {
        let clock = ManualClock(Self.start)
        let cache = APNsTokenCache(now: { clock.now })
        let creds = try credentials()
        let first = try cache.token(for: creds)
        #expect(first.issuedAt == Self.start)
        clock.advance(minutes: 49.9)
        #expect(try cache.token(for: creds) == first)
        clock.advance(minutes: 0.1)
        let second = try cache.token(for: creds)
        #expect(second != first)
        #expect(second.issuedAt == Self.start.addingTimeInterval(50 * 60))
        clock.advance(minutes: 10)
        #expect(try cache.token(for: creds) == second)
    }

    @Test func oneTokenPerKeyShared() throws {
        let cache = APNsTokenCache(now: { Self.start })
        let key = ES256PrivateKey.generate()
        let a = try APNsCredentials(teamId: "T1", keyId: "K1", privateKey: key)
        let b = try APNsCredentials(teamId: "T1", keyId: "K1", privateKey: key)
        let other = try APNsCredentials(teamId: "T1", keyId: "K2", privateKey: key)
        let rotated = try APNsCredentials(teamId: "T1", keyId: "K1", privateKey: ES256PrivateKey.generate())
        let token = try cache.token(for: a)
        #expect(try cache.token(for: b) == token)
        #expect(try cache.token(for: other) != token)
        #expect(try cache.token(for: rotated) != token)
    }

    @Test func invalidateRenewsOnlyOldEnoughTokensOnce() throws {
        let clock = ManualClock(Self.start)
        let cache = APNsTokenCache(now: { clock.now })
        let creds = try credentials()
        let first = try cache.token(for: creds)
        clock.advance(minutes: 5)
        // Younger than 20 minutes: a new token would earn TooManyProviderTokenUpdates.
        #expect(cache.invalidate(creds, issuedAt: first.issuedAt) == false)
        #expect(try cache.token(for: creds) == first)
        clock.advance(minutes: 15)
        #expect(cache.invalidate(creds, issuedAt: first.issuedAt))
        let second = try cache.token(for: creds)
        #expect(second.issuedAt == Self.start.addingTimeInterval(20 * 60))
        // A late report about the old token does not throw away the new one.
        #expect(cache.invalidate(creds, issuedAt: first.issuedAt))
        #expect(try cache.token(for: creds) == second)
    }

    @Test func credentialErrorsAreClear() {
        #expect(throws: APNsCredentialsError.self) {
            try APNsCredentials(teamId: "T", keyId: "K", privateKeyPEM: "nope")
        }
        do {
            _ = try APNsCredentials(teamId: "", keyId: "K", privateKey: ES256PrivateKey.generate())
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidTeamId)
        }
    }
}
