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
        let provider = FakeActivityProvider(attributesType: "MatchAttributes", script: [
            .activity(id: "act_1", attributesType: "MatchAttributes"),
            .pushToken(id: "act_1", attributesType: "MatchAttributes", token: token),
            .pushToken(id: "act_1", attributesType: "MatchAttributes", token: Data([0x02])),  // rotation
            .pushToStartToken(attributesType: "MatchAttributes", token: Data([0x09])),
            .state(id: "act_1", attributesType: "MatchAttributes", .stale),
            .state(id: "act_1", attributesType: "MatchAttributes", .ended),
            .state(id: "act_1", attributesType: "MatchAttributes", .ended),
        ])
        await h.client.activities.run(provider)
        let calls = h.transport.requests.filter { !$0.url.path.hasPrefix("/v1/events") && $0.url.path != "/v1/identify" }
        #expect(calls.map { "\($0.method) \($0.url.path)" } == [
            "PUT /v1/subscribers/user-42/live-activities/act_1",
            "PUT /v1/subscribers/user-42/live-activities/act_1",
            "PUT /v1/subscribers/user-42/live-activity-start-tokens/MatchAttributes",
            "DELETE /v1/subscribers/user-42/live-activities/act_1",
        ])
        #expect(try JSONValue.parse(calls[0].body) == ["token": "abcd01", "attributesType": "MatchAttributes",
                                                       "environment": "sandbox", "bundleId": "com.example.app"])
        #expect(try JSONValue.parse(calls[1].body)["token"] == "02")
        await h.client.flushEvents()
        let events = h.transport.sentEvents
        #expect(events.compactMap { $0["name"]?.stringValue } == ["$activity.started", "$activity.stale", "$activity.ended"])
        #expect(events.first?["data"] == ["activityId": "act_1", "attributesType": "MatchAttributes"])
    }

    @Test func dismissedIsReportedAndClearedOnTheServer() async throws {
        let h = try Harness()
        await h.client.activities.run(FakeActivityProvider(attributesType: "T", script: [
            .activity(id: "a", attributesType: "T"), .state(id: "a", attributesType: "T", .dismissed),
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

    @Test func aServerWithoutLiveActivityRoutesIsReportedClearly() async throws {
        let h = try Harness(transport: FakeTransport { request, _ in
            request.url.path.hasPrefix("/v1/events") ? FakeTransport.accepted() : FakeTransport.error(.notFound, status: 404)
        })
        await #expect {
            try await h.client.activities.register(id: "x", token: token, attributesType: "T")
        } throws: { error in
            (error as? ActivityRegistrationError)?.code == .serverLacksLiveActivities
        }
        await #expect {
            try await h.client.activities.registerPushToStartToken(token, attributesType: "T")
        } throws: { error in
            (error as? ActivityRegistrationError)?.code == .serverLacksLiveActivities
        }
        await h.client.activities.run(FakeActivityProvider(attributesType: "T", script: [
            .pushToken(id: "y", attributesType: "T", token: token),
        ]))
        #expect(h.logs.contains(.error, "live activity token not registered"))
        #expect(h.logs.all.contains { $0.metadata["error"]?.contains("server_lacks_live_activities") == true })
    }
}
