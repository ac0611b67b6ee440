import BuzzKit
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: the offline queue")
struct QueueTests {
    @Test(arguments: [
        ("", "empty"),
        (String(repeating: "é", count: 65), "130 bytes of UTF-8"),
        ("$app.opened", "reserved prefix"),
        ("$custom", "reserved prefix, unknown")
    ])
    func anInvalidNameIsLoggedAndDroppedNeverSent(name: String, why: String) async throws {
        let h = try Harness()
        h.client.track(name)
        #expect(await h.client.pendingEventCount() == 0, "\(why)")
        #expect(h.logs.contains(.error, "invalid name"), "\(why)")
        await h.client.flushEvents()
        #expect(h.transport.requests.isEmpty)
    }

    @Test func aNameOf128BytesIsAccepted() async throws {
        let h = try Harness()
        h.client.track(String(repeating: "a", count: 128), data: ["ok": true])
        #expect(await h.client.pendingEventCount() == 1)
        #expect(!h.logs.contains(.error, "invalid name"))
    }

    @Test func everyEventIsOnDiskBeforeAnyNetworkCall() async throws {
        let h = try Harness()
        h.client.track(
            "workout.completed",
            data: [
                "duration": 42, "program": "legs", "coupon": nil,
                "items": ["mat", "strap"], "shipping": ["express": true], "total": 49.9
            ])
        #expect(await h.client.pendingEventCount() == 1)
        #expect(h.transport.requests.isEmpty)
        await h.client.flushEvents()
        #expect(await h.client.pendingEventCount() == 0)
        let events = h.transport.sentEvents
        #expect(events.count == 1)
        #expect(
            events.first?["data"] == [
                "duration": 42, "program": "legs", "coupon": nil, "items": ["mat", "strap"],
                "shipping": ["express": true], "total": 49.9
            ])
        #expect(events.first?["id"]?.stringValue?.isEmpty == false)
        #expect(h.transport.requests.first?.headers["Authorization"] == "Bearer bk_ck_test")
    }

    @Test func batchesHoldAtMost100EventsInTrackingOrder() async throws {
        let h = try Harness()
        for n in 0..<250 { h.client.track("tick", data: ["n": .int(Int64(n))]) }
        await h.client.flushEvents()
        let batches = h.transport.bodies("/v1/events")
        #expect(batches.map { $0["events"]?.arrayValue?.count ?? 0 } == [100, 100, 50])
        #expect(h.transport.sentEvents.compactMap { $0["data"]?["n"]?.intValue } == (0..<250).map(Int64.init))
        #expect(Set(h.transport.sentEvents.compactMap { $0["id"]?.stringValue }).count == 250)
        #expect(await h.client.pendingEventCount() == 0)
    }

    @Test func eventsAreBatchedByTheIdentityTheyWereTrackedUnder() async throws {
        let h = try Harness()
        let anonymous = h.client.anonymousId
        h.client.track("a.one")
        h.client.track("a.two")
        h.client.identify("user-1")
        h.client.track("s.one")
        await h.client.flushEvents()
        let identify = h.transport.bodies("/v1/identify")
        #expect(identify == [["anonymousId": .string(anonymous), "subscriberId": "user-1"]])
        let batches = h.transport.bodies("/v1/events")
        #expect(batches.count == 2)
        #expect(batches.first?["anonymousId"] == .string(anonymous))
        #expect(batches.first?["subscriberId"] == nil)
        #expect(batches.first?["events"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["a.one", "a.two"])
        #expect(batches.last?["subscriberId"] == "user-1")
        #expect(batches.last?["events"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["s.one"])
    }

    @Test func resetSendsLaterEventsUnderANewAnonymousId() async throws {
        let h = try Harness()
        h.client.identify("user-1")
        h.client.track("before.reset")
        h.client.reset()
        h.client.track("after.reset")
        await h.client.flushEvents()
        let batches = h.transport.bodies("/v1/events")
        #expect(batches.count == 2)
        #expect(batches.first?["subscriberId"] == "user-1")
        let newAnonymous = h.client.anonymousId
        #expect(batches.last?["anonymousId"] == .string(newAnonymous))
    }

    @Test func aNetworkFailureKeepsTheBatchAndGivesUpAfter20Attempts() async throws {
        let h = try Harness(transport: FakeTransport { _, _ in throw NetworkDown() })
        h.client.track("offline.event")
        for attempt in 1...19 {
            await h.client.flushEvents()
            #expect(await h.client.pendingEventCount() == 1, "attempt \(attempt)")
        }
        #expect(h.transport.bodies("/v1/events").count == 19)
        await h.client.flushEvents()
        #expect(await h.client.pendingEventCount() == 0)
        #expect(h.logs.contains(.error, "given up"))
    }

    @Test(arguments: [500, 502, 503, 408, 429])
    func aServerOrThrottlingAnswerIsRetriedNotDropped(status: Int) async throws {
        let h = try Harness(transport: FakeTransport { _, _ in FakeTransport.error(.internalError, status: status) })
        h.client.track("kept")
        await h.client.flushEvents()
        #expect(await h.client.pendingEventCount() == 1)
        h.transport.respond { _, _ in FakeTransport.accepted() }
        await h.client.flushEvents()
        #expect(await h.client.pendingEventCount() == 0)
        #expect(h.transport.sentNames == ["kept", "kept"])
    }

    // (401 is retried once with a new installation token: InstallationTests.)
    @Test(arguments: [
        (422, ErrorCode.validationFailed), (403, ErrorCode.forbiddenScope), (413, ErrorCode.payloadTooLarge)
    ])
    func anAPIErrorDropsTheBatchAndTheNextOneGoesThrough(status: Int, code: ErrorCode) async throws {
        let h = try Harness(
            transport: FakeTransport { _, index in
                index == 0 ? FakeTransport.error(code, status: status) : FakeTransport.accepted()
            })
        for n in 0..<150 { h.client.track("e", data: ["n": .int(Int64(n))]) }
        await h.client.flushEvents()
        #expect(await h.client.pendingEventCount() == 0)
        let batches = h.transport.bodies("/v1/events")
        #expect(batches.count == 2)
        #expect(batches.last?["events"]?.arrayValue?.first?["data"]?["n"] == 100)
        #expect(h.logs.contains(.error, "rejected by the API and dropped"))
    }

    @Test func theQueueSurvivesARestartMidFlushAndKeepsEventIds() async throws {
        // The server stored the batch but the answer never arrived: the batch stays queued.
        let first = try Harness(transport: FakeTransport { _, _ in throw NetworkDown() })
        first.client.track("a")
        first.client.track("b")
        await first.client.flushEvents()
        let attemptedIds = first.transport.sentEvents.compactMap { $0["id"]?.stringValue }
        #expect(await first.client.pendingEventCount() == 2)

        let second = try first.restarted(transport: FakeTransport())
        #expect(await second.client.pendingEventCount() == 2)
        #expect(second.client.anonymousId == first.client.anonymousId)
        await second.client.flushEvents()
        #expect(second.transport.sentEvents.compactMap { $0["id"]?.stringValue } == attemptedIds)
        #expect(await second.client.pendingEventCount() == 0)
    }

    @Test func identityIsRestoredAfterARestart() async throws {
        let first = try Harness()
        first.client.identify("user-7")
        await first.client.waitForPendingWrites()
        let second = try first.restarted()
        #expect(second.client.identity == .subscriber("user-7"))
    }
}
