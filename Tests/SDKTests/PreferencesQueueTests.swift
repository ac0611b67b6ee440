import BuzzKit
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// The preference queue's rules on the platform fakes (the wiring against the real gateway is
/// `PreferencesEndToEndTests`).
@Suite("SDK: the preference queue")
struct PreferencesQueueTests {
    static let signature = String(repeating: "ab", count: 32)
    static let path = "/v1/subscribers/alice/preferences"

    func puts(_ transport: FakeTransport) -> [JSONValue] {
        transport.requests.filter { $0.method == "PUT" && $0.url.path == Self.path }
            .compactMap { try? JSONValue.parse($0.body) }
    }

    @Test func aChangeMergedWhileTheRowWasInFlightIsSentAgain() async throws {
        let h = try Harness()
        h.client.identify("alice", signature: Self.signature)
        let client = h.client
        let started = Mutex<Task<Preferences.WriteOutcome, any Error>?>(nil)
        h.transport.respond { request, _ in
            guard request.method == "PUT" else { return FakeTransport.accepted() }
            let first = started.withLock { task -> Bool in
                guard task == nil else { return false }
                task = Task { try await client.preferences.set("news", enabled: false) }
                return true
            }
            // The second change is merged into the row being sent before this answer arrives.
            if first { try await Task.sleep(for: .milliseconds(300)) }
            return TransportResponse(status: 200, body: Envelope.success(["changed": true]).encoded(requestId: "r"))
        }
        #expect(try await client.preferences.set("offers", enabled: false) == .applied)
        let second = try #require(started.withLock { $0 })
        #expect(try await second.value == .applied)
        #expect(
            puts(h.transport) == [["categories": ["offers": false]], ["categories": ["offers": false, "news": false]]])
        #expect(await client.preferences.pendingChangeCount() == 0)
        #expect(
            h.transport.requests.first { $0.method == "PUT" }?.headers["BuzzKit-Subscriber-Signature"] == Self.signature
        )
    }

    @Test func networkFailuresKeepTheChangeUntilMaxAttemptsThenItIsGivenUpAndReported() async throws {
        let h = try Harness { $0.maxAttempts = 3 }
        h.transport.respond { request, _ in
            guard request.method == "PUT" else { return FakeTransport.accepted() }
            return FakeTransport.error("internal_error", status: 503)
        }
        h.client.identify("alice", signature: Self.signature)
        await h.client.flushEvents()  // the identify's own flush, before any change is queued
        #expect(try await h.client.preferences.setAll(false) == .queued)
        #expect(try await h.client.preferences.set("offers", enabled: true) == .queued)
        #expect(await h.client.preferences.pendingChangeCount() == 1)
        await h.client.flushEvents()
        #expect(await h.client.preferences.pendingChangeCount() == 0)
        #expect(puts(h.transport).count == 3)
        #expect(puts(h.transport).last == ["all": false, "categories": ["offers": true]])
        #expect(
            h.logs.all.contains { $0.message == "preference change dropped" && $0.metadata["error.code"] == "gave_up" })
    }

    @Test func changesOfTwoSubscribersStayInOrderAndEachKeepsItsSignature() async throws {
        let h = try Harness()
        h.transport.respond { _, _ in throw NetworkDown() }
        h.client.identify("alice", signature: Self.signature)
        #expect(try await h.client.preferences.set("offers", enabled: false) == .queued)
        h.client.reset()
        let bob = String(repeating: "cd", count: 32)
        h.client.identify("bob", signature: bob)
        #expect(try await h.client.preferences.set("offers", enabled: true) == .queued)
        #expect(await h.client.preferences.pendingChangeCount() == 2)
        h.transport.clear()
        h.transport.respond { _, _ in
            TransportResponse(status: 200, body: Envelope.success([:]).encoded(requestId: "r"))
        }
        await h.client.flushEvents()
        let sent = h.transport.requests.filter { $0.method == "PUT" }
        #expect(sent.map(\.url.path) == [Self.path, "/v1/subscribers/bob/preferences"])
        #expect(sent.map { $0.headers["BuzzKit-Subscriber-Signature"] } == [Self.signature, bob])
        #expect(await h.client.preferences.pendingChangeCount() == 0)
    }

    @Test func nothingIsStoredForAChangeTheSDKRefuses() async throws {
        let h = try Harness()
        h.client.identify("alice", signature: Self.signature)
        for change in [PreferenceChange(), PreferenceChange(categories: ["no spaces": true])] {
            do {
                try await h.client.preferences.update(change)
                Issue.record("\(change) was accepted")
            } catch { #expect(error.code == .invalidChange) }
        }
        #expect(await h.client.preferences.pendingChangeCount() == 0)
    }
}
