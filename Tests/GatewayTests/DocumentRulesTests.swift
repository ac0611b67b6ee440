import BuzzKitContracts
import BuzzKitIntake
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import Testing

@testable import GatewayApp

/// The rules across members the document states as JSON Schema (targets, what a silent push may
/// be, what needs a title or body, Live Activity events, a definition's shape) against the
/// gateway's own validators: each body below is judged by Python's `jsonschema` (a validator no one
/// here wrote) against the served document's schema and by the code that answers the request, and
/// the two must agree, either way. A rule changed on one side only fails here with its body.
/// Formats are annotations for the validator (as JSON Schema says), so bodies break no format.
@Suite("Document rules agree with the validators", .requiresTestStack)
struct DocumentRulesTests {
    struct Case {
        var schema: String
        var body: JSONValue
        var note: String
    }

    static let visible: JSONValue = "x"

    static let messages: [(JSONValue, String)] = [
        (["to": "a", "title": "x"], "a target and a title"),
        (["title": "x"], "no target"),
        (["to": "a", "topic": "t", "title": "x"], "two targets"),
        (["to": nil, "topic": "t", "title": "x"], "a null target counts as absent"),
        (["to": ["a", "b"], "title": "x"], "a list of subscribers"),
        (["to": [], "title": "x"], "an empty list"),
        (["where": #"plan == "pro""#, "body": "x"], "an expression"),
        (["to": "a"], "nothing to show or carry"),
        (["to": "a", "data": [:]], "silent with empty data"),
        (["to": "a", "data": ["k": 1]], "silent with data"),
        (["to": "a", "data": ["k": 1], "priority": "high"], "silent at high priority"),
        (["to": "a", "data": ["k": 1], "priority": 10], "silent at 10"),
        (["to": "a", "data": ["k": 1], "priority": 5], "silent at 5"),
        (["to": "a", "deepLink": "myapp://orders/1"], "silent with a deep link"),
        (["to": "a", "action": ["name": "open"]], "silent with an action"),
        (["to": "a", "sound": "default"], "a sound alone"),
        (["to": "a", "sound": "default", "image": "https://x.example/a.png"], "an image with no title or body"),
        (["to": "a", "body": "x", "image": "https://x.example/a.png"], "an image with a body"),
        (["to": "a", "badge": 1, "interruptionLevel": "active"], "a level with no title or body"),
        (["to": "a", "title": "x", "actions": [["id": "b", "title": "B"]]], "a button with a title"),
        (["to": "a", "sound": "s", "actions": [["id": "b", "title": "B"]]], "a button with no title or body"),
        (["to": "a", "sound": "s", "actions": []], "no buttons"),
        (
            ["to": "a", "title": "x", "actions": [["id": "b", "title": "B", "placeholder": "p"]]],
            "a placeholder without input"
        ),
        (
            ["to": "a", "title": "x", "actions": [["id": "b", "title": "B", "placeholder": "p", "input": true]]],
            "a placeholder with input"
        ),
        (["to": "a", "title": ""], "an empty title"),
        (["to": "a", "title": "a\u{0}b"], "U+0000 in a string"),
        (["to": "a", "title": "x", "data": ["k\u{0}": 1]], "U+0000 in a key of data"),
        (["to": "a", "title": "x", "data": ["k": ["deep": "\u{0}"]]], "U+0000 deep in data"),
        (["to": "a", "title": "x", "unknown": 1], "an unknown member"),
        (["to": "a", "title": "x", "badge": -1], "a negative badge")
    ]

    static let previews: [(JSONValue, String)] = [
        (["title": "x"], "no target"),
        (["to": "a", "topic": "t", "title": "x"], "two targets"),
        ([:], "nothing at all")
    ]

    static let liveActivities: [(JSONValue, String)] = [
        (["to": "a", "event": "update", "activityId": "x", "contentState": [:]], "an update"),
        (
            ["to": "a", "event": "update", "activityId": "x", "attributesType": "T", "contentState": [:]],
            "an update with attributesType"
        ),
        (["to": "a", "event": "update", "contentState": [:]], "an update without activityId"),
        (
            ["to": "a", "event": "start", "attributesType": "T", "alert": ["title": "x"], "contentState": [:]],
            "a start"
        ),
        (["to": "a", "event": "start", "attributesType": "T", "contentState": [:]], "a start without alert"),
        (
            [
                "to": "a", "event": "start", "attributesType": "T", "alert": ["title": "x"], "activityId": "x",
                "contentState": [:]
            ], "a start with activityId"
        ),
        (
            [
                "to": "a", "event": "start", "attributesType": "T", "alert": ["title": "x"], "activityId": nil,
                "contentState": [:]
            ], "a start with a null activityId"
        ),
        (
            ["to": "a", "event": "end", "activityId": "x", "attributes": ["a": 1], "contentState": [:]],
            "an end with attributes"
        ),
        (
            ["to": "a", "event": "end", "activityId": "x", "attributes": nil, "contentState": [:]],
            "an end with null attributes"
        )
    ]

    static func definition(_ steps: JSONValue) -> JSONValue { ["trigger": ["event": "e"], "steps": steps] }

    static let definitions: [(JSONValue, String)] = [
        (definition([["name": "s", "send": ["title": "x"]]]), "a send"),
        ([:], "nothing"),
        (["trigger": ["event": "e"]], "no steps"),
        (definition([]), "an empty step list"),
        (definition([["name": "w", "wait": ["duration": "1h"], "exit": [:]]]), "two kinds"),
        (definition([["name": "w"]]), "no kind"),
        (definition([["name": "w", "wait": nil]]), "a null kind"),
        (definition([["name": "w", "wait": ["duration": "365d"]]]), "365 days"),
        (definition([["name": "w", "wait": ["duration": "366d"]]]), "366 days"),
        (definition([["name": "w", "wait": ["duration": "05m"]]]), "a leading zero"),
        (definition([["name": "u", "waitUntil": ["time": "19:00", "timezone": "subscriber"]]]), "subscriber's zone"),
        (definition([["name": "u", "waitUntil": ["time": "24:00"]]]), "24:00"),
        (definition([["name": "s", "send": [:]]]), "a send with nothing"),
        (definition([["name": "s", "send": ["data": ["a": 1]]]]), "a silent send"),
        (definition([["name": "s", "send": ["sound": "s", "image": "https://x.example/y.png"]]]), "an image alone"),
        (definition([["name": "s", "send": ["title": "x", "image": "{{ trigger.data.img }}"]]]), "a templated image"),
        (definition([["name": "s", "send": ["title": "x", "image": "nope"]]]), "an image that is no URL"),
        (definition([["name": "s", "send": ["deepLink": "{{ trigger.data.link }}"]]]), "a templated deep link"),
        (definition([["name": "s", "send": ["title": "x", "deliver": "later"]]]), "an unknown delivery"),
        (definition([["name": "s", "send": ["title": nil]]]), "a null member"),
        (definition([["name": "x", "exit": ["a": 1]]]), "an exit with a member"),
        (
            definition([
                ["name": "s", "send": ["title": "x"]],
                ["name": "b", "branch": ["if": ["opened": "s"], "then": [["name": "d", "exit": [:]]]]]
            ]), "a branch on an earlier send"
        ),
        (
            definition([
                ["name": "s", "send": ["title": "x"]],
                ["name": "b", "branch": ["if": ["opened": "s", "matched": "s"], "then": []]]
            ]), "a condition with two forms"
        ),
        (definition([["name": "b", "branch": ["if": ["all": []], "then": []]]]), "an empty all")
    ]

    static func events(_ identity: [String: JSONValue]) -> JSONValue {
        var body = identity
        body["events"] = [["id": "e1", "name": "app.opened", "timestamp": .string(EventTimestamp.format(Date()))]]
        return .object(body)
    }

    static let batches: [(JSONValue, String)] = [
        (events(["subscriberId": "a"]), "a subscriber"),
        (events(["anonymousId": "a"]), "an anonymous id"),
        (events([:]), "no identity"),
        (events(["subscriberId": "a", "anonymousId": "b"]), "both identities"),
        (events(["subscriberId": nil, "anonymousId": "b"]), "a null subscriber id")
    ]

    /// What the gateway answers the body: valid or not.
    static func gatewayAccepts(_ schema: String, _ body: JSONValue) -> Bool {
        if JSONText.containsNUL(body.jsonBytes) { return false }
        switch schema {
        case "SendMessageRequest":
            return (try? MessageIntake.validate(body)) != nil
        case "PreviewMessageRequest":
            var checked = body
            if case .object(var object) = body,
                !MessageIntake.targetMembers.contains(where: { object[$0].map { !$0.isNull } ?? false })
            {
                object["to"] = "preview"
                checked = .object(object)
            }
            return (try? MessageIntake.validate(checked)) != nil
        case "LiveActivitySendRequest":
            return (try? LiveActivitySendRoutes.validate(body, now: Date())) != nil
        case "WorkflowDefinition":
            if case .success = WorkflowDefinition.parse(body) { return true }
            return false
        case "EventBatch":
            if case .success = EventBatch.validate(body) { return true }
            return false
        default:
            return false
        }
    }

    @Test func theSchemaAndTheValidatorJudgeEveryBodyAlike() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        var cases: [Case] = []
        for (body, note) in Self.messages { cases.append(Case(schema: "SendMessageRequest", body: body, note: note)) }
        for (body, note) in Self.previews {
            cases.append(Case(schema: "PreviewMessageRequest", body: body, note: note))
        }
        for (body, note) in Self.liveActivities {
            cases.append(Case(schema: "LiveActivitySendRequest", body: body, note: note))
        }
        for (body, note) in Self.definitions {
            cases.append(Case(schema: "WorkflowDefinition", body: body, note: note))
        }
        for (body, note) in Self.batches { cases.append(Case(schema: "EventBatch", body: body, note: note)) }
        let request: JSONValue = [
            "document": OpenAPIDocument.build(routes: GatewayRoute.table),
            "cases": .array(cases.map { ["schema": .string($0.schema), "body": $0.body] })
        ]
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("rules"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("request.json").path
        try Data(request.jsonBytes).write(to: URL(fileURLWithPath: input))
        let outputPath = folder.appendingPathComponent("verdicts.json").path
        let script = TestEnvironment.repositoryRoot + "/Tests/Fixtures/openapi/validate_bodies.py"
        let status = try await Subprocess.run(
            ["/bin/sh", "-c", "\"$0\" \"$1\" < \"$2\"", python, script, input], outputPath: outputPath)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        try #require(status == 0, "the validator failed: \(output)")
        let verdicts = try #require(try JSONValue.parse(Array(output.utf8)).arrayValue, "\(output)")
        try #require(verdicts.count == cases.count)
        for (index, item) in cases.enumerated() {
            let schemaSays = verdicts[index].boolValue
            let gatewaySays = Self.gatewayAccepts(item.schema, item.body)
            #expect(
                schemaSays == gatewaySays,
                "\(item.schema), \(item.note): the document says \(schemaSays == true ? "valid" : "invalid"), the gateway \(gatewaySays ? "accepts" : "refuses") \(item.body)"
            )
        }
        // Both verdicts occur for every schema (the cases test something).
        for schema in Set(cases.map(\.schema)) {
            let judged = cases.indices.filter { cases[$0].schema == schema }.map { verdicts[$0].boolValue }
            #expect(judged.contains(true) && judged.contains(false), "\(schema): \(judged)")
        }
    }
}
