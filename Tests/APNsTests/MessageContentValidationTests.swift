import BuzzKitWire
import Foundation
import Testing

@Suite("MessageContent validation")
struct MessageContentValidationTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    private func issues(_ body: JSONValue) -> [String] {
        switch MessageContent.validate(body, now: Self.now) {
        case .success: return []
        case .failure(let rejection): return rejection.issues.map(\.description)
        }
    }

    @Test func fullMessageIsRead() throws {
        let body: JSONValue = [
            "to": "user-1", "title": "Leg day", "subtitle": "Today", "body": "6:00 with Maya.",
            "data": ["orderId": 42, "nested": ["a": [1, 2.5, "x", nil, true]]],
            "deepLink": "gym://workouts/legs", "action": ["name": "show_offer", "data": ["offerId": "o1"]],
            "actions": [
                ["id": "confirm", "title": "Confirm", "foreground": true],
                ["id": "reply", "title": "Reply", "input": true, "placeholder": "Say something"],
                ["id": "skip", "title": "Skip", "destructive": true]
            ],
            "category": nil, "image": "https://cdn.example.com/a.png", "sound": "default", "badge": 3,
            "threadId": "workouts", "interruptionLevel": "time-sensitive", "priority": 5,
            "expiresAt": "2023-11-15T00:00:00.750+01:00", "collapseId": "legs"
        ]
        let content = try MessageContent.validate(body, now: Self.now).get()
        #expect(content.title == "Leg day")
        #expect(content.data == ["orderId": 42, "nested": ["a": [1, 2.5, "x", nil, true]]])
        #expect(content.action == PushAction(name: "show_offer", data: ["offerId": "o1"]))
        #expect(
            content.actions == [
                PushButton(id: "confirm", title: "Confirm", foreground: true),
                PushButton(id: "reply", title: "Reply", input: true, placeholder: "Say something"),
                PushButton(id: "skip", title: "Skip", destructive: true)
            ])
        #expect(content.category == nil)
        #expect(content.badge == 3)
        #expect(content.interruptionLevel == .timeSensitive)
        #expect(content.priority == .normal)
        #expect(content.expiresAt == Date(timeIntervalSince1970: 1_700_002_800))  // 23:00Z, whole seconds
        #expect(!content.isSilent)
    }

    @Test(
        arguments: [
            (["title": 5] as JSONValue, ["title: must be a string"]),
            (["title": ""], ["title: must not be empty"]),
            (["body": "b", "data": [1, 2]], ["data: must be a JSON object"]),
            (
                ["body": "b", "deepLink": "not a url"],
                ["deepLink: must be a URL with a scheme, such as myapp://orders/42"]
            ),
            (["body": "b", "image": "ftp://x/y.png"], ["image: must be an http or https URL"]),
            (["body": "b", "badge": -1], ["badge: must not be negative"]),
            (["body": "b", "badge": 1.5], ["badge: must be an integer"]),
            (["body": "b", "priority": "urgent"], ["priority: must be \"high\", \"normal\", 10 or 5"]),
            (["body": "b", "priority": 1], ["priority: must be \"high\", \"normal\", 10 or 5"]),
            (
                ["body": "b", "interruptionLevel": "loud"],
                ["interruptionLevel: must be one of passive, active, time-sensitive, critical"]
            ),
            (
                ["body": "b", "expiresAt": "tomorrow"],
                ["expiresAt: must be an ISO 8601 date-time with an offset, such as 2025-01-31T18:00:00Z"]
            ),
            (["body": "b", "expiresAt": "2020-01-01T00:00:00Z"], ["expiresAt: is in the past"]),
            (
                ["body": "b", "collapseId": .string(String(repeating: "c", count: 65))],
                ["collapseId: must be at most 64 bytes, it is 65"]
            ),
            (["body": "b", "action": ["data": [:]]], ["action.name: is required and must be a string"]),
            (
                ["body": "b", "action": ["name": "", "data": 3]],
                ["action.data: must be a JSON object", "action.name: must not be empty"]
            ),
            ([:], ["body: the message is empty: give a title, body, sound, badge or data"]),
            (
                ["data": ["k": 1], "priority": "high"],
                ["priority: a silent push (no title, subtitle, body, sound or badge) must have priority normal"]
            ),
            (
                ["data": ["k": 1], "actions": [["id": "a", "title": "A"]], "image": "https://x/y.png"],
                [
                    "actions: buttons need a title or body to show on",
                    "image: an image needs a title or body to show with"
                ]
            ),
            (
                [
                    "body": "b",
                    "actions": [
                        ["id": "a", "title": "A"], ["id": "a", "title": ""], ["title": "C", "placeholder": "p"], "x"
                    ]
                ],
                [
                    "actions[1].id: a is also the id of actions[0]", "actions[1].title: must not be empty",
                    "actions[2].id: is required", "actions[3]: must be an object {id, title, ...}"
                ]
            ),
            (
                ["body": "b", "actions": [["id": "a", "title": "A", "placeholder": "p"]]],
                ["actions[0].placeholder: needs input: true"]
            ),
            (
                [
                    "body": "b",
                    "actions": [
                        ["id": "1", "title": "1"], ["id": "2", "title": "2"], ["id": "3", "title": "3"],
                        ["id": "4", "title": "4"], ["id": "5", "title": "5"]
                    ]
                ], ["actions: at most 4 buttons, got 5"]
            ),
            (
                ["body": "b", "actions": [["id": "1", "title": "1", "input": "yes"]]],
                ["actions[0].input: must be true or false"]
            )
        ] as [(JSONValue, [String])])
    func rejects(body: JSONValue, expected: [String]) {
        #expect(issues(body) == expected)
    }

    @Test func everyProblemIsCollectedAtOnce() {
        let found = issues([
            "title": 1, "badge": "x", "priority": "p", "collapseId": .string(String(repeating: "c", count: 70)),
            "body": "ok"
        ])
        #expect(
            found == [
                "title: must be a string", "badge: must be an integer",
                "priority: must be \"high\", \"normal\", 10 or 5",
                "collapseId: must be at most 64 bytes, it is 70"
            ])
    }

    @Test func notAnObject() {
        #expect(issues([1]) == ["body: the message must be a JSON object"])
    }

    @Test func oversizedPayloadNamesItsSize() {
        let fits = String(repeating: "a", count: 3900)
        #expect(issues(["body": .string(fits)]) == [])
        let body = String(repeating: "a", count: 4100)
        let found = issues(["body": .string(body)])
        let expectedSize = PushPayload(content: MessageContent(body: body), messageId: PushPayload.sizeCheckMessageId)
            .encode().count
        #expect(found == ["payload: the push payload would be \(expectedSize) bytes; APNs accepts at most 4096"])
        #expect(expectedSize > 4096)
    }

    @Test func rejectionBecomesValidationFailed() throws {
        guard case .failure(let rejection) = MessageContent.validate(["title": ""], now: Self.now) else {
            Issue.record("expected a rejection")
            return
        }
        let error = rejection.apiError
        #expect(error.code == .validationFailed)
        #expect(error.details == ["issues": [["path": "title", "message": "must not be empty"]]])
    }

    @Test func silentAndPriorityDefaults() {
        #expect(MessageContent(data: ["k": 1]).isSilent)
        #expect(MessageContent(data: ["k": 1]).effectivePriority == .normal)
        #expect(MessageContent(badge: 1).isSilent == false)
        #expect(MessageContent(title: "t").effectivePriority == .high)
        #expect(MessageContent(title: "t", priority: .normal).effectivePriority == .normal)
    }
}
