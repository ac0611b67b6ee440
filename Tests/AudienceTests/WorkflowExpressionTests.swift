import BuzzKitAudience
import BuzzKitWire
import BuzzKitWorkflows
import Testing

/// The audience language in the document context (workflow conditions), evaluated in memory.
@Suite("Workflow conditions in the expression language")
struct WorkflowExpressionTests {
    static let roots: Set<String> = ["event", "trigger", "subscriber", "steps"]
    static let document: JSONValue = [
        "event": ["name": "workout.completed", "data": ["workoutId": "w1", "minutes": 30, "ok": true, "score": 2.5]],
        "trigger": [
            "name": "workout.scheduled",
            "data": ["workoutId": "w1", "minutes": 45, "ok": true, "score": 2.5, "label": "legs"]
        ],
        "subscriber": ["id": "alice", "attributes": ["plan": "pro", "age": 30], "timezone": "Europe/Berlin"],
        "steps": ["r": ["outcome": "matched"]]
    ]

    @Test(arguments: [
        ("event.data.workoutId == trigger.data.workoutId", true),
        ("event.data.workoutId != trigger.data.workoutId", false),
        ("event.data.minutes < trigger.data.minutes", true),
        ("event.data.minutes >= trigger.data.minutes", false),
        ("event.data.ok == trigger.data.ok", true),
        ("event.data.ok < trigger.data.ok", false),  // booleans compare only with == and !=
        ("event.data.score == trigger.data.score", true),
        ("event.data.minutes == trigger.data.label", false),  // different types: false
        ("event.data.missing == trigger.data.missing", false),  // missing: false
        ("subscriber.attributes.plan == \"pro\" and subscriber.timezone == \"Europe/Berlin\"", true),
        ("subscriber.attributes.age > 18", true),
        ("steps.r.outcome == \"matched\"", true),
        ("exists(trigger.data.label) and not exists(event.data.label)", true),
        ("trigger.data.label in [\"legs\", \"arms\"]", true),
        ("trigger.data.label startsWith \"le\"", true),
        ("event.name == \"workout.completed\"", true)
    ])
    func evaluates(_ text: String, _ expected: Bool) throws {
        let expression = try AudienceExpression.parse(text, context: .document(roots: Self.roots))
        #expect(expression.matches(document: Self.document) == expected)
    }

    @Test(arguments: [
        ("total > 40", 1, 1, "unknown name 'total'"),
        ("event.data.x == 1 and\n  nope.x == 2", 2, 3, "unknown name 'nope'"),
        ("in_topic(\"x\")", 1, 1, "not available"),
        ("event.data.x == ", 1, 17, "expected a value"),
        ("event.data.x < event.data.x", 1, 16, "compared with itself")
    ])
    func refuses(_ text: String, _ line: Int, _ column: Int, _ fragment: String) {
        do {
            _ = try AudienceExpression.parse(text, context: .document(roots: Self.roots))
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.line == line && error.column == column && error.message.contains(fragment), "\(error)")
        }
    }

    @Test func pathComparisonsStayOutOfAudiences() {
        // The subscriber context keeps its grammar: a bare name on the right is still a syntax error.
        #expect(throws: AudienceError.self) { try AudienceExpression.parse("plan == tier") }
    }

    @Test func templates() {
        let template = try? WorkflowTemplate.parse(
            "Hi {{subscriber.attributes.plan}}, {{ trigger.data.minutes }} min {{ trigger.data.none }}."
        ).get()
        var missing: [String] = []
        #expect(template?.render(Self.document, missing: &missing) == "Hi pro, 45 min .")
        #expect(missing == ["trigger.data.none"])
        if case .failure(let e) = WorkflowTemplate.parse("ok {{ trigger.data.x ") {
            #expect(e.column == 4)
        } else {
            Issue.record("accepted")
        }
        if case .success = WorkflowTemplate.parse("{{ trigger.data.x }} {{ steps.a.outcome }}") {
            Issue.record("accepted steps")
        }
        #expect((try? WorkflowTemplate.parse("no placeholders").get())?.parts == [.text("no placeholders")])
    }
}
