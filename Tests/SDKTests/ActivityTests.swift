import BuzzKit
import BuzzKitWire
import Foundation
import Testing

struct FakeActivityProvider: ActivityProvider {
    let attributesType: String
    let script: [ActivityUpdate]

    func updates() -> AsyncStream<ActivityUpdate> {
        AsyncStream { continuation in
            for update in script { continuation.yield(update) }
            continuation.finish()
        }
    }
}

@Suite("SDK: Live Activity tokens")
struct ActivityTests {
    let token = Data([0xAB, 0xCD, 0x01])

    @Test func observingRegistersTokensAndReportsTheLifecycle() async throws {
        let h = try Harness()
        h.client.identify("user-42")
        await h.client.flushEvents()
        let provider = FakeActivityProvider(
            attributesType: "MatchAttributes",
            script: [
                .activity(id: "act_1", attributesType: "MatchAttributes"),
                .pushToken(id: "act_1", attributesType: "MatchAttributes", token: token),
                .pushToken(id: "act_1", attributesType: "MatchAttributes", token: Data([0x02])),  // rotation
                .pushToStartToken(attributesType: "MatchAttributes", token: Data([0x09])),
                .state(id: "act_1", attributesType: "MatchAttributes", .stale),
                .state(id: "act_1", attributesType: "MatchAttributes", .ended),
                .state(id: "act_1", attributesType: "MatchAttributes", .ended)
            ])
        await h.client.activities.run(provider)
        let calls = h.transport.requests.filter {
            !$0.url.path.hasPrefix("/v1/events") && $0.url.path != "/v1/identify"
        }
        #expect(
            calls.map { "\($0.method) \($0.url.path)" } == [
                "PUT /v1/subscribers/user-42/live-activities/act_1",
                "PUT /v1/subscribers/user-42/live-activities/act_1",
                "PUT /v1/subscribers/user-42/live-activity-start-tokens/MatchAttributes",
                "DELETE /v1/subscribers/user-42/live-activities/act_1"
            ])
        #expect(
            try JSONValue.parse(calls[0].body) == [
                "token": "abcd01", "attributesType": "MatchAttributes",
                "environment": "sandbox", "bundleId": "com.example.app"
            ])
        #expect(try JSONValue.parse(calls[1].body)["token"] == "02")
        await h.client.flushEvents()
        let events = h.transport.sentEvents
        #expect(
            events.compactMap { $0["name"]?.stringValue } == ["$activity.started", "$activity.stale", "$activity.ended"]
        )
        #expect(events.first?["data"] == ["activityId": "act_1", "attributesType": "MatchAttributes"])
    }

    @Test func dismissedIsReportedAndClearedOnTheServer() async throws {
        let h = try Harness()
        await h.client.activities.run(
            FakeActivityProvider(
                attributesType: "T",
                script: [
                    .activity(id: "a", attributesType: "T"), .state(id: "a", attributesType: "T", .dismissed)
                ]))
        await h.client.flushEvents()
        #expect(h.transport.sentNames == ["$activity.started", "$activity.dismissed"])
        #expect(h.transport.requests.contains { $0.method == "DELETE" })
    }

    @Test func endByIdReportsAndClears() async throws {
        let h = try Harness()
        try await h.client.activities.register(id: "x", token: token, attributesType: "T")
        await h.client.activities.end(id: "x")
        await h.client.flushEvents()
        #expect(h.transport.sentEvents.first?["data"] == ["activityId": "x", "attributesType": "T"])
        #expect(h.transport.sentNames == ["$activity.ended"])
    }

    func liveActivityCalls(_ transport: FakeTransport) -> [String] {
        transport.requests.filter { $0.url.path.contains("/live-activit") }.map { "\($0.method) \($0.url.path)" }
    }

    @Test func aServerWithoutLiveActivityRoutesIsReportedOnceAndTheTokensAreKeptForALaterLaunch() async throws {
        let h = try Harness(
            transport: FakeTransport { request, _ in
                request.url.path.hasPrefix("/v1/events")
                    ? FakeTransport.accepted() : FakeTransport.error(.notFound, status: 404)
            })
        await #expect {
            try await h.client.activities.register(id: "x", token: token, attributesType: "T")
        } throws: { error in
            (error as? ActivityRegistrationError)?.code == .serverLacksLiveActivities
        }
        // Known now: no request is made for the rest of the process, and nothing more is logged.
        await #expect {
            try await h.client.activities.registerPushToStartToken(token, attributesType: "T")
        } throws: { error in
            (error as? ActivityRegistrationError)?.code == .serverLacksLiveActivities
        }
        await h.client.activities.run(
            FakeActivityProvider(
                attributesType: "T",
                script: [
                    .pushToken(id: "y", attributesType: "T", token: token),
                    .pushToken(id: "y", attributesType: "T", token: Data([0x07]))
                ]))
        await h.client.flushEvents()
        await h.client.flushEvents()
        #expect(liveActivityCalls(h.transport) == ["PUT /v1/subscribers/\(h.client.anonymousId)/live-activities/x"])
        #expect(h.logs.all.filter { $0.level == .error }.count == 1)
        #expect(h.logs.contains(.error, "no Live Activity routes"))
        #expect(await h.client.activities.pendingTokenCount() == 3)

        // A later launch, on a server that has the routes: the kept tokens are registered.
        let next = try h.restarted(transport: FakeTransport())
        await next.client.flushEvents()
        #expect(
            Set(liveActivityCalls(next.transport)) == [
                "PUT /v1/subscribers/\(h.client.anonymousId)/live-activities/x",
                "PUT /v1/subscribers/\(h.client.anonymousId)/live-activities/y",
                "PUT /v1/subscribers/\(h.client.anonymousId)/live-activity-start-tokens/T"
            ])
        let y = try #require(next.transport.requests.first { $0.url.path.hasSuffix("/live-activities/y") })
        #expect(try JSONValue.parse(y.body)["token"] == "07")  // the rotated one
        #expect(await next.client.activities.pendingTokenCount() == 0)
    }

    @Test func aNetworkFailureKeepsTheTokenForTheNextFlush() async throws {
        let h = try Harness(transport: FakeTransport { _, _ in throw NetworkDown() })
        await #expect {
            try await h.client.activities.register(id: "x", token: token, attributesType: "T")
        } throws: { error in
            (error as? ActivityRegistrationError)?.code == .unavailable
        }
        h.transport.respond { _, _ in FakeTransport.accepted() }
        await h.client.flushEvents()
        #expect(liveActivityCalls(h.transport).count == 2)
        #expect(await h.client.activities.pendingTokenCount() == 0)
    }

    @Test func identifyRegistersTheKeptTokensAgainUnderTheSubscriber() async throws {
        let h = try Harness()
        try await h.client.activities.register(id: "x", token: token, attributesType: "T")
        try await h.client.activities.registerPushToStartToken(Data([0x09]), attributesType: "T")
        h.client.identify("user-9")
        await h.client.flushEvents()
        #expect(
            liveActivityCalls(h.transport).suffix(2).sorted() == [
                "PUT /v1/subscribers/user-9/live-activities/x",
                "PUT /v1/subscribers/user-9/live-activity-start-tokens/T"
            ])
        h.transport.clear()
        await h.client.flushEvents()
        #expect(liveActivityCalls(h.transport).isEmpty)  // registered: not sent again
    }
}
