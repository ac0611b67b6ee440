import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// What the device receives parses into the `PushPayload` the SDK routes: sent through
/// `POST /v1/messages`, delivered by apns-sender, read back from the simulator as a device would
/// get it (`userInfo`), parsed with the same wire type the SDK uses.
@Suite("payload round trip to the SDK", .serialized, .requiresTestStack)
struct PayloadRoundTripTests {
    @Test func aSentMessageParsesIntoTheSDKsPushPayload() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            let token = PushStack.token()
            try await stack.addSubscriber("lin", tokens: [token])
            let data: JSONValue = ["bookingId": 7, "slots": ["09:00", "10:00"], "vip": true, "note": nil]
            let id = try await stack.send([
                "to": "lin", "title": "Class tomorrow", "subtitle": "Spin", "body": "Keep your spot?",
                "data": data, "deepLink": "gym://bookings/7",
                "action": ["name": "show_offer", "data": ["offerId": "o1"]],
                "actions": [
                    ["id": "confirm", "title": "Confirm", "foreground": true],
                    ["id": "reply", "title": "Reply", "input": true, "placeholder": "Message"]
                ],
                "image": "https://example.com/spin.jpg", "badge": 3, "threadId": "bookings"
            ])
            _ = try await stack.waitSettled(id)
            let pushes = try await stack.simulator.pushes(token: token)
            try #require(pushes.count == 1)
            let text = try #require(pushes[0]["payload"]?.stringValue)

            // As iOS hands it to the app: a Foundation dictionary.
            let userInfo = try #require(JSONValue.parse(Array(text.utf8)).anyValue as? [String: Any])
            let payload = try PushPayload.parse(
                userInfo: Dictionary(uniqueKeysWithValues: userInfo.map { (AnyHashable($0.key), $0.value) }))
            #expect(payload.bk.messageId == id)
            #expect(payload.bk.deepLink == "gym://bookings/7")
            #expect(payload.bk.action?.name == "show_offer")
            #expect(payload.bk.action?.data["offerId"] == "o1")
            #expect(payload.bk.actions.map(\.id) == ["confirm", "reply"])
            #expect(payload.bk.actions.last?.input == true)
            #expect(payload.bk.actions.last?.placeholder == "Message")
            #expect(payload.bk.image == "https://example.com/spin.jpg")
            #expect(payload.bk.data == data.objectValue)
            #expect(payload.aps.mutableContent)
            #expect(payload.aps.alert?.title == "Class tomorrow")
            #expect(payload.aps.badge == 3)
            // A category derived from the buttons, the same the SDK's extension registers.
            #expect(payload.aps.category == PushPayload.derivedCategory(for: payload.bk.actions))
        }
    }
}
