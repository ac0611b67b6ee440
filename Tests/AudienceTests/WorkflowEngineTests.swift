import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import Testing

/// Drives one run through the engine with a test clock.
struct RunDriver {
    let definition: WorkflowDefinition
    var quietHours: QuietHours?
    var defaultTimeZone: String?
    var state: WorkflowRunState
    var actions: [WorkflowAction] = []
    var changed = true

    init(
        _ text: String,
        subscriber: WorkflowSubscriber = WorkflowSubscriber(
            id: "alice", attributes: ["name": "Alice", "plan": "pro"], timezone: "Europe/Berlin"),
        trigger: WorkflowEvent? = nil, at start: String, quietHours: QuietHours? = nil, defaultTimeZone: String? = nil
    ) {
        definition = parsedDefinition(text)
        self.quietHours = quietHours
        self.defaultTimeZone = defaultTimeZone
        let event =
            trigger
            ?? WorkflowEvent(
                id: "evt-1", name: definition.trigger.event, data: ["orderId": "o-7", "total": 55],
                occurredAt: utc(start))
        let advance = WorkflowEngine.start(
            runId: "run-1", workflowKey: "wf", version: 3, definition: definition, trigger: event,
            subscriber: subscriber, environment: Self.environment(utc(start), quietHours, defaultTimeZone))
        state = advance.state
        actions = advance.actions
        // Every state survives its JSON (the byte writer's document, read back).
        #expect((try? WorkflowRunState(json: state.jsonValue)) == state)
    }

    static func environment(_ now: Date, _ quiet: QuietHours?, _ zone: String?) -> WorkflowEnvironment {
        WorkflowEnvironment(
            now: now, quietHours: quiet, defaultTimeZone: zone,
            messageId: { run, step, purpose in "\(run)/\(step)/\(purpose.rawValue)" })
    }

    mutating func apply(_ input: WorkflowInput, at time: String) {
        let advance = WorkflowEngine.advance(
            state, definition: definition, input: input,
            environment: Self.environment(utc(time), quietHours, defaultTimeZone))
        state = advance.state
        actions = advance.actions
        changed = advance.changed
        #expect((try? WorkflowRunState(json: state.jsonValue)) == state)
    }

    /// Fires the run's timer at its due time.
    mutating func fire() {
        guard let timer = state.timer else {
            Issue.record("no timer")
            return
        }
        apply(.timerFired(token: timer.token), at: EventTimestamp.format(timer.dueAt))
    }

    var sends: [WorkflowSendAction] { actions.compactMap { if case .send(let s) = $0 { s } else { nil } } }
    var due: String? { state.timer.map { EventTimestamp.format($0.dueAt) } }
    func decision(_ step: String) -> WorkflowStepDecision? { state.outcome(step)?.decision }
}

func steps(_ steps: String, trigger: String = #"{"event": "go"}"#, cancelOn: String = "[]") -> String {
    #"{"trigger": "# + trigger + #", "cancelOn": "# + cancelOn + #", "steps": ["# + steps + "]}"
}

@Suite("Workflow engine: every step kind, branches, quiet hours, DST, templates")
struct WorkflowEngineTests {
    @Test func waitThenSend() {
        var run = RunDriver(
            steps(
                #"{"name": "w", "wait": {"duration": "90m"}}, {"name": "s", "send": {"title": "Hi {{ subscriber.attributes.name }}"}}"#
            ),
            at: "2024-06-01T10:00:00Z")
        #expect(run.state.current == "w" && run.due == "2024-06-01T11:30:00.000Z")
        #expect(run.actions == [.scheduleTimer(WorkflowTimer(token: "w:wait", dueAt: utc("2024-06-01T11:30:00Z")))])
        run.fire()
        #expect(run.sends.count == 1)
        let send = run.sends[0]
        #expect(send.idempotencyKey == "run-1:s" && send.messageId == "run-1/s/send" && send.subscriberId == "alice")
        #expect(send.content.title == "Hi Alice" && send.missing.isEmpty)
        #expect(run.state.status == .completed && run.actions.last == .finished(.completed))
        #expect(run.decision("w") == .waited && run.decision("s") == .sent)
        #expect(run.state.outcome("s")?.messageIds == ["run-1/s/send"])
        #expect(run.state.outcome("w")?.endedAt == utc("2024-06-01T11:30:00Z"))
    }

    @Test func aStaleOrRepeatedTimerChangesNothing() {
        var run = RunDriver(
            steps(#"{"name": "w", "wait": {"duration": "1h"}}, {"name": "s", "send": {"title": "Hi"}}"#),
            at: "2024-06-01T10:00:00Z")
        let before = run.state
        run.apply(.timerFired(token: "other:wait"), at: "2024-06-01T11:00:00Z")
        #expect(!run.changed && run.actions.isEmpty && run.state == before)
        run.fire()
        #expect(run.sends.count == 1)
        run.apply(.timerFired(token: "w:wait"), at: "2024-06-01T11:00:01Z")
        #expect(!run.changed && run.actions.isEmpty)
    }

    @Test(
        arguments: [
            // (subscriber zone, tenant default, start, expected due, zone named in the reason)
            // across spring forward
            ("Europe/Berlin", nil, "2024-03-30T12:00:00Z", "2024-03-31T05:00:00.000Z", "Europe/Berlin"),
            // across fall back
            ("Europe/Berlin", nil, "2024-10-26T12:00:00Z", "2024-10-27T06:00:00.000Z", "Europe/Berlin"),
            ("America/New_York", nil, "2024-03-09T20:00:00Z", "2024-03-10T11:00:00.000Z", "America/New_York"),
            ("America/New_York", nil, "2024-11-02T20:00:00Z", "2024-11-03T12:00:00.000Z", "America/New_York"),
            // tenant default
            (nil, "America/New_York", "2024-06-01T12:00:00Z", "2024-06-02T11:00:00.000Z", "America/New_York"),
            (nil, nil, "2024-06-01T12:00:00Z", "2024-06-02T07:00:00.000Z", "UTC")
        ] as [(String?, String?, String, String, String)])
    func waitUntilInTheSubscribersZone(
        _ tz: String?, _ tenantDefault: String?, _ start: String, _ due: String, _ zoneName: String
    ) {
        let run = RunDriver(
            steps(
                #"{"name": "m", "waitUntil": {"time": "07:00", "timezone": "subscriber"}}, {"name": "s", "send": {"title": "Hi"}}"#
            ),
            subscriber: WorkflowSubscriber(id: "a", timezone: tz), at: start, defaultTimeZone: tenantDefault)
        #expect(run.due == due)
        #expect(run.state.outcome("m")?.reason?.contains(zoneName) == true)
    }

    @Test func waitUntilAFixedZone() {
        let run = RunDriver(
            steps(#"{"name": "m", "waitUntil": {"time": "09:30", "timezone": "Asia/Tokyo"}}"#),
            at: "2024-06-01T00:00:00Z")
        #expect(run.due == "2024-06-01T00:30:00.000Z")
    }

    @Test func waitForMatchedAndTimedOut() {
        let text = steps(
            #"{"name": "r", "waitFor": {"event": "review.written", "where": "event.data.orderId == trigger.data.orderId", "timeout": "7d"}}, {"name": "b", "branch": {"if": {"matched": "r"}, "then": [{"name": "yes", "send": {"title": "Thanks"}}], "else": [{"name": "no", "send": {"title": "Please review"}}]}}"#
        )
        var run = RunDriver(text, at: "2024-06-01T10:00:00Z")
        #expect(
            run.state.awaiting
                == WorkflowEventWait(
                    step: "r", event: "review.written", since: utc("2024-06-01T10:00:00Z"),
                    timeoutAt: utc("2024-06-08T10:00:00Z")))
        #expect(run.actions.contains(.awaitEvent(run.state.awaiting!)))
        // Another order's review does not match; the trigger event itself never does.
        run.apply(
            .event(
                WorkflowEvent(
                    id: "e2", name: "review.written", data: ["orderId": "o-8"], occurredAt: utc("2024-06-02T10:00:00Z"))
            ), at: "2024-06-02T10:00:00Z")
        #expect(!run.changed)
        var timedOut = run
        run.apply(
            .event(
                WorkflowEvent(
                    id: "e3", name: "review.written", data: ["orderId": "o-7", "stars": 5],
                    occurredAt: utc("2024-06-02T11:00:00Z"))), at: "2024-06-02T11:00:00Z")
        #expect(run.decision("r") == .matched && run.decision("b") == .then)
        #expect(run.actions.contains(.stopAwaitingEvent(step: "r")) && run.actions.contains(.clearTimer))
        #expect(run.state.status == .completed)

        timedOut.fire()
        #expect(timedOut.decision("r") == .timedOut && timedOut.decision("b") == .otherwise)
        #expect(timedOut.sends.first?.content.title == "Please review")
    }

    @Test func branchOnAnExpression() {
        let text = steps(
            #"{"name": "b", "branch": {"if": "trigger.data.total > 40 and subscriber.attributes.plan == \"pro\"", "then": [{"name": "big", "send": {"title": "Big"}}], "else": [{"name": "small", "send": {"title": "Small"}}]}}, {"name": "after", "send": {"title": "After"}}"#
        )
        let run = RunDriver(text, at: "2024-06-01T10:00:00Z")
        #expect(run.decision("b") == .then && run.sends.map(\.step) == ["big", "after"])
        let small = RunDriver(
            text,
            trigger: WorkflowEvent(id: "x", name: "go", data: ["total": 10], occurredAt: utc("2024-06-01T10:00:00Z")),
            at: "2024-06-01T10:00:00Z")
        #expect(small.decision("b") == .otherwise && small.sends.map(\.step) == ["small", "after"])
        #expect(small.state.outcome("b")?.reason?.contains("false") == true)
    }

    @Test(
        arguments: [
            (#"{"opened": "s"}"#, WorkflowReceipts(delivered: true, opened: true), "then"),
            (#"{"opened": "s"}"#, WorkflowReceipts(delivered: true, opened: false), "else"),
            (#"{"delivered": "s"}"#, WorkflowReceipts(delivered: true, opened: false), "then"),
            (#"{"delivered": "s"}"#, WorkflowReceipts(), "else"),
            (#"{"not": {"opened": "s"}}"#, WorkflowReceipts(), "then"),
            (
                #"{"all": [{"delivered": "s"}, {"opened": "s"}]}"#, WorkflowReceipts(delivered: true, opened: false),
                "else"
            ),
            (#"{"any": [{"delivered": "s"}, "trigger.data.total > 100"]}"#, WorkflowReceipts(delivered: true), "then")
        ] as [(String, WorkflowReceipts, String)])
    func branchOnReceipts(_ condition: String, _ receipts: WorkflowReceipts, _ expected: String) {
        let text = steps(
            #"{"name": "s", "send": {"title": "Hi"}}, {"name": "w", "wait": {"duration": "1d"}}, {"name": "b", "branch": {"if": "#
                + condition
                + #", "then": [{"name": "t", "exit": {}}], "else": [{"name": "e", "send": {"title": "Again"}}]}}"#)
        var run = RunDriver(text, at: "2024-06-01T10:00:00Z")
        run.fire()
        #expect(run.actions.contains(.askReceipts(step: "b", messageIds: ["run-1/s/send"])))
        #expect(run.state.receiptsFor == ["run-1/s/send"] && run.state.current == "b")
        run.apply(.receipts(["run-1/s/send": receipts]), at: "2024-06-02T10:00:01Z")
        #expect(run.decision("b")?.rawValue == expected)
        #expect(run.state.outcome("b")?.receipts == ["run-1/s/send": receipts])
        #expect(run.state.status == .completed)
    }

    @Test func aReceiptConditionOnASendThatNeverRanAsksNothing() {
        let text = steps(
            #"{"name": "b0", "branch": {"if": "trigger.data.total > 100", "then": [{"name": "s", "send": {"title": "Hi"}}]}}, {"name": "b", "branch": {"if": {"opened": "s"}, "then": [{"name": "t", "exit": {}}]}}"#
        )
        let run = RunDriver(text, at: "2024-06-01T10:00:00Z")
        #expect(
            run.decision("b") == .otherwise
                && !run.actions.contains { if case .askReceipts = $0 { true } else { false } })
    }

    @Test func exitEndsTheRun() {
        let run = RunDriver(
            steps(#"{"name": "x", "exit": {}}, {"name": "never", "send": {"title": "Hi"}}"#), at: "2024-06-01T10:00:00Z"
        )
        #expect(
            run.state.status == .completed && run.sends.isEmpty && run.decision("x") == .exited
                && run.state.outcome("never") == nil)
    }

    @Test func cancelOnWithAWhereOnTheTrigger() {
        let text = steps(
            #"{"name": "w", "wait": {"duration": "1d"}}, {"name": "s", "send": {"title": "Hi"}}"#,
            cancelOn: #"[{"event": "workout.completed", "where": "event.data.orderId == trigger.data.orderId"}]"#)
        var run = RunDriver(text, at: "2024-06-01T10:00:00Z")
        run.apply(
            .event(
                WorkflowEvent(
                    id: "c1", name: "workout.completed", data: ["orderId": "other"],
                    occurredAt: utc("2024-06-01T12:00:00Z"))), at: "2024-06-01T12:00:00Z")
        #expect(!run.changed && run.state.status == .running)
        run.apply(
            .event(
                WorkflowEvent(
                    id: "c2", name: "workout.completed", data: ["orderId": "o-7"],
                    occurredAt: utc("2024-06-01T13:00:00Z"))), at: "2024-06-01T13:00:00Z")
        #expect(run.state.status == .cancelled && run.actions == [.clearTimer, .finished(.cancelled)])
        #expect(run.state.cancelReason?.hasPrefix("cancelOn[0]: workout.completed") == true)
        #expect(run.state.outcome("w")?.status == .interrupted && run.decision("w") == .cancelled)
        // After the end nothing changes it.
        run.apply(.timerFired(token: "w:wait"), at: "2024-06-02T10:00:00Z")
        #expect(!run.changed && run.sends.isEmpty)
    }

    @Test func cancelInput() {
        var run = RunDriver(
            steps(#"{"name": "r", "waitFor": {"event": "e", "timeout": "1h"}}"#), at: "2024-06-01T10:00:00Z")
        run.apply(.cancel(reason: "cancelled through the API"), at: "2024-06-01T10:30:00Z")
        #expect(
            run.state.status == .cancelled
                && run.actions == [.clearTimer, .stopAwaitingEvent(step: "r"), .finished(.cancelled)])
    }

    @Test func quietHoursShiftASendUnlessIgnored() {
        let quiet = QuietHours(start: WallClockTime("22:00")!, end: WallClockTime("08:00")!)
        // 23:30 in Berlin (CEST): moved to 08:00 the next morning.
        var run = RunDriver(
            steps(#"{"name": "s", "send": {"title": "Hi"}}"#), at: "2024-06-01T21:30:00Z", quietHours: quiet)
        #expect(run.sends.isEmpty && run.due == "2024-06-02T06:00:00.000Z")
        #expect(run.state.outcome("s")?.shiftedFrom == utc("2024-06-01T21:30:00Z"))
        #expect(run.state.outcome("s")?.reason?.contains("quiet hours 22:00-08:00 in Europe/Berlin") == true)
        run.fire()
        #expect(run.sends.count == 1 && run.state.status == .completed)
        let ignored = RunDriver(
            steps(#"{"name": "s", "send": {"title": "Hi", "policy": "ignore"}}"#), at: "2024-06-01T21:30:00Z",
            quietHours: quiet)
        #expect(ignored.sends.count == 1)
        let outside = RunDriver(
            steps(#"{"name": "s", "send": {"title": "Hi"}}"#), at: "2024-06-01T12:00:00Z", quietHours: quiet)
        #expect(outside.sends.count == 1)
        // A New York subscriber at the same instant (17:30) is not in quiet hours.
        let elsewhere = RunDriver(
            steps(#"{"name": "s", "send": {"title": "Hi"}}"#),
            subscriber: WorkflowSubscriber(id: "b", timezone: "America/New_York"), at: "2024-06-01T21:30:00Z",
            quietHours: quiet)
        #expect(elsewhere.sends.count == 1)
    }

    @Test func dropInQuietHoursSuppressesTheSendAndTheRunGoesOn() {
        let quiet = QuietHours(start: WallClockTime("22:00")!, end: WallClockTime("08:00")!)
        let text = steps(
            #"{"name": "s", "send": {"title": "Hi", "policy": "drop"}}, "#
                + #"{"name": "b", "branch": {"if": {"suppressed": "s"}, "then": [{"name": "t", "exit": {}}]}}"#)
        // 23:30 in Berlin: a message recorded suppressed (quiet_hours), no timer, the branch sees it.
        var run = RunDriver(text, at: "2024-06-01T21:30:00Z", quietHours: quiet)
        #expect(run.sends.map(\.suppressed) == [.quietHours] && run.state.timer == nil)
        #expect(run.state.outcome("s")?.decision == .suppressed && run.state.outcome("s")?.suppressed == .quietHours)
        #expect(run.state.receiptsFor != nil)
        run.apply(.receipts([:]), at: "2024-06-01T21:30:00Z")
        #expect(run.state.outcome("b")?.decision == .then && run.state.status == .completed)
        // Outside quiet hours it is sent and left to the runtime's policy (not suppressed here).
        var day = RunDriver(text, at: "2024-06-01T12:00:00Z", quietHours: quiet)
        #expect(day.sends.map(\.suppressed) == [nil] && day.state.outcome("s")?.decision == .sent)
        day.apply(.receipts([:]), at: "2024-06-01T12:00:00Z")
        #expect(day.state.outcome("b")?.decision == .otherwise)
    }

    @Test func theRuntimesPolicyDecisionIsRecordedBeforeTheBranchReadsIt() {
        var run = RunDriver(
            steps(
                #"{"name": "s", "send": {"title": "Hi", "category": "offers"}}, "#
                    + #"{"name": "b", "branch": {"if": {"suppressed": "s"}, "then": [{"name": "t", "exit": {}}]}}"#),
            at: "2024-06-01T12:00:00Z")
        let id = run.sends.first?.messageId ?? ""
        run.state = WorkflowEngine.recordPolicy(run.state, messageId: id, suppressed: .categoryDisabled)
        #expect(run.state.outcome("s")?.decision == .suppressed)
        #expect(run.state.outcome("s")?.reason?.hasPrefix("suppressed: category_disabled") == true)
        #expect((try? WorkflowRunState(json: run.state.jsonValue)) == run.state)
        run.apply(.receipts([:]), at: "2024-06-01T12:00:00Z")
        #expect(run.state.outcome("b")?.decision == .then && run.state.status == .completed)
    }

    @Test func templateMissesRenderEmptyAndAreReported() {
        let run = RunDriver(
            steps(
                #"{"name": "s", "send": {"title": "Hi {{ subscriber.attributes.nickname }}!", "body": "{{ trigger.data.total }} {{ trigger.data.missing }}", "data": {"id": "{{ subscriber.id }}"}}}"#
            ),
            at: "2024-06-01T10:00:00Z")
        let send = run.sends[0]
        #expect(send.content.title == "Hi !" && send.content.body == "55 " && send.content.data["id"] == "alice")
        #expect(send.missing == ["trigger.data.missing", "subscriber.attributes.nickname"])  // body, then title
        #expect(run.state.outcome("s")?.missing == send.missing)
        #expect(
            run.state.outcome("s")?.reason?.contains(
                "rendered empty: trigger.data.missing, subscriber.attributes.nickname") == true)
    }

    @Test func renderedContentThatBreaksTheRulesFailsTheRun() {
        let run = RunDriver(
            steps(#"{"name": "s", "send": {"title": "Hi", "deepLink": "{{ trigger.data.link }}"}}"#),
            at: "2024-06-01T10:00:00Z")
        #expect(run.state.status == .failed && run.state.failure?.code == .contentInvalid && run.sends.isEmpty)
        #expect(run.actions.last == .finished(.failed))
    }

    @Test func triggerWhere() {
        let d = definition(
            #"{"trigger": {"event": "cart.checked_out", "where": "event.data.total > 40 and subscriber.attributes.plan == \"pro\""}, "steps": [{"name": "x", "exit": {}}]}"#
        )
        let pro = WorkflowSubscriber(id: "a", attributes: ["plan": "pro"])
        let at = utc("2024-06-01T10:00:00Z")
        #expect(
            WorkflowEngine.triggers(
                d, event: WorkflowEvent(id: "1", name: "cart.checked_out", data: ["total": 41], occurredAt: at),
                subscriber: pro))
        #expect(
            !WorkflowEngine.triggers(
                d, event: WorkflowEvent(id: "2", name: "cart.checked_out", data: ["total": 40], occurredAt: at),
                subscriber: pro))
        #expect(
            !WorkflowEngine.triggers(
                d, event: WorkflowEvent(id: "3", name: "cart.checked_out", data: ["total": 99], occurredAt: at),
                subscriber: WorkflowSubscriber(id: "b")))
        #expect(
            !WorkflowEngine.triggers(
                d, event: WorkflowEvent(id: "4", name: "cart.viewed", data: ["total": 99], occurredAt: at),
                subscriber: pro))
    }

    @Test func aStateWithAMissingStepFails() {
        var run = RunDriver(steps(#"{"name": "w", "wait": {"duration": "1h"}}"#), at: "2024-06-01T10:00:00Z")
        run.state.current = "gone"
        run.fire()
        #expect(run.state.status == .failed && run.state.failure?.code == .definitionMismatch)
    }

    @Test func stateJSONIsReadBackEqual() throws {
        var run = RunDriver(
            steps(
                #"{"name": "s", "send": {"title": "Hi"}}, {"name": "r", "waitFor": {"event": "e", "timeout": "1h"}}"#),
            at: "2024-06-01T10:00:00.123456Z")
        let text = run.state.jsonValue.jsonString
        let back = try WorkflowRunState(json: try JSONValue.parse(text))
        #expect(back == run.state)
        run.apply(
            .event(WorkflowEvent(id: "m", name: "e", data: ["k": [1, 2]], occurredAt: utc("2024-06-01T10:10:00Z"))),
            at: "2024-06-01T10:10:00Z")
        #expect(try WorkflowRunState(json: run.state.jsonValue) == run.state)
        #expect(throws: WorkflowStateError.self) { try WorkflowRunState(json: ["format": 99]) }
    }
}

@Suite("Workflow dry run")
struct WorkflowDryRunTests {
    @Test func walksTheWholeTimelineSendingNothing() {
        let d = definition(fullExample)
        let subscriber = WorkflowSubscriber(
            id: "alice", attributes: ["name": "Alice", "plan": "free"], timezone: "Europe/Berlin")
        let event = WorkflowEvent(
            id: "e1", name: "cart.checked_out", data: ["orderId": "o-1", "total": 50],
            occurredAt: utc("2024-06-01T10:00:00Z"))
        let timeline = WorkflowDryRun.walk(d, subscriber: subscriber, event: event, start: utc("2024-06-01T10:00:00Z"))
        #expect(timeline.triggerMatches)
        #expect(timeline.state.status == .completed)
        let kinds = timeline.entries.map { "\($0.step ?? "-"):\($0.kind.rawValue)" }
        #expect(kinds.contains("thanks:send") && kinds.contains("remind:send") && !kinds.contains("done:step"))
        let decisions = timeline.state.outcomes.map { "\($0.step)=\($0.decision?.rawValue ?? "")" }
        #expect(
            decisions == [
                "pause=waited", "thanks=sent", "review=timed_out", "check=else", "morning=waited", "remind=sent"
            ])
        let thanks = timeline.entries.first { $0.kind == .send && $0.step == "thanks" }
        #expect(thanks?.detail["content"]?["title"] == "Thanks Alice")
        #expect(thanks?.at == utc("2024-06-01T11:30:00Z"))
        // The review wait timed out 7 days later; 09:30 Berlin the next morning is 07:30Z.
        let remind = timeline.entries.first { $0.kind == .send && $0.step == "remind" }
        #expect(remind?.at == utc("2024-06-09T07:30:00Z"))
        #expect(remind?.detail["content"]?["deepLink"] == "shop://orders/o-1")
    }

    @Test func receiptsAndArrivalsSteerIt() {
        let d = definition(fullExample)
        let subscriber = WorkflowSubscriber(id: "bob", attributes: ["plan": "free"])
        let event = WorkflowEvent(
            id: "e1", name: "cart.checked_out", data: ["orderId": "o-1", "total": 50],
            occurredAt: utc("2024-06-01T10:00:00Z"))
        let opened = WorkflowDryRun.walk(
            d, subscriber: subscriber, event: event,
            receipts: ["thanks": WorkflowReceipts(delivered: true, opened: true)],
            start: utc("2024-06-01T10:00:00Z"))
        #expect(opened.state.outcome("check")?.decision == .then && opened.state.outcome("done")?.decision == .exited)
        #expect(opened.state.outcome("thanks")?.missing == ["subscriber.attributes.name"])
        let review = WorkflowEvent(
            id: "r1", name: "review.written", data: ["orderId": "o-1"], occurredAt: utc("2024-06-01T10:00:00Z"))
        let matched = WorkflowDryRun.walk(
            d, subscriber: subscriber, event: event, arrivals: ["review": .init(event: review, after: 3600)],
            start: utc("2024-06-01T10:00:00Z"))
        #expect(matched.state.outcome("review")?.decision == .matched)
        #expect(matched.state.outcome("review")?.endedAt == utc("2024-06-01T12:30:00Z"))
        let wrongOrder = WorkflowEvent(
            id: "r2", name: "review.written", data: ["orderId": "o-2"], occurredAt: utc("2024-06-01T10:00:00Z"))
        let refused = WorkflowDryRun.walk(
            d, subscriber: subscriber, event: event, arrivals: ["review": .init(event: wrongOrder)],
            start: utc("2024-06-01T10:00:00Z"))
        #expect(refused.state.outcome("review")?.decision == .timedOut)
    }

    @Test func aTriggerWhereThatFailsIsShown() {
        let d = definition(fullExample)
        let event = WorkflowEvent(
            id: "e1", name: "cart.checked_out", data: ["orderId": "o-1", "total": 10],
            occurredAt: utc("2024-06-01T10:00:00Z"))
        let timeline = WorkflowDryRun.walk(
            d, subscriber: WorkflowSubscriber(id: "c"), event: event, start: utc("2024-06-01T10:00:00Z"))
        #expect(!timeline.triggerMatches)
        #expect(timeline.jsonValue["triggerMatches"] == false)
    }
}

@Suite("Workflow engine: local windows (the plan, the acknowledgement, the fallback, central cancel)")
struct WorkflowLocalWindowTests {
    static let maya = WorkflowSubscriber(id: "maya", attributes: ["name": "Maya"], timezone: "Europe/Berlin")

    var plans: (RunDriver) -> [WorkflowLocalPlanAction] = { run in
        run.actions.compactMap { if case .sendLocalPlan(let p) = $0 { p } else { nil } }
    }

    @Test func thePlanGoesOutWhenTheWaitBegins() {
        let run = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        let plan = plans(run).first
        #expect(
            plan?.plan.id == "run-1:nudge" && plan?.messageId == "run-1/nudge/plan"
                && plan?.idempotencyKey == "run-1:nudge:plan")
        #expect(plan?.plan.fireAt == LocalPlan.FireDate(year: 2024, month: 6, day: 2, hour: 7, minute: 0))
        #expect(
            plan?.plan.title == "Leg day" && plan?.plan.deepLink == "gym://workouts/legs"
                && plan?.plan.cancelOn == ["workout.completed"])
        #expect(plan?.plan.messageId == "run-1/nudge/plan" && plan?.fireAt == utc("2024-06-02T05:00:00Z"))
        #expect(run.due == "2024-06-02T05:00:00.000Z" && run.state.localPlan?.localId == "run-1:nudge")
        #expect(run.sends.isEmpty)
        #expect(parsedDefinition(seedLocalExample).reactsToEvents == ["workout.completed", "$local.scheduled"])
    }

    @Test func notAcknowledgedTheFallbackGoesOnceAtTheMoment() {
        var run = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        run.fire()
        #expect(run.actions.contains(.askAcknowledgement(step: "nudge", localId: "run-1:nudge")) && run.sends.isEmpty)
        #expect(run.state.acknowledgementFor == "run-1:nudge")
        run.apply(.acknowledgement(localId: "run-1:nudge", acknowledged: false), at: "2024-06-02T05:00:01Z")
        #expect(run.sends.count == 1)
        let fallback = run.sends[0]
        #expect(fallback.idempotencyKey == "run-1:nudge:fallback" && fallback.messageId == "run-1/nudge/fallback")
        #expect(fallback.content.title == "Leg day" && fallback.content.deepLink == "gym://workouts/legs")
        #expect(
            run.decision("nudge") == .fallbackSent
                && run.state.outcome("nudge")?.reason?.contains("no device confirmed") == true)
        #expect(run.state.outcome("nudge")?.messageIds == ["run-1/nudge/plan", "run-1/nudge/fallback"])
        #expect(run.state.status == .completed)
        // The answer again changes nothing.
        run.apply(.acknowledgement(localId: "run-1:nudge", acknowledged: false), at: "2024-06-02T05:00:02Z")
        #expect(!run.changed)
    }

    @Test func acknowledgedNothingIsSent() {
        var asked = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        asked.fire()
        asked.apply(.acknowledgement(localId: "run-1:nudge", acknowledged: true), at: "2024-06-02T05:00:01Z")
        #expect(
            asked.sends.isEmpty && asked.decision("nudge") == .scheduledOnDevice && asked.state.status == .completed)

        // The acknowledgement event during the window: at the moment nothing is asked or sent.
        var early = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        early.apply(
            .event(
                WorkflowEvent(
                    id: "ack", name: "$local.scheduled", data: ["localId": "other"],
                    occurredAt: utc("2024-06-01T12:00:05Z"))),
            at: "2024-06-01T12:00:05Z")
        #expect(!early.changed)
        early.apply(
            .event(
                WorkflowEvent(
                    id: "ack", name: "$local.scheduled",
                    data: ["localId": "run-1:nudge", "messageId": "run-1/nudge/plan"],
                    occurredAt: utc("2024-06-01T12:00:05Z"))), at: "2024-06-01T12:00:05Z")
        #expect(early.changed && early.state.localPlan?.acknowledged == true && early.actions.isEmpty)
        early.fire()
        #expect(
            early.sends.isEmpty && early.decision("nudge") == .scheduledOnDevice && early.state.status == .completed)
        #expect(!early.actions.contains { if case .askAcknowledgement = $0 { true } else { false } })
    }

    @Test func quietHoursAndDSTMoveThePlansMoment() {
        let quiet = QuietHours(start: WallClockTime("22:00")!, end: WallClockTime("07:30")!)
        let shifted = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z", quietHours: quiet)
        #expect(
            plans(shifted).first?.plan.fireAt == LocalPlan.FireDate(year: 2024, month: 6, day: 2, hour: 7, minute: 30))
        #expect(shifted.due == "2024-06-02T05:30:00.000Z")
        #expect(shifted.state.outcome("morning-of")?.shiftedFrom == utc("2024-06-02T05:00:00Z"))
        // Across spring forward in Berlin: 07:00 CEST is 05:00Z; the wall clock says 07:00.
        let dst = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-03-30T12:00:00Z")
        #expect(plans(dst).first?.plan.fireAt == LocalPlan.FireDate(year: 2024, month: 3, day: 31, hour: 7, minute: 0))
        #expect(dst.due == "2024-03-31T05:00:00.000Z")
        let ignored = RunDriver(
            seedLocalExample.replacingOccurrences(
                of: #""deliver": "local","#, with: #""deliver": "local", "policy": "ignore","#),
            subscriber: Self.maya, at: "2024-06-01T12:00:00Z", quietHours: quiet)
        #expect(ignored.due == "2024-06-02T05:00:00.000Z")
    }

    @Test func centralCancelSendsBkCancelOnceAndADeviceCancelDoesNot() {
        var run = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        run.apply(.cancel(reason: "cancelled through the API"), at: "2024-06-01T13:00:00Z")
        let cancels = run.actions.compactMap { if case .sendCancelPlan(let c) = $0 { c } else { nil } }
        #expect(
            cancels.count == 1 && cancels.first?.runId == "run-1" && cancels.first?.messageId == "run-1/nudge/cancel")
        #expect(cancels.first?.idempotencyKey == "run-1:cancel" && cancels.first?.subscriberId == "maya")
        #expect(run.state.status == .cancelled && run.state.localPlan == nil)
        run.apply(.cancel(reason: "again"), at: "2024-06-01T13:00:01Z")
        #expect(!run.changed)

        // cancelOn without a where: the device removed it itself; the server stops the run, no bk.cancel, no fallback.
        var device = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        device.apply(
            .event(WorkflowEvent(id: "done", name: "workout.completed", occurredAt: utc("2024-06-01T18:00:00Z"))),
            at: "2024-06-01T18:00:00Z")
        #expect(
            device.state.status == .cancelled
                && !device.actions.contains { if case .sendCancelPlan = $0 { true } else { false } })

        // cancelOn with a where is decided on the server: bk.cancel.
        let withWhere = seedLocalExample.replacingOccurrences(
            of: #"[{ "event": "workout.completed" }]"#,
            with: #"[{ "event": "workout.completed", "where": "event.data.id == trigger.data.id" }]"#)
        var server = RunDriver(
            withWhere, subscriber: Self.maya,
            trigger: WorkflowEvent(
                id: "t", name: "workout.scheduled", data: ["id": 7], occurredAt: utc("2024-06-01T12:00:00Z")),
            at: "2024-06-01T12:00:00Z")
        #expect(plans(server).first?.plan.cancelOn == [])
        server.apply(
            .event(
                WorkflowEvent(
                    id: "done", name: "workout.completed", data: ["id": 7], occurredAt: utc("2024-06-01T18:00:00Z"))),
            at: "2024-06-01T18:00:00Z")
        #expect(server.actions.contains { if case .sendCancelPlan = $0 { true } else { false } })

        // After the moment the notification has fired: a cancel sends no bk.cancel.
        var late = RunDriver(seedLocalExample, subscriber: Self.maya, at: "2024-06-01T12:00:00Z")
        late.fire()
        late.apply(.cancel(reason: "late"), at: "2024-06-02T05:00:01Z")
        #expect(
            late.state.status == .cancelled
                && !late.actions.contains { if case .sendCancelPlan = $0 { true } else { false } })
    }

    @Test func aDryRunShowsThePlanAndTheFallback() {
        let d = parsedDefinition(seedLocalExample)
        let event = WorkflowEvent(id: "e", name: "workout.scheduled", occurredAt: utc("2024-06-01T12:00:00Z"))
        let fallback = WorkflowDryRun.walk(d, subscriber: Self.maya, event: event, start: utc("2024-06-01T12:00:00Z"))
        #expect(
            fallback.entries.map(\.kind).contains(.plan)
                && fallback.state.outcome("nudge")?.decision == .fallbackSent)
        #expect(fallback.entries.first { $0.kind == .plan }?.detail["wallClock"] == "2024-06-02T07:00")
        let acknowledged = WorkflowDryRun.walk(
            d, subscriber: Self.maya, event: event, acknowledged: ["nudge"], start: utc("2024-06-01T12:00:00Z"))
        #expect(acknowledged.state.outcome("nudge")?.decision == .scheduledOnDevice)
        #expect(!acknowledged.entries.contains { $0.kind == .send })
    }
}
