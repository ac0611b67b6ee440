import BuzzKit
import BuzzKitCrypto
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// `preferences` against the real gateway (Postgres, Redis), one stack per test: the signature
/// from `identify`, the history's `sdk` source, the offline queue across a restart, and refusals.
@Suite("SDK preferences end to end", .serialized, .requiresTestStack)
struct PreferencesEndToEndTests {
    /// A stack with the categories `offers` and `news` and an identity secret.
    struct Tenant {
        let stack: ServerStack
        let secret: String

        /// What the tenant's backend hands the app for `subscriber`.
        func signature(_ subscriber: String) -> String {
            Hex.string(Digest.hmacSHA256(key: Array(secret.utf8), message: Array(subscriber.utf8)))
        }

        /// The subscriber's preferences as the tenant reads them.
        func preferences(_ subscriber: String) async throws -> (status: Int, data: JSONValue?) {
            let answer = try await stack.send("GET", "/v1/subscribers/\(subscriber)/preferences")
            return (answer.status, answer.envelope.data)
        }

        func history(_ subscriber: String) async throws -> [JSONValue] {
            try await stack.get("/v1/subscribers/\(subscriber)/preferences/history").arrayValue ?? []
        }

        /// A new identity secret (the one before keeps verifying for 24 hours).
        func rotateSecret() async throws -> String {
            let made = try await stack.send("POST", "/v1/settings/identity-secret")
            return try #require(made.envelope.data?["secret"]?.stringValue, "\(made)")
        }
    }

    func withTenant(_ body: (Tenant) async throws -> Void) async throws {
        let stack = try await ServerStack()
        do {
            for key in ["offers", "news"] {
                let made = try await stack.send(
                    "PUT", "/v1/categories/\(key)", body: ["name": .string(key.capitalized)])
                #expect(made.status == 201, "\(made.envelope)")
            }
            let made = try await stack.send("POST", "/v1/settings/identity-secret")
            let secret = try #require(made.envelope.data?["secret"]?.stringValue, "\(made)")
            try await body(Tenant(stack: stack, secret: secret))
        } catch {
            Issue.record("gateway log: \(stack.gateway.output.suffix(3000))")
            await stack.close()
            throw error
        }
        await stack.close()
    }

    /// The error `body` threw (nil when it threw none, or something else than a `PreferencesError`).
    func failure<T>(_ body: () async throws -> T) async -> PreferencesError? {
        do {
            _ = try await body()
            return nil
        } catch { return error as? PreferencesError }
    }

    @Test func aCategoryTurnedOffInTheSDKIsOnTheServerWithSourceSDK() async throws {
        try await withTenant { tenant in
            let directory = TemporaryDirectory()
            let client = try tenant.stack.client(directory: directory)
            let subscriber = TestEnvironment.uniqueName("reader")

            #expect(await failure { try await client.preferences.fetch() }?.code == .notIdentified)
            #expect(
                await failure { try await client.preferences.set("offers", enabled: false) }?.code == .notIdentified)
            client.identify(subscriber)
            #expect(await failure { try await client.preferences.fetch() }?.code == .signatureRequired)
            #expect(await client.preferences.pendingChangeCount() == 0)

            client.identify(subscriber, signature: tenant.signature(subscriber))
            let before = try await client.preferences.fetch()
            #expect(before.subscriberId == subscriber && before.all && before.categories.isEmpty)
            #expect(before.effective.map(\.key) == ["news", "offers"])
            #expect(before.isEnabled("offers") && !before.isCached && !before.hasPendingChanges)

            #expect(try await client.preferences.set("offers", enabled: false) == .applied)
            #expect(await client.preferences.pendingChangeCount() == 0)

            let server = try await tenant.preferences(subscriber)
            #expect(server.status == 200)
            #expect(server.data?["categories"] == ["offers": false])
            #expect(server.data?["all"] == true)
            let history = try await tenant.history(subscriber)
            #expect(history.map { $0["source"] } == ["sdk"])
            #expect(history.first?["categories"] == ["offers": ["from": .null, "to": false]])

            let after = try await client.preferences.fetch()
            #expect(!after.isEnabled("offers") && after.isEnabled("news"))
            #expect(after.effective.first { $0.key == "offers" }?.chosen == true)
            let cached = try #require(await client.preferences.cached())
            #expect(cached.isCached && cached.categories == ["offers": false])

            // A category the tenant does not have: refused (422), dropped, not retried.
            let unknown = await failure { try await client.preferences.set("gossip", enabled: false) }
            #expect(unknown?.code == .rejected && unknown?.status == 422 && unknown?.apiCode == "validation_failed")
            #expect(await client.preferences.pendingChangeCount() == 0)
            #expect(try await tenant.history(subscriber).count == 1)
        }
    }

    @Test func aChangeMadeWhileTheGatewayIsDownSurvivesARestartAndIsAppliedWhenItReturns() async throws {
        try await withTenant { tenant in
            let directory = TemporaryDirectory()
            let subscriber = TestEnvironment.uniqueName("commuter")
            // No timers (the test flushes itself), so nothing retries behind its back.
            let first = try tenant.stack.client(directory: directory, clock: SettableClock())
            first.identify(subscriber, signature: tenant.signature(subscriber))
            _ = try await first.preferences.fetch()  // the identify went through; the answer is cached

            try await tenant.stack.stopGateway()
            #expect(try await first.preferences.set("offers", enabled: true) == .queued)
            #expect(try await first.preferences.set("news", enabled: false) == .queued)
            #expect(try await first.preferences.set("offers", enabled: false) == .queued)  // the latest wins
            #expect(await first.preferences.pendingChangeCount() == 1)  // merged into one change
            let offline = await failure { try await first.preferences.fetch() }
            #expect(offline?.code == .unavailable)
            let cached = try #require(await first.preferences.cached())
            #expect(cached.isCached && cached.hasPendingChanges)
            #expect(!cached.isEnabled("offers") && !cached.isEnabled("news"))

            // The app is killed and launched again: a new instance on the same storage.
            let second = try tenant.stack.client(directory: directory, clock: SettableClock())
            #expect(await second.preferences.pendingChangeCount() == 1)
            await second.flushEvents()  // still down: kept, an attempt counted
            #expect(await second.preferences.pendingChangeCount() == 1)
            #expect(await second.preferences.cached()?.categories == ["offers": false, "news": false])

            try await tenant.stack.startGateway()
            await second.flushEvents()
            #expect(await second.preferences.pendingChangeCount() == 0)
            let server = try await tenant.preferences(subscriber)
            #expect(server.data?["categories"] == ["offers": false, "news": false])
            let history = try await tenant.history(subscriber)
            #expect(history.map { $0["source"] } == ["sdk"])  // one change, as merged
            let fetched = try await second.preferences.fetch()
            #expect(!fetched.hasPendingChanges && !fetched.isEnabled("offers") && !fetched.isEnabled("news"))
        }
    }

    @Test func aSignatureTheServerRefusesIsATypedErrorAndTheChangeIsNotRetried() async throws {
        try await withTenant { tenant in
            let directory = TemporaryDirectory()
            let logs = LogCapture()
            let transport = RecordingTransport(URLSessionTransport(timeout: 10))
            let alice = TestEnvironment.uniqueName("alice")
            let bob = TestEnvironment.uniqueName("bob")
            let client = try tenant.stack.client(directory: directory, transport: transport, logs: logs)
            // Another subscriber's signature: identify itself is refused, and so is everything after.
            client.identify(alice, signature: tenant.signature(bob))
            let read = await failure { try await client.preferences.fetch() }
            #expect(read?.code == .forbidden && read?.status == 403, "\(String(describing: read))")
            let write = await failure { try await client.preferences.set("offers", enabled: false) }
            #expect(write?.code == .forbidden && write?.status == 403, "\(String(describing: write))")
            #expect(await client.preferences.pendingChangeCount() == 0)
            await client.flushEvents()
            await client.flushEvents()
            let puts = transport.requests.filter { $0.method == "PUT" && $0.url.path.hasSuffix("/preferences") }
            #expect(puts.count == 1)
            #expect(puts.first?.headers["BuzzKit-Subscriber-Signature"] == tenant.signature(bob))
            #expect(logs.contains(.error, "preference change dropped"))
            let server = try await tenant.preferences(alice)
            #expect(server.status == 404 || server.data?["categories"] == [:])
            // The refused signature costs the preferences only: the identify goes again without
            // it, so what the app tracks still reaches the subscriber.
            client.track("after.refusal")
            await client.flushEvents()
            let tracked = try await tenant.stack.waitForEvent("after.refusal", of: alice)
            #expect(tracked.contains { $0["name"] == "after.refusal" })
            #expect(logs.contains(.error, "identify refused its signature"))

            // A signature that was right when the app got it, until the tenant replaced its secret
            // twice (the one before last stops verifying): the queued change is dropped with the
            // server's code, once.
            let carol = TestEnvironment.uniqueName("carol")
            let other = try tenant.stack.client(directory: TemporaryDirectory(), transport: transport, logs: logs)
            other.identify(carol, signature: tenant.signature(carol))
            #expect(try await other.preferences.set("news", enabled: false) == .applied)
            _ = try await tenant.rotateSecret()
            _ = try await tenant.rotateSecret()
            let stale = await failure { try await other.preferences.set("offers", enabled: false) }
            #expect(stale?.code == .forbidden && stale?.apiCode == "forbidden_subscriber")
            await other.flushEvents()
            #expect(await other.preferences.pendingChangeCount() == 0)
            #expect(try await tenant.preferences(carol).data?["categories"] == ["news": false])
            #expect(try await tenant.history(carol).count == 1)
        }
    }
}
