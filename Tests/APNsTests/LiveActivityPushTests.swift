import BuzzKitAPNs
import BuzzKitWire
import Testing

/// The Live Activity push as APNs receives it: push type, topic and the `aps` members per event.
@Suite("APNs: Live Activity pushes")
struct LiveActivityPushTests {
    @Test func startCarriesTheAttributesAndAsksForTheNewToken() throws {
        let push = LiveActivityPush(
            event: .start, timestamp: 1_800_000_000, contentState: ["score": 0],
            alert: .init(title: "Kick-off", body: "Now", sound: "default"),
            attributesType: "MatchAttributes", attributes: ["matchId": "m_1"])
        let request = push.request(deviceToken: "ab", bundleId: "com.example.app", apnsId: "id-1")
        #expect(request.pushType == .liveactivity && request.topic == "com.example.app.push-type.liveactivity")
        #expect(request.priority == 10 && request.apnsId == "id-1")
        let headers = request.headers(authorization: nil)
        #expect(
            headers["apns-push-type"] == "liveactivity"
                && headers["apns-topic"] == "com.example.app.push-type.liveactivity")
        #expect(
            try JSONValue.parse(request.payload) == [
                "aps": [
                    "timestamp": 1_800_000_000, "event": "start", "content-state": ["score": 0],
                    "attributes-type": "MatchAttributes",
                    "attributes": ["matchId": "m_1"], "input-push-token": 1,
                    "alert": ["title": "Kick-off", "body": "Now", "sound": "default"]
                ]
            ])
    }

    @Test(arguments: [LiveActivityPush.Event.update, .end])
    func updateAndEndCarryNoStartMembers(_ event: LiveActivityPush.Event) throws {
        let push = LiveActivityPush(
            event: event, timestamp: 5, contentState: ["n": 1], staleDate: 10, dismissalDate: 20,
            attributesType: "Ignored", attributes: ["x": 1], priority: 5)
        let aps = try JSONValue.parse(push.encode())["aps"]
        #expect(
            aps == [
                "timestamp": 5, "event": .string(event.rawValue), "content-state": ["n": 1], "stale-date": 10,
                "dismissal-date": 20
            ])
        #expect(push.request(deviceToken: "ab", bundleId: "b.c").priority == 5)
    }
}
