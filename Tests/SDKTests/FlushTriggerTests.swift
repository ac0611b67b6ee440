import BuzzKit
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: flush triggers")
struct FlushTriggerTests {
    @Test func threeSecondsAfterATrack() async throws {
        let h = try Harness()
        h.client.track("tap")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 2.9)
        #expect(h.transport.requests.isEmpty)
        await h.clock.advance(by: 0.1)
        #expect(h.transport.sentNames == ["tap"])
    }

    @Test func aLaterTrackDoesNotPostponeTheDueFlush() async throws {
        let h = try Harness()
        h.client.track("first")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 2)
        h.client.track("second")
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 1)
        #expect(h.transport.sentNames == ["first", "second"])
    }

    @Test func fiveSecondsAfterConfigure() async throws {
        // A previous run left an event queued (offline); this launch tracks nothing itself.
        let previous = try Harness(transport: FakeTransport { _, _ in throw NetworkDown() })
        await previous.client.start()
        previous.client.track("left.over")
        await previous.client.flushEvents()
        #expect(await previous.client.pendingEventCount() == 2)

        let h = try previous.restarted(transport: FakeTransport())
        await h.client.start()
        await h.client.waitForPendingWrites()
        await h.clock.advance(by: 4.9)
        #expect(h.transport.requests.isEmpty)
        await h.clock.advance(by: 0.1)
        #expect(h.transport.sentNames == ["$app.installed", "left.over"])
    }

    @Test(arguments: [LifecycleSignal.online, .background])
    func onLifecycleSignals(signal: LifecycleSignal) async throws {
        let h = try Harness { $0.automaticSessionTracking = false }
        await h.client.start()
        h.client.track("queued")
        await h.client.waitForPendingWrites()
        h.transport.clear()
        await h.lifecycle.send(signal)
        #expect(h.transport.sentNames.contains("queued"))
        #expect(await h.client.pendingEventCount() == 0)
    }

    @Test func whenIdentifyingUnderANewIdButNotTheSameOne() async throws {
        let h = try Harness()
        h.client.track("queued")
        h.client.identify("user-1")
        await h.client.flushEvents()  // waits for the flush identify requested, which ran first
        #expect(h.transport.bodies("/v1/identify").count == 1)
        h.transport.clear()
        h.client.track("again")
        h.client.identify("user-1")
        await h.client.waitForPendingWrites()
        #expect(h.transport.requests.isEmpty)
    }

    @Test func identifyFlushesWithoutWaitingForATimer() async throws {
        let h = try Harness()
        h.client.track("queued")
        h.client.identify("user-1")
        // No clock advance: only the identify trigger can have sent it.
        #expect(await eventually { h.transport.sentNames == ["queued"] })
    }

    @Test func whenANotificationIsOpenedOrDismissed() async throws {
        let h = try Harness()
        let payload = PushPayload(aps: .init(alert: .init(title: "Hi")), bk: .init(messageId: "msg_1"))
        await h.client.notificationOpened(payload, actionIdentifier: nil)
        #expect(h.transport.sentNames == ["$notification.opened"])
        h.transport.clear()
        await h.client.notificationDismissed(payload)
        #expect(h.transport.sentNames == ["$notification.dismissed"])
        #expect(h.transport.sentEvents.first?["data"] == ["messageId": "msg_1"])
    }
}

/// Polls `condition` (no timing assertion: a generous bound for work already under way).
func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<500 {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return await condition()
}
