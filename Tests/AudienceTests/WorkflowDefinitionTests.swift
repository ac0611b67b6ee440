import BuzzKitWire
import BuzzKitWorkflows
import Testing

/// Parses JSON text into a JSONValue (test input).
func json(_ text: String) -> JSONValue {
    do { return try JSONValue.parse(text) } catch { fatalError("bad test JSON: \(error) in \(text)") }
}

func parsedDefinition(_ text: String) -> WorkflowDefinition { definition(text) }

func definition(_ text: String) -> WorkflowDefinition {
    switch WorkflowDefinition.parse(json(text)) {
    case .success(let d): return d
    case .failure(let r): fatalError("test definition refused: \(r.issues)")
    }
}

/// The seed's local-notification example.
let seedLocalExample = """
    {
      "trigger": { "event": "workout.scheduled" },
      "cancelOn": [{ "event": "workout.completed" }],
      "steps": [
        { "name": "morning-of", "waitUntil": { "time": "07:00", "timezone": "subscriber" } },
        { "name": "nudge", "send": { "deliver": "local", "title": "Leg day", "body": "6:00 with Maya.", "deepLink": "gym://workouts/legs" } }
      ]
    }
    """

let fullExample = """
    {
      "trigger": { "event": "cart.checked_out", "where": "event.data.total > 40" },
      "cancelOn": [{ "event": "order.refunded", "where": "event.data.orderId == trigger.data.orderId" }],
      "enabled": false,
      "steps": [
        { "name": "pause", "wait": { "duration": "90m" } },
        { "name": "thanks", "send": { "title": "Thanks {{ subscriber.attributes.name }}", "body": "Order {{ trigger.data.orderId }}",
          "data": {"order": "{{ trigger.data.orderId }}"}, "policy": "ignore" } },
        { "name": "review", "waitFor": { "event": "review.written", "where": "event.data.orderId == trigger.data.orderId", "timeout": "7d" } },
        { "name": "check", "branch": {
            "if": { "any": [ { "matched": "review" }, { "opened": "thanks" }, "subscriber.attributes.plan == \\"pro\\"" ] },
            "then": [ { "name": "done", "exit": {} } ],
            "else": [
              { "name": "morning", "waitUntil": { "time": "09:30", "timezone": "Europe/Berlin" } },
              { "name": "remind", "send": { "body": "How was it?", "deepLink": "shop://orders/{{ trigger.data.orderId }}" } }
            ] } }
      ]
    }
    """

struct IssueCase: Sendable, CustomTestStringConvertible {
    var note: String
    var document: String
    /// (path, a piece of the message) every one of which must be reported.
    var expected: [(String, String)]
    var testDescription: String { note }
}

/// A one-step definition around `step` (JSON text of the step object).
func oneStep(_ step: String, more: String = "") -> String {
    #"{"trigger": {"event": "a"}, "steps": ["# + step + more + "]}"
}

let issueCases: [IssueCase] = [
    IssueCase(note: "not an object", document: "[]", expected: [("body", "JSON object")]),
    IssueCase(
        note: "missing trigger and steps", document: "{}", expected: [("trigger", "required"), ("steps", "required")]),
    IssueCase(
        note: "unknown top-level field",
        document: #"{"trigger": {"event": "a"}, "steps": [{"name": "x", "exit": {}}], "triggers": 1}"#,
        expected: [("triggers", "not a known field")]),
    IssueCase(
        note: "empty steps", document: #"{"trigger": {"event": "a"}, "steps": []}"#,
        expected: [("steps", "at least one")]),
    IssueCase(
        note: "unknown step kind", document: oneStep(#"{"name": "x", "sleep": {"duration": "1h"}}"#),
        expected: [("steps[0].sleep", "not a known step kind"), ("steps[0]", "needs one kind")]),
    IssueCase(
        note: "two kinds", document: oneStep(#"{"name": "x", "wait": {"duration": "1h"}, "exit": {}}"#),
        expected: [("steps[0]", "exactly one kind")]),
    IssueCase(note: "missing name", document: oneStep(#"{"exit": {}}"#), expected: [("steps[0].name", "required")]),
    IssueCase(
        note: "bad name", document: oneStep(#"{"name": "a b", "exit": {}}"#),
        expected: [("steps[0].name", "letters, digits")]),
    IssueCase(
        note: "duplicate names, also inside a branch",
        document: oneStep(
            #"{"name": "x", "wait": {"duration": "1h"}}"#,
            more: #", {"name": "b", "branch": {"if": "trigger.data.a == 1", "then": [{"name": "x", "exit": {}}]}}"#),
        expected: [("steps[1].branch.then[0].name", "also the name of steps[0]")]),
    IssueCase(
        note: "unknown field in a step body",
        document: oneStep(#"{"name": "x", "wait": {"duration": "1h", "jitter": "1m"}}"#),
        expected: [("steps[0].wait.jitter", "not a known field")]),
    IssueCase(
        note: "bad durations",
        document: oneStep(
            #"{"name": "x", "wait": {"duration": "30"}}"#,
            more:
                #", {"name": "y", "wait": {"duration": "366d"}}, {"name": "z", "waitFor": {"event": "e", "timeout": "1.5h"}}"#
        ),
        expected: [
            ("steps[0].wait.duration", "365 days"), ("steps[1].wait.duration", "365 days"),
            ("steps[2].waitFor.timeout", "s, m, h or d")
        ]),
    IssueCase(
        note: "bad time", document: oneStep(#"{"name": "x", "waitUntil": {"time": "24:00"}}"#),
        expected: [("steps[0].waitUntil.time", "HH:MM")]),
    IssueCase(
        note: "unknown zone",
        document: oneStep(#"{"name": "x", "waitUntil": {"time": "07:00", "timezone": "Mars/Olympus"}}"#),
        expected: [("steps[0].waitUntil.timezone", "IANA")]),
    IssueCase(
        note: "expression syntax error with line and column",
        document: oneStep(#"{"name": "x", "branch": {"if": "trigger.data.total >", "then": []}}"#),
        expected: [("steps[0].branch.if", "expected a value")]),
    IssueCase(
        note: "unknown root in a where",
        document: #"{"trigger": {"event": "a", "where": "total > 40"}, "steps": [{"name": "x", "exit": {}}]}"#,
        expected: [("trigger.where", "'total'")]),
    IssueCase(
        note: "steps not readable in a trigger where",
        document:
            #"{"trigger": {"event": "a", "where": "steps.x.outcome == \"y\""}, "steps": [{"name": "x", "exit": {}}]}"#,
        expected: [("trigger.where", "'steps'")]),
    IssueCase(
        note: "a path that is not a field",
        document: oneStep(#"{"name": "x", "branch": {"if": "subscriber.plan == \"pro\"", "then": []}}"#),
        expected: [("steps[0].branch.if", "subscriber.attributes")]),
    IssueCase(
        note: "a condition naming an unknown step",
        document: oneStep(#"{"name": "x", "branch": {"if": {"opened": "nudge"}, "then": []}}"#),
        expected: [("steps[0].branch.if.opened", "no step 'nudge'")]),
    IssueCase(
        note: "a condition naming a later step",
        document: oneStep(
            #"{"name": "x", "branch": {"if": {"opened": "later"}, "then": []}}"#,
            more: #", {"name": "later", "send": {"title": "Hi"}}"#),
        expected: [("steps[0].branch.if.opened", "comes later")]),
    IssueCase(
        note: "a condition naming a step inside its own arm",
        document: oneStep(
            #"{"name": "x", "branch": {"if": {"all": [{"delivered": "inner"}]}, "then": [{"name": "inner", "send": {"title": "Hi"}}]}}"#
        ),
        expected: [("steps[0].branch.if.all[0].delivered", "comes later")]),
    IssueCase(
        note: "a receipt condition on a step of the wrong kind",
        document: oneStep(
            #"{"name": "w", "wait": {"duration": "1h"}}"#,
            more:
                #", {"name": "x", "branch": {"if": {"not": {"opened": "w"}}, "then": []}}, {"name": "y", "branch": {"if": {"matched": "w"}, "then": []}}"#
        ),
        expected: [
            ("steps[1].branch.if.not.opened", "must name a send step"),
            ("steps[2].branch.if.matched", "must name a waitFor step")
        ]),
    IssueCase(
        note: "an expression naming a later step",
        document: oneStep(
            #"{"name": "x", "branch": {"if": "steps.y.outcome == \"matched\"", "then": []}}"#,
            more: #", {"name": "y", "waitFor": {"event": "e", "timeout": "1h"}}"#),
        expected: [("steps[0].branch.if", "comes later")]),
    IssueCase(
        note: "unknown condition form",
        document: oneStep(#"{"name": "x", "branch": {"if": {"clicked": "y"}, "then": []}}"#),
        expected: [("steps[0].branch.if.clicked", "not a known condition")]),
    IssueCase(
        note: "content over APNs's limits",
        document: oneStep(#"{"name": "x", "send": {"title": ""# + String(repeating: "x", count: 5000) + #""}}"#),
        expected: [("steps[0].send.payload", "4096")]),
    IssueCase(
        note: "content rules",
        document: oneStep(#"{"name": "x", "send": {"deepLink": "no-scheme", "badge": -1, "actions": [{"id": "a"}]}}"#),
        expected: [
            ("steps[0].send.deepLink", "scheme"), ("steps[0].send.badge", "negative"),
            ("steps[0].send.actions[0].title", "required")
        ]),
    IssueCase(
        note: "unknown fields in an action and a button",
        document: oneStep(
            #"{"name": "x", "send": {"title": "a", "action": {"name": "n", "args": {}}, "actions": [{"id": "a", "title": "A", "color": "red"}]}}"#
        ),
        expected: [
            ("steps[0].send.action.args", "not a known field"), ("steps[0].send.actions[0].color", "not a known field")
        ]),
    IssueCase(
        note: "nulls are refused, not taken as absent",
        document:
            #"{"trigger": {"event": "a", "where": null}, "cancelOn": null, "enabled": null, "steps": [{"name": null, "exit": {}}, {"name": "s", "send": {"title": null, "body": "b", "actions": [{"id": "a", "title": "A", "placeholder": null}]}}, {"name": "b", "branch": {"if": "trigger.data.a == 1", "then": [], "else": null}}]}"#,
        expected: [
            ("trigger.where", "must not be null"), ("cancelOn", "must not be null"), ("enabled", "must not be null"),
            ("steps[0].name", "required"), ("steps[1].send.title", "must not be null"),
            ("steps[1].send.actions[0].placeholder", "must not be null"), ("steps[2].branch.else", "must not be null")
        ]),
    IssueCase(
        note: "unknown send field", document: oneStep(#"{"name": "x", "send": {"title": "a", "to": "bob"}}"#),
        expected: [("steps[0].send.to", "not a known field")]),
    IssueCase(
        note: "bad deliver and policy",
        document: oneStep(#"{"name": "x", "send": {"title": "a", "deliver": "sms", "policy": "never"}}"#),
        expected: [("steps[0].send.deliver", "push"), ("steps[0].send.policy", "respect")]),
    IssueCase(
        note: "a template that does not parse",
        document: oneStep(
            #"{"name": "x", "send": {"title": "Hi {{ subscriber.attributes.name", "data": {"k": "{{ }}"}}}"#),
        expected: [("steps[0].send.title", "never closed"), ("steps[0].send.data.k", "empty placeholder")]),
    IssueCase(
        note: "a template reading what it cannot",
        document: oneStep(#"{"name": "x", "send": {"title": "{{ event.data.x }}"}}"#),
        expected: [("steps[0].send.title", "'event' is not available")]),
    IssueCase(
        note: "a local send not after a waitUntil",
        document: oneStep(
            #"{"name": "w", "wait": {"duration": "1h"}}"#,
            more: #", {"name": "x", "send": {"deliver": "local", "title": "a"}}"#),
        expected: [("steps[1].send.deliver", "directly after a waitUntil")]),
    IssueCase(
        note: "a local send first in a branch arm",
        document: oneStep(
            #"{"name": "w", "waitUntil": {"time": "07:00"}}"#,
            more:
                #", {"name": "b", "branch": {"if": "trigger.data.a == 1", "then": [{"name": "x", "send": {"deliver": "local", "title": "a"}}]}}"#
        ),
        expected: [("steps[1].branch.then[0].send.deliver", "directly after a waitUntil")]),
    IssueCase(
        note: "cancelOn problems",
        document:
            #"{"trigger": {"event": "a"}, "cancelOn": [{"where": "event.data.x == 1"}, {"event": "b", "where": "event.data.x =="}], "steps": [{"name": "x", "exit": {}}]}"#,
        expected: [("cancelOn[0].event", "required"), ("cancelOn[1].where", "expected")]),
    IssueCase(
        note: "exit with members", document: oneStep(#"{"name": "x", "exit": {"code": 1}}"#),
        expected: [("steps[0].exit.code", "not a known field")]),
    IssueCase(
        note: "branch without then", document: oneStep(#"{"name": "x", "branch": {"if": "trigger.data.a == 1"}}"#),
        expected: [("steps[0].branch.then", "required")])
]

@Suite("Workflow definitions: parsing, validation, canonical JSON")
struct WorkflowDefinitionTests {
    @Test func seedExampleParses() {
        let d = definition(seedLocalExample)
        #expect(d.trigger.event == "workout.scheduled")
        #expect(d.deviceCancelEvents == ["workout.completed"])
        #expect(d.steps.map(\.name) == ["morning-of", "nudge"])
        guard case .send(let send) = d.steps[1].kind else {
            Issue.record("not a send")
            return
        }
        #expect(send.deliver == .local && send.policy == .respect)
    }

    @Test func fullExampleParsesAndIndexes() {
        let d = definition(fullExample)
        #expect(d.enabled == false)
        #expect(d.index.names == ["pause", "thanks", "review", "check", "done", "morning", "remind"])
        #expect(d.index["remind"]?.path == "steps[3].branch.else[1]")
        #expect(d.index["thanks"]?.successor == "review")
        #expect(d.index["remind"]?.successor == nil)
        #expect(d.index.entry(of: "check", then: true) == "done")
        #expect(d.index.entry(of: "check", then: false) == "morning")
        #expect(d.reactsToEvents == ["order.refunded", "review.written"])
        #expect(d.deviceCancelEvents.isEmpty)
    }

    @Test func canonicalJSONRoundTripsAndIgnoresDefaultsAndEnabled() {
        let d = definition(fullExample)
        let again = definition(d.jsonValue.jsonString)
        #expect(again.canonicalJSON == d.canonicalJSON)
        #expect(again.steps == d.steps && again.trigger == d.trigger && again.cancelOn == d.cancelOn)
        // The same meaning written differently (defaults spelled out or left out, keys reordered, enabled toggled).
        let a = definition(
            #"{"trigger": {"event": "a"}, "steps": [{"name": "w", "waitUntil": {"time": "07:00"}}, {"name": "s", "send": {"title": "Hi"}}]}"#
        )
        let b = definition(
            #"{"enabled": true, "cancelOn": [], "steps": [{"waitUntil": {"timezone": "subscriber", "time": "07:00"}, "name": "w"}, {"name": "s", "send": {"policy": "respect", "deliver": "push", "title": "Hi"}}], "trigger": {"event": "a"}}"#
        )
        #expect(a.canonicalJSON == b.canonicalJSON)
        let c = definition(
            #"{"trigger": {"event": "a"}, "steps": [{"name": "w", "waitUntil": {"time": "07:01"}}, {"name": "s", "send": {"title": "Hi"}}]}"#
        )
        #expect(a.canonicalJSON != c.canonicalJSON)
        #expect(
            String(decoding: a.canonicalJSON, as: UTF8.self)
                == #"{"cancelOn":[],"steps":[{"name":"w","waitUntil":{"time":"07:00","timezone":"subscriber"}},{"name":"s","send":{"deliver":"push","policy":"respect","title":"Hi"}}],"trigger":{"event":"a"}}"#
        )
    }

    @Test(arguments: issueCases)
    func everyProblemWithItsPath(_ c: IssueCase) {
        guard case .failure(let rejection) = WorkflowDefinition.parse(json(c.document)) else {
            Issue.record("accepted: \(c.document)")
            return
        }
        for (path, fragment) in c.expected {
            #expect(
                rejection.issues.contains { $0.path == path && $0.message.contains(fragment) },
                "expected \(path) ~ \(fragment) in \(rejection.issues)")
        }
        #expect(rejection.apiError.code == .validationFailed)
    }

    @Test func expressionErrorsCarryLineAndColumn() {
        let text = oneStep(#"{"name": "x", "branch": {"if": "trigger.data.a == 1 and\n  total > 2", "then": []}}"#)
        guard case .failure(let r) = WorkflowDefinition.parse(json(text)) else {
            Issue.record("accepted")
            return
        }
        let issue = r.issues.first { $0.path == "steps[0].branch.if" }
        #expect(issue?.line == 2 && issue?.column == 3)
        #expect(issue?.jsonValue["line"] == 2)
    }

    @Test func templatesInURLsAreCheckedWhenRendered() {
        // A deepLink that is only a template cannot be checked at save time; a literal one is.
        _ = definition(oneStep(#"{"name": "x", "send": {"title": "a", "deepLink": "{{ trigger.data.url }}"}}"#))
    }

    @Test func manyProblemsAtOnce() {
        let text =
            #"{"trigger": {"event": ""}, "steps": [{"name": "a", "wait": {"duration": "0s"}}, {"name": "a", "waitUntil": {"time": "7:00", "timezone": "Nowhere"}}]}"#
        guard case .failure(let r) = WorkflowDefinition.parse(json(text)) else {
            Issue.record("accepted")
            return
        }
        #expect(
            Set(r.issues.map(\.path)) == [
                "trigger.event", "steps[1].name", "steps[0].wait.duration", "steps[1].waitUntil.time",
                "steps[1].waitUntil.timezone"
            ])
    }
}
