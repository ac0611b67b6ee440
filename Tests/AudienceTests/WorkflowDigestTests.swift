import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import Testing

/// Issue 28's two steps in the pure engine: a digest's window, its close and what the templates
/// and branches read after it; a throttle's question and both answers; their definitions' rules
/// with the JSON path of every problem; the dry run with a list of trigger events. No I/O.
@Suite("Workflow engine: digest and throttle")
struct WorkflowDigestTests {
    static let liked = #"""
        {"trigger": {"event": "photo.liked"},
         "steps": [{"name": "collect", "digest": {"window": "10m", "key": "{{ trigger.data.postId }}", "list": "data.actor"}},
                   {"name": "many", "branch": {"if": "digest.count > 1",
                      "then": [{"name": "digest-push", "send": {"title": "{{ digest.list }} liked your photo",
                                 "body": "{{ digest.count }} likes, first {{ digest.first.data.actor }}, last {{ digest.last.data.actor }}",
                                 "policy": "ignore"}}],
                      "else": [{"name": "single-push", "send": {"title": "{{ digest.first.data.actor }} liked your photo",
                                 "policy": "ignore"}}]}}]}
        """#

    static func like(_ n: Int, _ actor: String?, post: String = "p1", at time: String = "2024-06-01T10:00:00Z")
        -> WorkflowEvent
    {
        var data: [String: JSONValue] = ["postId": .string(post)]
        if let actor { data["actor"] = .string(actor) }
        return WorkflowEvent(id: "like-\(n)", name: "photo.liked", data: .object(data), occurredAt: utc(time))
    }

    /// A run of `liked` whose window collected `actors` (the first is the trigger).
    static func collected(_ actors: [String?]) -> RunDriver {
        var run = RunDriver(liked, trigger: like(0, actors[0]), at: "2024-06-01T10:00:00Z")
        var collector = WorkflowDigestCollector(list: WorkflowDataPath("data.actor"))
        for (i, actor) in actors.enumerated() { collector.add(like(i, actor)) }
        run.fire()
        #expect(run.actions == [.collectDigest(WorkflowDigestCollect(step: "collect", key: "p1")), .clearTimer])
        #expect(run.state.digest?.collecting == true && run.state.timer == nil)
        run.apply(.digestCollected(collector.summary!), at: "2024-06-01T10:10:00.5Z")
        return run
    }

    @Test func theFirstEventOpensAWindowOfItsKey() {
        let run = RunDriver(Self.liked, trigger: Self.like(0, "Ana", post: "p7"), at: "2024-06-01T10:00:00Z")
        #expect(run.state.current == "collect" && run.state.status == .running)
        #expect(
            run.state.digest
                == WorkflowDigestState(step: "collect", key: "p7", closesAt: utc("2024-06-01T10:10:00Z")))
        #expect(
            run.actions == [.scheduleTimer(WorkflowTimer(step: "collect", .window, dueAt: utc("2024-06-01T10:10:00Z")))]
        )
        #expect(
            run.state.outcome("collect")?.kind == .digest
                && run.state.outcome("collect")?.dueAt == run.state.digest?.closesAt)
        // The runtime opens the window with the same key and close.
        #expect(
            WorkflowEngine.digestWindow(
                run.definition, trigger: Self.like(0, "Ana", post: "p7"), now: utc("2024-06-01T10:00:00Z"))
                == run.state.digest)
    }

    @Test func withoutAKeyTheSubscriberAloneIsTheKey() {
        let d = definition(
            #"{"trigger": {"event": "a"}, "steps": [{"name": "d", "digest": {"window": "1h"}}, {"name": "s", "send": {"title": "{{ digest.count }}"}}]}"#
        )
        let window = WorkflowEngine.digestWindow(
            d, trigger: WorkflowEvent(id: "1", name: "a", data: ["x": 1], occurredAt: Date()),
            now: utc("2024-06-01T10:00:00Z"))
        #expect(window?.key == "" && window?.closesAt == utc("2024-06-01T11:00:00Z"))
        // An event without the key's field gets the empty key (they share a digest).
        let keyed = definition(Self.liked)
        #expect(
            WorkflowEngine.digestWindow(
                keyed, trigger: WorkflowEvent(id: "2", name: "photo.liked", occurredAt: Date()), now: Date())?.key == ""
        )
        #expect(
            WorkflowEngine.digestWindow(
                definition(oneStep(#"{"name": "x", "exit": {}}"#)), trigger: Self.like(1, nil), now: Date()) == nil)
    }

    @Test(
        arguments: [
            // (actors in order of arrival, digest.list as people write it)
            (["Ana"], "Ana"),
            (["Ana", "Ben"], "Ana and Ben"),
            (["Ana", "Ana", "Ben"], "Ana and Ben"),
            (["Ana", "Ben", "Cid"], "Ana, Ben and Cid"),
            (["Ana", "Ben", "Cid", "Dee"], "Ana, Ben and 2 others"),
            (["Ana", "Ben", "Ana", "Cid", "Dee", "Eve", "Ben"], "Ana, Ben and 3 others"),
            (["Ben", nil, "Ana"], "Ben and Ana")
        ] as [([String?], String)])
    func theListIsWrittenAsPeopleWriteIt(_ actors: [String?], _ expected: String) {
        let run = Self.collected(actors)
        #expect(run.state.digest?.summary?.listText == expected)
        let send = run.sends.first
        let shown = actors.count > 1 ? "\(expected) liked your photo" : "\(actors[0]!) liked your photo"
        #expect(send?.content.title == shown)
    }

    @Test func countFirstAndLastAfterTheClose() {
        let run = Self.collected(["Ana", "Ben", "Cid", "Ana", "Dee"])
        #expect(
            run.decision("collect") == .collected
                && run.state.outcome("collect")?.reason == "collected 5 events with the key 'p1'")
        #expect(run.decision("many") == .then)
        #expect(run.sends.map(\.step) == ["digest-push"])
        #expect(run.sends[0].content.body == "5 likes, first Ana, last Dee")
        #expect(run.state.status == .completed)
        #expect(run.state.digest?.summary?.count == 5 && run.state.digest?.summary?.distinctValues == 4)
    }

    @Test func aBranchTestsTheCount() {
        let one = Self.collected(["Ana"])
        #expect(one.decision("many") == .otherwise && one.sends.map(\.step) == ["single-push"])
        #expect(one.sends[0].content.title == "Ana liked your photo")
        let two = Self.collected(["Ana", "Ben"])
        #expect(two.decision("many") == .then)
    }

    @Test func theCollectorKeepsDistinctValuesInOrderAndCountsAll() {
        var collector = WorkflowDigestCollector(list: WorkflowDataPath("data.who.name"))
        let values: [JSONValue?] = [["name": "Ana"], nil, ["name": 7], ["name": "Ana"], ["name": ""], ["name": .null]]
        for (i, value) in values.enumerated() {
            collector.add(
                WorkflowEvent(id: "\(i)", name: "a", data: value.map { ["who": $0] } ?? [:], occurredAt: Date()))
        }
        let summary = collector.summary!
        #expect(summary.count == 6 && summary.values == ["Ana", "7"] && summary.distinctValues == 2)
        #expect(summary.first.id == "0" && summary.last.id == "5")
        #expect(WorkflowDigestCollector(list: nil).summary == nil)
    }

    @Test func aCancelInTheWindowEndsTheRunWithItsWindowStillUnclosed() {
        var run = RunDriver(
            #"{"trigger": {"event": "photo.liked"}, "cancelOn": [{"event": "photo.deleted"}], "steps": [{"name": "collect", "digest": {"window": "10m"}}, {"name": "s", "send": {"title": "{{ digest.count }}"}}]}"#,
            trigger: Self.like(0, "Ana"), at: "2024-06-01T10:00:00Z")
        run.apply(
            .event(WorkflowEvent(id: "del", name: "photo.deleted", occurredAt: utc("2024-06-01T10:01:00Z"))),
            at: "2024-06-01T10:01:00Z")
        #expect(run.state.status == .cancelled && run.decision("collect") == .cancelled)
        // The store drops the window of a run that ended before its close (summary nil).
        #expect(run.state.digest != nil && run.state.digest?.summary == nil)
        // A late answer changes nothing.
        run.apply(
            .digestCollected(WorkflowDigestSummary(count: 1, first: Self.like(0, "Ana"), last: Self.like(0, "Ana"))),
            at: "2024-06-01T10:11:00Z")
        #expect(!run.changed)
    }

    @Test func aTriggerThatJoinedAnotherRunsDigestEndsCompleted() {
        let d = definition(Self.liked)
        let state = WorkflowEngine.joinedDigest(
            runId: "run-2", workflowKey: "wf", version: 1, definition: d, trigger: Self.like(9, "Zoe"),
            subscriber: WorkflowSubscriber(id: "alice"), digestRunId: "run-1",
            environment: RunDriver.environment(utc("2024-06-01T10:03:00Z"), nil, nil))
        #expect(state.status == .completed && state.outcomes.map(\.decision) == [.joined])
        #expect(state.outcomes[0].reason == "joined the open digest of run run-1 (key 'p1')")
        #expect((try? WorkflowRunState(json: state.jsonValue)) == state)
    }

    // MARK: - Throttle

    static let capped = #"""
        {"trigger": {"event": "order.shipped"},
         "steps": [{"name": "cap", "throttle": {"limit": 3, "window": "1d", "key": "{{ trigger.data.store }}"}},
                   {"name": "s", "send": {"title": "Shipped", "policy": "ignore"}}]}
        """#

    @Test func aThrottleAsksAndGoesOnWhenItPasses() {
        var run = RunDriver(
            Self.capped,
            trigger: WorkflowEvent(
                id: "o-1", name: "order.shipped", data: ["store": "berlin"], occurredAt: utc("2024-06-01T10:00:00Z")),
            at: "2024-06-01T10:00:00Z")
        let window = WorkflowDuration("1d")!
        #expect(
            run.actions
                == [
                    .askThrottle(
                        WorkflowThrottleCheck(step: "cap", key: "berlin", limit: 3, window: window, passKey: "o-1"))
                ])
        #expect(run.state.throttleFor == "cap" && run.state.status == .running)
        run.apply(.throttle(WorkflowThrottleAnswer(passed: true, recent: 2)), at: "2024-06-01T10:00:00Z")
        #expect(run.decision("cap") == .passed && run.sends.count == 1 && run.state.status == .completed)
        #expect(run.state.outcome("cap")?.reason == "run 2 of at most 3 for this subscriber and key 'berlin' within 1d")
    }

    @Test func aThrottleThatSaysNoEndsTheRunThrottledWithTheReason() {
        var run = RunDriver(
            Self.capped,
            trigger: WorkflowEvent(
                id: "o-4", name: "order.shipped", data: ["store": "berlin"], occurredAt: utc("2024-06-01T10:00:00Z")),
            at: "2024-06-01T10:00:00Z")
        run.apply(.throttle(WorkflowThrottleAnswer(passed: false, recent: 3)), at: "2024-06-01T10:00:00Z")
        #expect(run.state.status == .throttled && run.sends.isEmpty && run.actions.last == .finished(.throttled))
        #expect(run.decision("cap") == .throttled && run.state.throttleFor == nil)
        #expect(
            run.state.throttleReason
                == "3 runs of this workflow passed 'cap' for this subscriber and key 'berlin' within 1d (the limit)")
        #expect(run.state.status.hasEnded && WorkflowRunStatus.shown.contains(.throttled))
        // Nothing moves an ended run.
        run.apply(.throttle(WorkflowThrottleAnswer(passed: true, recent: 1)), at: "2024-06-01T10:00:01Z")
        #expect(!run.changed)
    }

    // MARK: - Definitions

    @Test func digestAndThrottleReadBackTheSame() {
        let d = definition(Self.liked)
        guard case .digest(let digest) = d.steps[0].kind else {
            Issue.record("not a digest")
            return
        }
        #expect(
            digest.window.seconds == 600 && digest.key?.text == "{{ trigger.data.postId }}"
                && digest.list?.members == ["actor"])
        #expect(definition(d.jsonValue.jsonString) == d)
        let t = definition(Self.capped)
        guard case .throttle(let throttle) = t.steps[0].kind else {
            Issue.record("not a throttle")
            return
        }
        #expect(throttle.limit == 3 && throttle.window.text == "1d")
        #expect(
            t.steps[0].jsonValue["throttle"] == ["limit": 3, "window": "1d", "key": "{{ trigger.data.store }}"])
        #expect(definition(t.jsonValue.jsonString) == t)
    }

    static let refused: [IssueCase] = [
        IssueCase(
            note: "a window over 30 days",
            document: oneStep(#"{"name": "d", "digest": {"window": "31d"}}"#),
            expected: [("steps[0].digest.window", "at most 30 days")]),
        IssueCase(
            note: "a key template that does not parse",
            document: oneStep(#"{"name": "d", "digest": {"window": "1h", "key": "{{ trigger.data.postId"}}"#),
            expected: [("steps[0].digest.key", "never closed")]),
        IssueCase(
            note: "a key that reads the subscriber",
            document: oneStep(#"{"name": "d", "digest": {"window": "1h", "key": "{{ subscriber.id }}"}}"#),
            expected: [("steps[0].digest.key", "'subscriber' is not available here")]),
        IssueCase(
            note: "a list outside data",
            document: oneStep(#"{"name": "d", "digest": {"window": "1h", "list": "trigger.data.actor"}}"#),
            expected: [("steps[0].digest.list", "inside the trigger event's data")]),
        IssueCase(
            note: "a list that is only data",
            document: oneStep(#"{"name": "d", "digest": {"window": "1h", "list": "data"}}"#),
            expected: [("steps[0].digest.list", "data.actorName")]),
        IssueCase(
            note: "a digest that is not the first step",
            document: oneStep(
                #"{"name": "w", "wait": {"duration": "1h"}}"#, more: #", {"name": "d", "digest": {"window": "1h"}}"#),
            expected: [("steps[1].digest", "first step")]),
        IssueCase(
            note: "a digest in a branch",
            document: oneStep(
                #"{"name": "b", "branch": {"if": "trigger.data.a == 1", "then": [{"name": "d", "digest": {"window": "1h"}}]}}"#
            ),
            expected: [("steps[0].branch.then[0].digest", "first step")]),
        IssueCase(
            note: "a throttle limit under 1 and a window over 30 days",
            document: oneStep(#"{"name": "t", "throttle": {"limit": 0, "window": "40d"}}"#),
            expected: [("steps[0].throttle.limit", "from 1 to"), ("steps[0].throttle.window", "at most 30 days")]),
        IssueCase(
            note: "a throttle without a limit, a fractional one",
            document: oneStep(
                #"{"name": "t", "throttle": {"window": "1h"}}"#,
                more: #", {"name": "u", "throttle": {"limit": 1.5, "window": "1h"}}"#),
            expected: [("steps[0].throttle.limit", "is required"), ("steps[1].throttle.limit", "whole number")]),
        IssueCase(
            note: "a throttle key that does not parse",
            document: oneStep(#"{"name": "t", "throttle": {"limit": 1, "window": "1h", "key": "{{ }}"}}"#),
            expected: [("steps[0].throttle.key", "empty placeholder")]),
        IssueCase(
            note: "digest.count read without a digest step",
            document: oneStep(#"{"name": "s", "send": {"title": "{{ digest.count }} likes"}}"#),
            expected: [("steps[0].send.title", "no digest step")]),
        IssueCase(
            note: "digest.list without a list",
            document: oneStep(
                #"{"name": "d", "digest": {"window": "1h"}}"#,
                more: #", {"name": "s", "send": {"title": "{{ digest.list }}"}}"#),
            expected: [("steps[1].send.title", "has no list")]),
        IssueCase(
            note: "a branch on digest.count without a digest",
            document: oneStep(#"{"name": "b", "branch": {"if": "digest.count > 1", "then": []}}"#),
            expected: [("steps[0].branch.if", "no digest step")]),
        IssueCase(
            note: "a digest path that is not a field",
            document: oneStep(
                #"{"name": "d", "digest": {"window": "1h"}}"#,
                more: #", {"name": "s", "send": {"title": "{{ digest.size }}"}}"#),
            expected: [("steps[1].send.title", "digest.count, digest.list")])
    ]

    @Test(arguments: refused)
    func badDigestAndThrottleInputIsRefusedWithItsPath(_ c: IssueCase) {
        guard case .failure(let rejection) = WorkflowDefinition.parse(json(c.document)) else {
            Issue.record("accepted: \(c.note)")
            return
        }
        for (path, piece) in c.expected {
            #expect(
                rejection.issues.contains { $0.path == path && $0.message.contains(piece) },
                "\(c.note): want \(path) ~ \(piece), got \(rejection.issues.map(\.description))")
        }
        #expect(rejection.apiError.code == .validationFailed)
    }

    // MARK: - Dry run

    @Test func aDryRunTakesAListOfTriggerEvents() {
        let start = utc("2024-06-01T10:00:00Z")
        func sample(_ n: Int, _ actor: String, post: String = "p1", after: TimeInterval) -> WorkflowDryRun.Arrival {
            WorkflowDryRun.Arrival(event: Self.like(n, actor, post: post), after: after)
        }
        let timeline = WorkflowDryRun.walk(
            definition(Self.liked), subscriber: WorkflowSubscriber(id: "alice"), event: Self.like(0, "Ana"),
            events: [
                sample(1, "Ben", after: 60), sample(2, "Zed", post: "p2", after: 90), sample(3, "Cid", after: 300),
                sample(4, "Dee", after: 900)
            ], start: start)
        #expect(timeline.state.status == .completed)
        #expect(timeline.entries.filter { $0.kind == .joined }.map { $0.detail["id"] } == ["like-1", "like-3"])
        let separate = timeline.entries.filter { $0.kind == .separate }
        #expect(separate.map { $0.detail["id"] } == ["like-2", "like-4"])
        #expect(separate[0].detail["reason"]?.stringValue?.contains("another key") == true)
        #expect(separate[1].detail["reason"]?.stringValue?.contains("after the window closed") == true)
        let send = timeline.entries.first { $0.kind == .send }
        #expect(send?.detail["content"]?["title"] == "Ana, Ben and Cid liked your photo")
        #expect(send?.at == utc("2024-06-01T10:10:00Z"))
        #expect(timeline.entries.map(\.at) == timeline.entries.map(\.at).sorted())
        #expect(timeline.state.digest?.summary?.count == 3)
    }

    @Test func aDryRunThrottlesTheStepsItIsTold() {
        let start = utc("2024-06-01T10:00:00Z")
        let event = WorkflowEvent(id: "o", name: "order.shipped", data: ["store": "b"], occurredAt: start)
        let passes = WorkflowDryRun.walk(
            definition(Self.capped), subscriber: WorkflowSubscriber(id: "a"), event: event, start: start)
        #expect(passes.state.status == .completed && passes.entries.contains { $0.kind == .throttle })
        let stopped = WorkflowDryRun.walk(
            definition(Self.capped), subscriber: WorkflowSubscriber(id: "a"), event: event, throttled: ["cap"],
            start: start)
        #expect(stopped.state.status == .throttled && !stopped.entries.contains { $0.kind == .send })
        #expect(stopped.jsonValue["status"] == "throttled")
    }
}
