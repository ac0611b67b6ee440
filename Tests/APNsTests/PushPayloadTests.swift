import BuzzKitWire
import Foundation
import Testing

@Suite("Push payload bytes and parsing")
struct PushPayloadTests {
    private func text(_ content: MessageContent, _ messageId: String = "m1") -> String {
        PushPayload(content: content, messageId: messageId).jsonString
    }

    @Test(
        arguments: [
            // A plain alert: no mutable-content, no category.
            (
                MessageContent(title: "Hi", body: "There"),
                #"{"aps":{"alert":{"title":"Hi","body":"There"}},"bk":{"messageId":"m1"}}"#
            ),
            // Everything visible, custom data sorted, deep link and named action under bk.
            (
                MessageContent(
                    title: "T", subtitle: "S", body: "B", data: ["z": 1, "a": ["x": true]], deepLink: "gym://x",
                    action: PushAction(name: "show_offer", data: ["offerId": "o1"]), sound: "default", badge: 2,
                    threadId: "th", interruptionLevel: .timeSensitive),
                #"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B"},"badge":2,"sound":"default","thread-id":"th","interruption-level":"time-sensitive"},"bk":{"messageId":"m1","deepLink":"gym://x","action":{"name":"show_offer","data":{"offerId":"o1"}},"data":{"a":{"x":true},"z":1}}}"#
            ),
            // An image: mutable-content, no category.
            (
                MessageContent(body: "B", image: "https://cdn.example.com/a.png"),
                #"{"aps":{"alert":{"body":"B"},"mutable-content":1},"bk":{"messageId":"m1","image":"https://cdn.example.com/a.png"}}"#
            ),
            // Buttons with a given category: mutable-content, that category in aps and bk.
            (
                MessageContent(body: "B", actions: [PushButton(id: "ok", title: "OK")], category: "booking"),
                #"{"aps":{"alert":{"body":"B"},"category":"booking","mutable-content":1},"bk":{"messageId":"m1","actions":[{"id":"ok","title":"OK"}],"category":"booking"}}"#
            ),
            // Buttons without a category: the derived one.
            (
                MessageContent(
                    body: "B",
                    actions: [
                        PushButton(id: "confirm", title: "Confirm", foreground: true),
                        PushButton(id: "reply", title: "Reply", destructive: true, input: true, placeholder: "…")
                    ]),
                #"{"aps":{"alert":{"body":"B"},"category":"bk.85a9bf769057a865","mutable-content":1},"bk":{"messageId":"m1","actions":[{"id":"confirm","title":"Confirm","foreground":true},{"id":"reply","title":"Reply","destructive":true,"input":true,"placeholder":"…"}],"category":"bk.85a9bf769057a865"}}"#
            ),
            // A category but no buttons: the category alone, no mutable-content.
            (
                MessageContent(body: "B", category: "news"),
                #"{"aps":{"alert":{"body":"B"},"category":"news"},"bk":{"messageId":"m1","category":"news"}}"#
            ),
            // Silent: content-available, data only.
            (
                MessageContent(data: ["sync": true]),
                #"{"aps":{"content-available":1},"bk":{"messageId":"m1","data":{"sync":true}}}"#
            ),
            // Escapes in strings.
            (
                MessageContent(body: "line\n\"quoted\"\\ \u{01}"),
                #"{"aps":{"alert":{"body":"line\n\"quoted\"\\ \u0001"}},"bk":{"messageId":"m1"}}"#
            )
        ] as [(MessageContent, String)])
    func exactBytes(content: MessageContent, expected: String) throws {
        let payload = PushPayload(content: content, messageId: "m1")
        #expect(payload.jsonString == expected)
        // The bytes are valid JSON and parse back to the same payload.
        #expect(try PushPayload.parse(bytes: payload.encode()) == payload)
        #expect(try PushPayload.parse(JSONValue.parse(expected)) == payload)
    }

    @Test func derivedCategoryIsStableAndSensitiveToButtons() {
        let buttons = [
            PushButton(id: "confirm", title: "Confirm", foreground: true),
            PushButton(id: "reply", title: "Reply", destructive: true, input: true, placeholder: "…")
        ]
        let id = PushPayload.derivedCategory(for: buttons)
        #expect(id == PushPayload.derivedCategory(for: buttons))
        #expect(id.hasPrefix("bk.") && id.utf8.count == 19)
        var renamed = buttons
        renamed[0].title = "Yes"
        var flagged = buttons
        flagged[0].destructive = true
        let others = [
            PushPayload.derivedCategory(for: renamed), PushPayload.derivedCategory(for: flagged),
            PushPayload.derivedCategory(for: buttons.reversed()), PushPayload.derivedCategory(for: [buttons[0]])
        ]
        #expect(Set(others + [id]).count == 5)
    }

    @Test func localPlanAndCancelRoundTrip() throws {
        let plan = LocalPlan(
            id: "run-1:nudge", fireAt: .init(year: 2025, month: 3, day: 9, hour: 7, minute: 0),
            title: "Leg day", body: "6:00 with Maya.", data: ["w": 1], deepLink: "gym://workouts/legs",
            cancelOn: ["workout.completed"], messageId: "m9")
        let local = PushPayload.local(plan)
        #expect(
            local.jsonString
                == #"{"aps":{"content-available":1},"bk":{"messageId":"m9","local":{"id":"run-1:nudge","at":{"year":2025,"month":3,"day":9,"hour":7,"minute":0},"title":"Leg day","body":"6:00 with Maya.","data":{"w":1},"deepLink":"gym://workouts/legs","cancelOn":["workout.completed"],"messageId":"m9"}}}"#
        )
        #expect(local.isSilent)
        #expect(try PushPayload.parse(bytes: local.encode()) == local)
        var withSeconds = plan
        withSeconds.fireAt.second = 30
        withSeconds.messageId = nil
        let p = PushPayload.local(withSeconds)
        #expect(try PushPayload.parse(bytes: p.encode()) == p)

        let cancel = PushPayload.cancel(runId: "run-1")
        #expect(cancel.jsonString == #"{"aps":{"content-available":1},"bk":{"cancel":{"runId":"run-1"}}}"#)
        #expect(try PushPayload.parse(bytes: cancel.encode()) == cancel)
    }

    /// What a `local_plan` message stores: `jsonValue` is exactly the `bk.local` object, and reads
    /// back to the same plan (through the text a jsonb column gives back too).
    @Test func localPlanJSONIsBKLocal() throws {
        let plan = LocalPlan(
            id: "run-1:nudge", fireAt: .init(year: 2025, month: 3, day: 9, hour: 7, minute: 0, second: 5),
            title: "Leg day", data: ["w": 1, "n": ["x": true]], cancelOn: ["a", "b"], messageId: "m9")
        let bkLocal = try JSONValue.parse(PushPayload.local(plan).encode())["bk"]?["local"]
        #expect(plan.jsonValue == bkLocal)
        #expect(LocalPlan(json: try JSONValue.parse(Array(plan.jsonValue.jsonString.utf8))) == plan)
        #expect(LocalPlan(json: ["id": "x", "at": ["year": 2025, "month": 3, "day": 9, "hour": 7]]) == nil)
        #expect(LocalPlan(json: ["at": ["year": 2025, "month": 3, "day": 9, "hour": 7, "minute": 0]]) == nil)
        #expect(LocalPlan(json: "run-1") == nil)
    }

    @Test func parseIsLenientButNeedsBK() throws {
        #expect(throws: PushPayloadParseError.self) { try PushPayload.parse(["aps": ["alert": "x"]]) }
        #expect(throws: PushPayloadParseError.self) { try PushPayload.parse([1]) }
        let parsed = try PushPayload.parse([
            "aps": ["alert": "plain", "badge": "wrong", "mutable-content": 1],
            "bk": ["messageId": 7, "actions": [["id": "a"], ["id": "b", "title": "B"]], "data": ["k": "v"]],
            "other": "ignored"
        ])
        #expect(parsed.aps.alert == .init(body: "plain"))
        #expect(parsed.aps.badge == nil)
        #expect(parsed.aps.mutableContent)
        #expect(parsed.bk.messageId == nil)
        #expect(parsed.bk.actions == [PushButton(id: "b", title: "B")])
        #expect(parsed.bk.data == ["k": "v"])
    }

    @Test func parsesFoundationUserInfo() throws {
        let payload = PushPayload(
            content: MessageContent(
                title: "T", body: "B",
                data: [
                    "n": 3, "f": 1.5, "b": true, "s": "x",
                    "list": [1, "two", nil]
                ],
                actions: [PushButton(id: "a", title: "A", input: true)]),
            messageId: "m1")
        let object = try JSONSerialization.jsonObject(with: Data(payload.encode()))
        let userInfo = try #require(object as? [String: Any])
        var hashable: [AnyHashable: Any] = [:]
        for (key, value) in userInfo { hashable[key] = value }
        #expect(try PushPayload.parse(userInfo: hashable) == payload)
        // Native Swift values, as an app might build them.
        let native: [AnyHashable: Any] = [
            "aps": ["badge": 4, "content-available": 1] as [String: Any],
            "bk": ["data": ["ok": true, "n": 2, "d": 0.25] as [String: Any]] as [String: Any]
        ]
        let parsed = try PushPayload.parse(userInfo: native)
        #expect(parsed.aps.badge == 4)
        #expect(parsed.aps.contentAvailable)
        #expect(parsed.bk.data == ["ok": true, "n": 2, "d": 0.25])
    }

    @Test func encodingIsDeterministicAndFast() {
        let content = MessageContent(
            title: "T", body: "B", data: ["b": 1, "a": 2, "c": ["y": 1, "x": 2]],
            actions: [PushButton(id: "a", title: "A")])
        let first = PushPayload(content: content, messageId: "m").encode()
        for _ in 0..<100 { #expect(PushPayload(content: content, messageId: "m").encode() == first) }
    }
}
