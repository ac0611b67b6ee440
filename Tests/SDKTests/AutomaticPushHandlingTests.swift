import BuzzKit
import BuzzKitWire
import Foundation
import Testing

@Suite("SDK: automatic push handling")
struct AutomaticPushHandlingTests {
    let plan = LocalPlan(
        id: "run_1:nudge", fireAt: .init(year: 2030, month: 1, day: 2, hour: 7, minute: 0),
        title: "Leg day", cancelOn: ["workout.completed"], messageId: "msg_local")

    let tapped = PushPayload(
        content: {
            var content = MessageContent()
            content.body = "Booked"
            content.deepLink = "gym://bookings/1"
            content.action = PushAction(name: "show_offer", data: ["offerId": "o_1"])
            content.actions = [PushButton(id: "reply", title: "Reply", input: true, placeholder: "Say something")]
            return content
        }(), messageId: "msg_1")

    @Test func onByDefaultSilentPushesReachTheSDKWithoutTheApp() async throws {
        let h = try Harness()
        #expect(h.client.configuration.automaticPushHandling)
        #expect(await h.pushes.send(.received(.local(plan))) == nil)  // nothing listens before start
        await h.client.start()
        await h.client.start()
        #expect(h.pushes.startCount == 1)
        #expect(await h.pushes.send(.received(.local(plan))) == .newData)
        #expect(h.scheduler.request("run_1:nudge")?.messageId == "msg_local")
        #expect(h.transport.sentNames.contains("$local.scheduled"))
        #expect(await h.pushes.send(.received(.cancel(runId: "run_1"))) == .newData)
        #expect(h.scheduler.ids.isEmpty)
        let ordinary = PushPayload(aps: .init(alert: .init(body: "hi")), bk: .init(messageId: "m"))
        #expect(await h.pushes.send(.received(ordinary)) == .noData)
    }

    @Test func opensAndDismissalsAreRoutedAndTrackedWithoutTheApp() async throws {
        let h = try Harness()
        let log = CallLog()
        h.client.actions.register("show_offer") { action in log.add("action \(action.name)") }
        h.client.onDeepLink { url in log.add("handler \(url.absoluteString)") }
        await h.client.start()
        h.transport.clear()
        _ = await h.pushes.send(.opened(tapped, actionIdentifier: "reply", input: "See you"))
        #expect(log.all == ["action show_offer", "handler gym://bookings/1"])
        let opened = h.transport.sentEvents.first { $0["name"] == "$notification.opened" }
        #expect(
            opened?["data"] == [
                "messageId": "msg_1", "action": "reply", "input": "See you", "deepLink": "gym://bookings/1"
            ])
        h.transport.clear()
        _ = await h.pushes.send(.dismissed(tapped))
        #expect(h.transport.sentNames == ["$notification.dismissed"])
    }

    @Test func theDeviceTokenIsRegisteredWithoutTheApp() async throws {
        let h = try Harness()
        await h.client.start()
        _ = await h.pushes.send(.deviceToken([0xAB, 0xCD, 0x01]))
        let put = try #require(h.transport.requests.first { $0.method == "PUT" })
        #expect(put.url.path == "/v1/subscribers/\(h.client.anonymousId)/devices/abcd01")
        #expect(try JSONValue.parse(put.body)["environment"] == "sandbox")
        #expect(put.headers["BuzzKit-Installation"] == "bk_inst_" + h.client.anonymousId)
    }

    @Test func offNothingIsInstalledAndTheAppForwardsByHand() async throws {
        let h = try Harness { $0.automaticPushHandling = false }
        await h.client.start()
        #expect(h.pushes.startCount == 0)
        #expect(await h.pushes.send(.received(.local(plan))) == nil)
        #expect(await h.pushes.send(.opened(tapped, actionIdentifier: nil, input: nil)) == nil)
        #expect(h.scheduler.ids.isEmpty)
        // What the app delegate does instead (seeds/local-notifications.md).
        let userInfo = try #require(JSONValue.parse(PushPayload.local(plan).encode()).anyValue as? [String: Any])
        #expect(await h.client.didReceiveRemoteNotification(userInfo: userInfo) == .newData)
        #expect(h.scheduler.ids == ["run_1:nudge"])
    }
}
