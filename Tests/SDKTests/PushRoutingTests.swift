import BuzzKit
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// Records the order in which app code ran.
final class CallLog: Sendable {
    private let calls = Mutex<[String]>([])
    func add(_ call: String) { calls.withLock { $0.append(call) } }
    var all: [String] { calls.withLock { $0 } }
}

@MainActor
final class TestDelegate: BuzzKitDelegate {
    let log: CallLog
    let takes: Bool
    init(log: CallLog, takes: Bool) {
        self.log = log
        self.takes = takes
    }
    func buzzKit(_ buzzKit: BuzzKit, openDeepLink url: URL) -> Bool {
        log.add("delegate.link \(url.absoluteString)")
        return takes
    }
    func buzzKit(_ buzzKit: BuzzKit, didOpen payload: PushPayload, actionIdentifier: String?) {
        log.add("delegate.didOpen \(actionIdentifier ?? "body")")
    }
}

@Suite("SDK: push payloads and routing")
struct PushRoutingTests {
    let payload = PushPayload(
        content: {
            var content = MessageContent()
            content.title = "Leg day"
            content.body = "6:00 with Maya."
            content.deepLink = "gym://workouts/legs"
            content.action = PushAction(name: "show_offer", data: ["offerId": "o_1", "nested": ["a": [1, 2]]])
            content.actions = [
                PushButton(id: "confirm", title: "Confirm"),
                PushButton(id: "reply", title: "Reply", input: true, placeholder: "Say something")
            ]
            content.image = "https://cdn.example.com/a.png"
            content.data = ["bookingId": 42, "tags": ["x", "y"], "price": 9.5, "none": nil]
            return content
        }(), messageId: "msg_1")

    @Test func aPayloadParsesFromUserInfoExactlyAsSent() throws {
        let userInfo = try #require(JSONValue.parse(payload.encode()).anyValue as? [String: Any])
        let parsed = try PushPayload.parse(userInfo: userInfo)
        #expect(parsed.bk.messageId == "msg_1")
        #expect(parsed.bk.deepLink == "gym://workouts/legs")
        #expect(parsed.bk.action == PushAction(name: "show_offer", data: ["offerId": "o_1", "nested": ["a": [1, 2]]]))
        #expect(parsed.bk.actions.count == 2)
        #expect(parsed.bk.image == "https://cdn.example.com/a.png")
        #expect(parsed.bk.data == ["bookingId": 42, "tags": ["x", "y"], "price": 9.5, "none": nil])
        #expect(parsed == payload)
    }

    @Test func theActionRunsFirstThenTheLinkThroughTheHandler() async throws {
        let h = try Harness()
        let log = CallLog()
        h.client.actions.register("show_offer") { action in
            guard case .string(let offer)? = action.data["offerId"] else { return }
            log.add("action \(action.name) \(offer)")
        }
        h.client.onDeepLink { url in log.add("handler \(url.absoluteString)") }
        await h.client.notificationOpened(payload, actionIdentifier: nil)
        #expect(log.all == ["action show_offer o_1", "handler gym://workouts/legs"])
        #expect(h.opener.urls.isEmpty)
        let events = h.transport.sentEvents
        #expect(
            events.compactMap { $0["name"]?.stringValue } == [
                "$notification.opened", "$action.triggered", "$deeplink.opened"
            ])
        #expect(events[0]["data"] == ["messageId": "msg_1", "deepLink": "gym://workouts/legs"])
        #expect(events[1]["data"] == ["name": "show_offer", "handled": true, "messageId": "msg_1"])
        #expect(events[2]["data"] == ["url": "gym://workouts/legs", "via": "handler", "messageId": "msg_1"])
    }

    /// (delegate present, delegate takes it, handler registered) -> via
    @Test(arguments: [
        (true, true, true, DeepLinkRoute.delegate),
        (true, false, true, DeepLinkRoute.handler),
        (true, false, false, DeepLinkRoute.system),
        (false, false, true, DeepLinkRoute.handler),
        (false, false, false, DeepLinkRoute.system)
    ])
    func linksGoDelegateThenHandlerThenSystem(delegate: Bool, takes: Bool, handler: Bool, via: DeepLinkRoute)
        async throws
    {
        let h = try Harness()
        let log = CallLog()
        if delegate { h.client.delegate = await TestDelegate(log: log, takes: takes) }
        if handler { h.client.onDeepLink { url in log.add("handler") } }
        var linkOnly = payload
        linkOnly.bk.action = nil
        await h.client.notificationOpened(linkOnly, actionIdentifier: nil)
        let routed = h.transport.sentEvents.first { $0["name"] == "$deeplink.opened" }
        #expect(routed?["data"]?["via"] == .string(via.rawValue))
        #expect(log.all.contains("handler") == (via == .handler))
        #expect(h.opener.urls == (via == .system ? [URL(string: "gym://workouts/legs")!] : []))
        if delegate { #expect(log.all.last == "delegate.didOpen body") }
    }

    @Test func anActionWithoutAHandlerIsTrackedAsNotHandledAndWarned() async throws {
        let h = try Harness()
        h.client.actions.register("other") { _ in }
        h.client.actions.register("show_offer") { _ in }
        h.client.actions.unregister("show_offer")
        await h.client.notificationOpened(payload, actionIdentifier: nil)
        let triggered = h.transport.sentEvents.first { $0["name"] == "$action.triggered" }
        #expect(triggered?["data"] == ["name": "show_offer", "handled": false, "messageId": "msg_1"])
        #expect(h.logs.contains(.warning, "no handler"))
    }

    @Test func aButtonAndItsTextGoToOpenedNotToTheDelegate() async throws {
        let h = try Harness()
        let log = CallLog()
        h.client.delegate = await TestDelegate(log: log, takes: true)
        await h.client.notificationOpened(payload, actionIdentifier: "reply", input: "See you there")
        let opened = h.transport.sentEvents.first { $0["name"] == "$notification.opened" }
        #expect(
            opened?["data"] == [
                "messageId": "msg_1", "action": "reply", "input": "See you there",
                "deepLink": "gym://workouts/legs"
            ])
        #expect(log.all.last == "delegate.didOpen reply")
    }

    @Test func aLinkThatIsNotAURLIsNotRouted() async throws {
        let h = try Harness()
        var bad = payload
        bad.bk.action = nil
        bad.bk.deepLink = "not a url"
        await h.client.notificationOpened(bad, actionIdentifier: nil)
        #expect(h.transport.sentNames == ["$notification.opened"])
        #expect(h.opener.urls.isEmpty)
    }
}
