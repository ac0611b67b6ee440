import BuzzKit
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: local plans (bk.local, bk.cancel)")
struct LocalPlanTests {
    let plan = LocalPlan(
        id: "run_1:nudge", fireAt: .init(year: 2026, month: 9, day: 3, hour: 7, minute: 0),
        title: "Leg day", body: "6:00 with Maya.", data: ["workoutId": "w_9"],
        deepLink: "gym://workouts/legs", cancelOn: ["workout.completed", "workout.skipped"],
        messageId: "msg_local")

    func userInfo(_ payload: PushPayload) throws -> [AnyHashable: Any] {
        try #require(JSONValue.parse(payload.encode()).anyValue as? [String: Any])
    }

    @Test func aPlanIsScheduledAtItsWallClockComponentsAndAcknowledgedAtOnce() async throws {
        let h = try Harness()
        let outcome = await h.client.didReceiveRemoteNotification(userInfo: try userInfo(.local(plan)))
        #expect(outcome == .newData)
        let request = try #require(h.scheduler.request("run_1:nudge"))
        #expect(request.fireAt == LocalPlan.FireDate(year: 2026, month: 9, day: 3, hour: 7, minute: 0))
        #expect(request.title == "Leg day")
        #expect(request.body == "6:00 with Maya.")
        #expect(request.messageId == "msg_local")
        #expect(request.payload.bk.deepLink == "gym://workouts/legs")
        #expect(request.payload.bk.data == ["workoutId": "w_9"])
        // Flushed at once: no clock advance happened.
        #expect(h.transport.sentNames == ["$local.scheduled"])
        #expect(h.transport.sentEvents.first?["data"] == ["localId": "run_1:nudge", "messageId": "msg_local"])
    }

    @Test func theOpenOfALocalNotificationIsTrackedLikeAPush() async throws {
        let h = try Harness()
        _ = await h.client.didReceiveRemoteNotification(.local(plan))
        let request = try #require(h.scheduler.request("run_1:nudge"))
        h.transport.clear()
        await h.client.notificationOpened(request.payload, actionIdentifier: nil)
        let opened = h.transport.sentEvents.first { $0["name"] == "$notification.opened" }
        #expect(opened?["data"]?["messageId"] == "msg_local")
    }

    @Test func aMatchingTrackRemovesThePendingNotificationOfflineAndAfterARestart() async throws {
        let h = try Harness()
        _ = await h.client.didReceiveRemoteNotification(.local(plan))
        h.scheduler.add("other")
        // A restart, offline.
        let later = try h.restarted(transport: FakeTransport { _, _ in throw NetworkDown() })
        later.client.track("workout.started")
        await later.client.waitForPendingWrites()
        #expect(h.scheduler.ids == ["other", "run_1:nudge"])
        later.client.track("workout.skipped")
        await later.client.waitForPendingWrites()
        #expect(h.scheduler.ids == ["other"])
        #expect(later.transport.requests.isEmpty)
    }

    @Test func cancelRemovesNotificationsWhoseIdEqualsOrStartsWithTheRunId() async throws {
        let h = try Harness()
        for id in ["run_1", "run_1:nudge", "run_1:later", "run_10", "run_2:nudge"] { h.scheduler.add(id) }
        // "run_10" starts with "run_1" too: the contract is a plain prefix, which workflow ids avoid.
        let outcome = await h.client.didReceiveRemoteNotification(userInfo: try userInfo(.cancel(runId: "run_1:")))
        #expect(outcome == .newData)
        #expect(h.scheduler.ids == ["run_1", "run_10", "run_2:nudge"])
        _ = await h.client.didReceiveRemoteNotification(.cancel(runId: "run_2:nudge"))
        #expect(h.scheduler.ids == ["run_1", "run_10"])
    }

    @Test func aCancelledPlanForgetsItsCancelOnNames() async throws {
        let h = try Harness()
        _ = await h.client.didReceiveRemoteNotification(.local(plan))
        _ = await h.client.didReceiveRemoteNotification(.cancel(runId: "run_1"))
        h.scheduler.add("run_1:nudge")  // scheduled again by another plan without cancelOn
        h.client.track("workout.completed")
        await h.client.waitForPendingWrites()
        #expect(h.scheduler.ids == ["run_1:nudge"])
    }

    @Test func anythingElseIsNoData() async throws {
        let h = try Harness()
        #expect(await h.client.didReceiveRemoteNotification(userInfo: ["aps": ["alert": "hi"]]) == .noData)
        let ordinary = PushPayload(aps: .init(alert: .init(body: "hi")), bk: .init(messageId: "m"))
        #expect(await h.client.didReceiveRemoteNotification(userInfo: try userInfo(ordinary)) == .noData)
        #expect(h.transport.requests.isEmpty)
    }
}
