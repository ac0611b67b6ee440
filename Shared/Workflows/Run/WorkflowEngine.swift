import BuzzKitAudience
import BuzzKitWire
import Foundation

/// The run state machine: pure, no I/O, time from `WorkflowEnvironment.now`.
///
/// ```swift
/// // an event arrived on bk:events
/// guard WorkflowEngine.triggers(definition, event: event, subscriber: subscriber) else { return }
/// var step = WorkflowEngine.start(runId: id, workflowKey: key, version: v, definition: definition,
///                                 trigger: event, subscriber: subscriber, environment: env)
/// // in one transaction: insert the run with step.state.jsonValue and step.state.dueAt,
/// // and the messages of step.actions' sends; then publish them.
/// // later, a timer fired (the run row locked FOR UPDATE, its definition version loaded):
/// step = WorkflowEngine.advance(state, definition: definition, input: .timerFired(token: t), environment: env)
/// ```
///
/// Each step runs at most once per run (step names are unique; the language has no loops), so
/// one advance walks at most the whole definition. A branch whose condition reads receipts asks
/// for them (`askReceipts`) and goes on when `.receipts` answers.
public enum WorkflowEngine {
    /// The SDK's acknowledgement of a local plan (`data.localId`).
    public static let localScheduledEvent = "$local.scheduled"

    /// Whether `event` starts a run of `definition` for `subscriber`: the trigger's name and its
    /// `where` (over `event`/`trigger`, the same event, and `subscriber`).
    public static func triggers(_ definition: WorkflowDefinition, event: WorkflowEvent, subscriber: WorkflowSubscriber)
        -> Bool
    {
        guard event.name == definition.trigger.event else { return false }
        guard let condition = definition.trigger.condition else { return true }
        let document: JSONValue = [
            "event": event.documentJSON, "trigger": event.documentJSON, "subscriber": subscriber.documentJSON
        ]
        return condition.expression.matches(document: document)
    }

    /// The digest window a trigger event of `definition` belongs to, when the workflow digests:
    /// its step, its key (rendered from the event) and when a window opened by it at `now` closes.
    /// The runtime opens the window with this; `start` gives the run the same.
    public static func digestWindow(_ definition: WorkflowDefinition, trigger: WorkflowEvent, now: Date)
        -> WorkflowDigestState?
    {
        guard let (step, digest) = definition.digest else { return nil }
        return WorkflowDigestState(
            step: step, key: digest.key?.render(trigger) ?? "",
            closesAt: WorkflowTime.quantized(now).addingTimeInterval(Double(digest.window.seconds)))
    }

    /// A new run, walked to its first wait (or its end).
    public static func start(
        runId: String, workflowKey: String, version: Int, definition: WorkflowDefinition,
        trigger: WorkflowEvent, subscriber: WorkflowSubscriber,
        environment: WorkflowEnvironment
    ) -> WorkflowAdvance {
        let state = WorkflowRunState(
            runId: runId, workflowKey: workflowKey, version: version, trigger: trigger,
            subscriber: subscriber, startedAt: environment.now)
        var machine = RunMachine(state: state, definition: definition, environment: environment)
        machine.run(from: definition.index.first)
        return machine.finish(from: nil)
    }

    /// A run whose trigger joined the open digest of `digestRunId` instead of opening one (a run
    /// the trigger route made): it ends at once, completed, its digest step saying where its
    /// event went.
    public static func joinedDigest(
        runId: String, workflowKey: String, version: Int, definition: WorkflowDefinition,
        trigger: WorkflowEvent, subscriber: WorkflowSubscriber, digestRunId: String, environment: WorkflowEnvironment
    ) -> WorkflowRunState {
        var state = WorkflowRunState(
            runId: runId, workflowKey: workflowKey, version: version, trigger: trigger,
            subscriber: subscriber, startedAt: environment.now)
        let window = digestWindow(definition, trigger: trigger, now: environment.now)
        var outcome = WorkflowStepOutcome(
            step: window?.step ?? definition.index.first ?? "digest", kind: .digest, startedAt: environment.now)
        outcome.status = .done
        outcome.endedAt = environment.now
        outcome.decision = .joined
        outcome.reason =
            "joined the open digest of run \(digestRunId)"
            + (window.map { $0.key.isEmpty ? "" : " (key '\($0.key)')" } ?? "")
        state.outcomes = [outcome]
        state.status = .completed
        state.endedAt = environment.now
        return state
    }

    /// Applies one input to a run. `definition` is the run's own version.
    public static func advance(
        _ state: WorkflowRunState, definition: WorkflowDefinition, input: WorkflowInput,
        environment: WorkflowEnvironment
    ) -> WorkflowAdvance {
        var machine = RunMachine(state: state, definition: definition, environment: environment)
        guard state.status == .running else { return WorkflowAdvance(state: state, actions: [], changed: false) }
        switch input {
        case .timerFired(let token):
            guard state.timer?.token == token else { return WorkflowAdvance(state: state, actions: [], changed: false) }
            machine.timerFired(token)
        case .event(let event):
            guard machine.event(event) else { return WorkflowAdvance(state: state, actions: [], changed: false) }
        case .receipts(let receipts):
            guard state.receiptsFor != nil else { return WorkflowAdvance(state: state, actions: [], changed: false) }
            machine.receipts(receipts)
        case .cancel(let reason):
            machine.cancel(reason)
        case .acknowledgement(let localId, let acknowledged):
            guard machine.acknowledgement(localId, acknowledged) else {
                return WorkflowAdvance(state: state, actions: [], changed: false)
            }
        case .digestCollected(let summary):
            guard state.digest?.collecting == true else {
                return WorkflowAdvance(state: state, actions: [], changed: false)
            }
            machine.digestCollected(summary)
        case .throttle(let answer):
            guard state.throttleFor != nil else { return WorkflowAdvance(state: state, actions: [], changed: false) }
            machine.throttle(answer)
        }
        return machine.finish(from: state)
    }
}

/// One advance: the state being changed and the actions gathered.
struct RunMachine {
    var state: WorkflowRunState
    let definition: WorkflowDefinition
    let environment: WorkflowEnvironment
    var actions: [WorkflowAction] = []
    private var now: Date { environment.now }

    init(state: WorkflowRunState, definition: WorkflowDefinition, environment: WorkflowEnvironment) {
        self.state = state
        self.definition = definition
        self.environment = environment
    }

    /// Adds the timer and event-wait changes (compared with `old`) and the end of the run.
    func finish(from old: WorkflowRunState?) -> WorkflowAdvance {
        var actions = self.actions
        if state.timer != old?.timer {
            actions.append(state.timer.map(WorkflowAction.scheduleTimer) ?? .clearTimer)
        }
        if state.awaiting != old?.awaiting {
            if let wait = state.awaiting {
                actions.append(.awaitEvent(wait))
            } else if let wait = old?.awaiting {
                actions.append(.stopAwaitingEvent(step: wait.step))
            }
        }
        if state.status != .running { actions.append(.finished(state.status)) }
        return WorkflowAdvance(state: state, actions: actions, changed: true)
    }

    // MARK: - Walking steps

    /// Runs steps from `name` until one waits or the run ends.
    mutating func run(from name: String?) {
        var next = name
        var budget = definition.index.names.count + 1
        while let stepName = next {
            budget -= 1
            guard budget >= 0 else { return fail(.loopLimit, "more steps than the definition has in one advance") }
            guard let entry = definition.index[stepName] else {
                return fail(.definitionMismatch, "the definition has no step '\(stepName)'")
            }
            state.current = stepName
            var outcome = WorkflowStepOutcome(step: stepName, kind: entry.step.kind.name, startedAt: now)
            switch entry.step.kind {
            case .wait(let duration):
                let due = now.addingTimeInterval(Double(duration.seconds))
                outcome.dueAt = WorkflowTime.quantized(due)
                outcome.reason = "waits \(duration.text)"
                state.outcomes.append(outcome)
                state.timer = WorkflowTimer(step: stepName, .wait, dueAt: due)
                return
            case .waitUntil(let time, let choice):
                let (zone, zoneName, source) = self.zone(choice)
                var due = WorkflowZones.next(time, after: now, in: zone)
                outcome.reason = "the next \(time) in \(zoneName) (\(source))"
                state.outcomes.append(outcome)
                // A local window: the plan goes to the devices now, for the moment (out of quiet hours).
                if let sendStep = entry.successor, case .send(let send)? = definition.index[sendStep]?.step.kind,
                    send.deliver == .local
                {
                    if send.policy == .respect, let quiet = environment.quietHours {
                        let (quietZone, quietZoneName, _) = WorkflowZones.subscriberZone(
                            state.subscriber.timezone,
                            tenantDefault: environment.defaultTimeZone)
                        if let end = quiet.shift(due, in: quietZone) {
                            setReason(
                                stepName,
                                "the next \(time) in \(zoneName) (\(source)); quiet hours \(quiet) in \(quietZoneName): moved from \(WorkflowTime.text(due)) to \(WorkflowTime.text(end))"
                            )
                            setShift(stepName, from: due)
                            due = end
                        }
                    }
                    guard plan(send, step: sendStep, fireAt: due) else { return }
                }
                if let i = state.outcomes.lastIndex(where: { $0.step == stepName }) {
                    state.outcomes[i].dueAt = WorkflowTime.quantized(due)
                }
                state.timer = WorkflowTimer(step: stepName, .until, dueAt: due)
                return
            case .waitFor(let waitFor):
                let timeout = now.addingTimeInterval(Double(waitFor.timeout.seconds))
                outcome.dueAt = WorkflowTime.quantized(timeout)
                outcome.reason = "waits for \(waitFor.event) up to \(waitFor.timeout.text)"
                state.outcomes.append(outcome)
                state.awaiting = WorkflowEventWait(step: stepName, event: waitFor.event, since: now, timeoutAt: timeout)
                state.timer = WorkflowTimer(step: stepName, .timeout, dueAt: timeout)
                return
            case .branch(let branch):
                state.outcomes.append(outcome)
                let needed = receiptMessageIds(branch.condition)
                if !needed.isEmpty {
                    state.receiptsFor = needed
                    actions.append(.askReceipts(step: stepName, messageIds: needed))
                    return
                }
                next = decide(stepName, branch, receipts: [:])
            case .send(let send) where send.deliver == .local && state.localPlan?.step == stepName:
                // The moment of a local window: did a device acknowledge the plan?
                state.outcomes.append(outcome)
                guard let plan = state.localPlan else { return }
                if plan.acknowledged {
                    guard endLocal(acknowledged: true) else { return }
                    next = entry.successor
                } else {
                    state.acknowledgementFor = plan.localId
                    actions.append(.askAcknowledgement(step: stepName, localId: plan.localId))
                    return
                }
            case .send(let send):
                if send.policy == .drop, let quiet = environment.quietHours {
                    let (zone, zoneName, _) = WorkflowZones.subscriberZone(
                        state.subscriber.timezone,
                        tenantDefault: environment.defaultTimeZone)
                    if quiet.shift(now, in: zone) != nil {
                        state.outcomes.append(outcome)
                        let why = "\(WorkflowTime.text(now)) is inside quiet hours \(quiet) in \(zoneName)"
                        guard perform(send, step: stepName, dropped: why) else { return }
                        next = entry.successor
                        continue
                    }
                }
                if send.policy == .respect, let quiet = environment.quietHours {
                    let (zone, zoneName, _) = WorkflowZones.subscriberZone(
                        state.subscriber.timezone,
                        tenantDefault: environment.defaultTimeZone)
                    if let end = quiet.shift(now, in: zone) {
                        outcome.dueAt = WorkflowTime.quantized(end)
                        outcome.shiftedFrom = now
                        outcome.reason =
                            "quiet hours \(quiet) in \(zoneName): moved from \(WorkflowTime.text(now)) to \(WorkflowTime.text(end))"
                        state.outcomes.append(outcome)
                        state.timer = WorkflowTimer(step: stepName, .quiet, dueAt: end)
                        return
                    }
                }
                state.outcomes.append(outcome)
                guard perform(send, step: stepName) else { return }
                next = entry.successor
            case .exit:
                outcome.status = .done
                outcome.endedAt = now
                outcome.decision = .exited
                state.outcomes.append(outcome)
                return end(.completed)
            case .digest(let digest):
                // The run's first step (validation): its window opened with the run, at `now`.
                guard var window = WorkflowEngine.digestWindow(definition, trigger: state.trigger, now: now),
                    window.step == stepName
                else { return fail(.definitionMismatch, "a digest that is not the workflow's first step") }
                if let open = state.digest, open.step == stepName { window = open }
                outcome.dueAt = window.closesAt
                outcome.reason =
                    "collects \(state.trigger.name) events "
                    + (digest.key == nil ? "of the subscriber" : "with the key '\(window.key)'")
                    + " for \(digest.window.text)"
                state.outcomes.append(outcome)
                state.digest = window
                state.timer = WorkflowTimer(step: stepName, .window, dueAt: window.closesAt)
                return
            case .throttle(let throttle):
                state.outcomes.append(outcome)
                state.throttleFor = stepName
                actions.append(
                    .askThrottle(
                        WorkflowThrottleCheck(
                            step: stepName, key: throttle.key?.render(state.trigger) ?? "", limit: throttle.limit,
                            window: throttle.window, passKey: state.trigger.id)))
                return
            }
        }
        end(.completed)
    }

    private func zone(_ choice: WorkflowTimeZoneChoice) -> (TimeZone, String, String) {
        switch choice {
        case .named(let name):
            if let zone = WorkflowZones.zone(named: name) { return (zone, name, "fixed") }
            return (WorkflowZones.utc, "UTC", "UTC: \(name) is unknown")
        case .subscriber:
            let z = WorkflowZones.subscriberZone(state.subscriber.timezone, tenantDefault: environment.defaultTimeZone)
            return (z.zone, z.name, z.source)
        }
    }

    private mutating func setReason(_ step: String, _ reason: String) {
        if let i = state.outcomes.lastIndex(where: { $0.step == step }) { state.outcomes[i].reason = reason }
    }

    private mutating func setShift(_ step: String, from date: Date) {
        if let i = state.outcomes.lastIndex(where: { $0.step == step }) {
            state.outcomes[i].shiftedFrom = WorkflowTime.quantized(date)
        }
    }

    /// Marks the current step's outcome.
    private mutating func endCurrent(
        _ decision: WorkflowStepDecision, reason: String? = nil, status: WorkflowStepOutcome.Status = .done
    ) {
        guard let i = state.outcomes.lastIndex(where: { $0.step == state.current }) else { return }
        state.outcomes[i].status = status
        state.outcomes[i].endedAt = now
        state.outcomes[i].decision = decision
        if let reason { state.outcomes[i].reason = reason }
    }

    private mutating func end(_ status: WorkflowRunStatus) {
        state.status = status
        state.endedAt = now
        state.current = nil
        state.timer = nil
        state.awaiting = nil
        state.receiptsFor = nil
        state.localPlan = nil
        state.acknowledgementFor = nil
        state.throttleFor = nil
        if state.digest?.collecting == true { state.digest?.collecting = false }
    }

    private mutating func fail(_ code: WorkflowRunFailure.Code, _ message: String) {
        if state.current != nil { endCurrent(.failed, reason: message, status: .interrupted) }
        state.failure = WorkflowRunFailure(code: code, message: message)
        end(.failed)
    }

    // MARK: - Inputs

    mutating func timerFired(_ token: String) {
        state.timer = nil
        guard let step = state.current, let entry = definition.index[step] else {
            return fail(.definitionMismatch, "the run's timer names no current step")
        }
        switch entry.step.kind {
        case .wait, .waitUntil:
            endCurrent(.waited)
            run(from: entry.successor)
        case .waitFor:
            state.awaiting = nil
            endCurrent(.timedOut)
            run(from: entry.successor)
        case .send(let send):
            guard perform(send, step: step) else { return }
            run(from: entry.successor)
        case .digest:
            guard state.digest?.step == step else {
                return fail(.definitionMismatch, "the digest's window closed without its state")
            }
            state.digest?.collecting = true
            actions.append(.collectDigest(WorkflowDigestCollect(step: step, key: state.digest?.key ?? "")))
        default:
            fail(.definitionMismatch, "a timer fired in step '\(step)', which has none")
        }
    }

    // MARK: - Digest and throttle (issue 28)

    mutating func digestCollected(_ summary: WorkflowDigestSummary) {
        guard let step = state.current, let entry = definition.index[step], case .digest = entry.step.kind else {
            return fail(.definitionMismatch, "a digest's events arrived while the run is in no digest")
        }
        state.digest?.collecting = false
        state.digest?.summary = summary
        let key = state.digest.map { $0.key.isEmpty ? "" : " with the key '\($0.key)'" } ?? ""
        endCurrent(.collected, reason: "collected \(summary.count) \(summary.count == 1 ? "event" : "events")\(key)")
        run(from: entry.successor)
    }

    mutating func throttle(_ answer: WorkflowThrottleAnswer) {
        state.throttleFor = nil
        guard let step = state.current, let entry = definition.index[step],
            case .throttle(let throttle) = entry.step.kind
        else { return fail(.definitionMismatch, "a throttle's answer arrived while the run is in no throttle") }
        var key = ""
        if let template = throttle.key { key = " and key '\(template.render(state.trigger))'" }
        if answer.passed {
            endCurrent(
                .passed,
                reason:
                    "run \(answer.recent) of at most \(throttle.limit) for this subscriber\(key) within \(throttle.window.text)"
            )
            run(from: entry.successor)
        } else {
            let reason =
                "\(throttle.limit) \(throttle.limit == 1 ? "run" : "runs") of this workflow passed '\(step)' for this "
                + "subscriber\(key) within \(throttle.window.text) (the limit)"
            endCurrent(.throttled, reason: reason)
            state.throttleReason = reason
            end(.throttled)
        }
    }

    /// Whether the event changed the run (a cancellation, the awaited event, a plan's acknowledgement).
    mutating func event(_ event: WorkflowEvent) -> Bool {
        guard event.id != state.trigger.id else { return false }
        let document = self.document(event: event)
        for (i, rule) in definition.cancelOn.enumerated() where rule.event == event.name {
            if rule.condition?.expression.matches(document: document) ?? true {
                // A rule with a `where` is decided here only: tell the devices. One without is on
                // the plan too, and the device removed the notification itself.
                cancel(
                    "cancelOn[\(i)]: \(event.name)" + (rule.condition.map { " where \($0.text)" } ?? ""),
                    central: rule.condition != nil)
                return true
            }
        }
        if event.name == WorkflowEngine.localScheduledEvent, let plan = state.localPlan,
            event.data["localId"]?.stringValue == plan.localId
        {
            guard !plan.acknowledged || state.acknowledgementFor == plan.localId else { return false }
            state.localPlan?.acknowledged = true
            if state.acknowledgementFor == plan.localId, let step = state.current, let entry = definition.index[step] {
                state.acknowledgementFor = nil
                guard endLocal(acknowledged: true) else { return true }
                run(from: entry.successor)
            }
            return true
        }
        guard let wait = state.awaiting, wait.event == event.name, let entry = definition.index[wait.step],
            case .waitFor(let waitFor) = entry.step.kind
        else { return false }
        if let condition = waitFor.condition, !condition.expression.matches(document: document) { return false }
        state.awaiting = nil
        state.timer = nil
        if let i = state.outcomes.lastIndex(where: { $0.step == wait.step }) { state.outcomes[i].event = event }
        endCurrent(.matched, reason: "\(event.name) arrived (event \(event.id))")
        run(from: entry.successor)
        return true
    }

    mutating func receipts(_ receipts: [String: WorkflowReceipts]) {
        state.receiptsFor = nil
        guard let step = state.current, let entry = definition.index[step], case .branch(let branch) = entry.step.kind
        else {
            return fail(.definitionMismatch, "receipts arrived while the run is in no branch")
        }
        run(from: decide(step, branch, receipts: receipts))
    }

    /// `central`: decided on the server (the route, a deleted workflow, a `cancelOn` with a `where`):
    /// a plan that has not fired yet is cancelled on the devices with `bk.cancel`.
    mutating func cancel(_ reason: String, central: Bool = true) {
        if central, let plan = state.localPlan, state.acknowledgementFor == nil, state.current != plan.step {
            actions.append(
                .sendCancelPlan(
                    WorkflowCancelPlanAction(
                        runId: state.runId, step: plan.step,
                        messageId: environment.messageId(state.runId, plan.step, .cancel),
                        idempotencyKey: "\(state.runId):cancel", subscriberId: state.subscriber.id)))
        }
        if state.current != nil { endCurrent(.cancelled, reason: reason, status: .interrupted) }
        state.cancelReason = reason
        end(.cancelled)
    }

    mutating func acknowledgement(_ localId: String, _ acknowledged: Bool) -> Bool {
        guard state.acknowledgementFor == localId, let step = state.current, let entry = definition.index[step] else {
            return false
        }
        state.acknowledgementFor = nil
        guard endLocal(acknowledged: acknowledged || state.localPlan?.acknowledged == true) else { return true }
        run(from: entry.successor)
        return true
    }

    // MARK: - Local windows (issue 16)

    /// Renders the local send's content at the start of its window and hands out the plan; false
    /// when the run failed.
    private mutating func plan(_ send: WorkflowSend, step: String, fireAt: Date) -> Bool {
        var missing: [String] = []
        let rendered = WorkflowTemplate.render(.object(send.content), document(event: nil), missing: &missing)
        guard case .success(let content) = MessageContent.validate(rendered) else {
            if case .failure(let rejection) = MessageContent.validate(rendered) {
                fail(
                    .contentInvalid,
                    "the rendered content is invalid: " + rejection.issues.map(\.description).joined(separator: "; "))
            }
            return false
        }
        let localId = "\(state.runId):\(step)"
        let messageId = environment.messageId(state.runId, step, .plan)
        let zone = WorkflowZones.subscriberZone(state.subscriber.timezone, tenantDefault: environment.defaultTimeZone)
            .zone
        let c = WorkflowZones.components(fireAt, in: zone)
        let plan = LocalPlan(
            id: localId,
            fireAt: LocalPlan.FireDate(
                year: c.year, month: c.month, day: c.day, hour: c.hour,
                minute: c.minute, second: c.second),
            title: content.title, body: content.body, data: content.data, deepLink: content.deepLink,
            cancelOn: definition.deviceCancelEvents, messageId: messageId)
        actions.append(
            .sendLocalPlan(
                WorkflowLocalPlanAction(
                    step: step, messageId: messageId, idempotencyKey: "\(state.runId):\(step):plan",
                    subscriberId: state.subscriber.id,
                    plan: plan, fireAt: WorkflowTime.quantized(fireAt), missing: missing)))
        state.localPlan = WorkflowLocalPlanState(
            step: step, localId: localId, messageId: messageId, fireAt: fireAt,
            content: rendered, missing: missing)
        return true
    }

    /// Ends a local send at its moment: acknowledged, nothing is sent; else the same content goes
    /// as an ordinary push (the fallback). False when the run failed.
    private mutating func endLocal(acknowledged: Bool) -> Bool {
        guard let plan = state.localPlan, let i = state.outcomes.lastIndex(where: { $0.step == plan.step }) else {
            fail(.definitionMismatch, "a local send ended without its plan")
            return false
        }
        state.localPlan = nil
        state.outcomes[i].missing = plan.missing
        state.outcomes[i].messageIds = [plan.messageId]
        if acknowledged {
            endCurrent(
                .scheduledOnDevice,
                reason: "a device acknowledged the plan \(plan.localId): nothing sent at the moment")
            return true
        }
        guard case .success(let content) = MessageContent.validate(plan.content) else {
            fail(.contentInvalid, "the plan's content is invalid")
            return false
        }
        let messageId = environment.messageId(state.runId, plan.step, .fallback)
        actions.append(
            .send(
                WorkflowSendAction(
                    step: plan.step, messageId: messageId, idempotencyKey: "\(state.runId):\(plan.step):fallback",
                    subscriberId: state.subscriber.id, delivery: .push, contentJSON: plan.content, content: content,
                    missing: plan.missing)))
        state.outcomes[i].messageIds.append(messageId)
        endCurrent(.fallbackSent, reason: "no device confirmed the schedule of \(plan.localId): sent as a push")
        return true
    }

    // MARK: - Branches

    /// Decides the branch, records why, and returns the step to go to.
    private mutating func decide(_ step: String, _ branch: WorkflowBranch, receipts: [String: WorkflowReceipts])
        -> String?
    {
        let document = self.document(event: nil)
        let value = evaluate(branch.condition, document, receipts)
        if let i = state.outcomes.lastIndex(where: { $0.step == step }),
            !receipts.isEmpty || !receiptMessageIds(branch.condition).isEmpty
        {
            state.outcomes[i].receipts = receipts
        }
        endCurrent(value ? .then : .otherwise, reason: "\(branch.condition.jsonValue.jsonString) is \(value)")
        return definition.index.entry(of: step, then: value)
    }

    private func evaluate(_ condition: WorkflowCondition, _ document: JSONValue, _ receipts: [String: WorkflowReceipts])
        -> Bool
    {
        switch condition {
        case .expression(let e): return e.expression.matches(document: document)
        case .opened(let step): return messages(of: step).contains { receipts[$0]?.opened == true }
        case .delivered(let step): return messages(of: step).contains { receipts[$0]?.delivered == true }
        case .matched(let step): return state.outcome(step)?.decision == .matched
        case .suppressed(let step): return state.outcome(step)?.suppressed != nil
        case .all(let items): return items.allSatisfy { evaluate($0, document, receipts) }
        case .any(let items): return items.contains { evaluate($0, document, receipts) }
        case .not(let inner): return !evaluate(inner, document, receipts)
        }
    }

    private func messages(of step: String) -> [String] { state.outcome(step)?.messageIds ?? [] }

    /// The message ids whose receipts the condition reads (those of sends that ran).
    func receiptMessageIds(_ condition: WorkflowCondition) -> [String] {
        var ids: [String] = []
        func collect(_ c: WorkflowCondition) {
            switch c {
            case .opened(let step), .delivered(let step):
                for id in messages(of: step) where !ids.contains(id) { ids.append(id) }
            case .suppressed(let step):
                // The policy's decision reaches the state after the runtime carried the send out
                // (`recordPolicy`): asking puts the branch after that, even in the same advance.
                for id in messages(of: step) where !ids.contains(id) { ids.append(id) }
            case .all(let items), .any(let items): items.forEach(collect)
            case .not(let inner): collect(inner)
            case .expression, .matched: break
            }
        }
        collect(condition)
        return ids
    }

    // MARK: - Sends

    /// Renders and validates the content and queues the send; false when the run failed.
    /// `dropped`: `policy: "drop"` inside quiet hours (why): the message is recorded suppressed.
    private mutating func perform(_ send: WorkflowSend, step: String, dropped: String? = nil) -> Bool {
        var missing: [String] = []
        let rendered = WorkflowTemplate.render(.object(send.content), document(event: nil), missing: &missing)
        switch MessageContent.validate(rendered) {
        case .failure(let rejection):
            if let i = state.outcomes.lastIndex(where: { $0.step == step }) { state.outcomes[i].missing = missing }
            fail(
                .contentInvalid,
                "the rendered content is invalid: "
                    + rejection.issues.map(\.description).joined(separator: "; "))
            return false
        case .success(let content):
            let messageId = environment.messageId(state.runId, step, .send)
            actions.append(
                .send(
                    WorkflowSendAction(
                        step: step, messageId: messageId, idempotencyKey: "\(state.runId):\(step)",
                        subscriberId: state.subscriber.id, delivery: .push, contentJSON: rendered, content: content,
                        missing: missing, suppressed: dropped == nil ? nil : .quietHours)))
            var reason = send.deliver == .local ? "sent as a push: the local window had no plan" : "sent"
            if let dropped { reason = "suppressed: quiet_hours (\(dropped); the policy drops it)" }
            if !missing.isEmpty { reason += "; rendered empty: " + missing.joined(separator: ", ") }
            if let i = state.outcomes.lastIndex(where: { $0.step == step }) {
                state.outcomes[i].messageIds.append(messageId)
                state.outcomes[i].missing = missing
                if dropped != nil { state.outcomes[i].suppressed = .quietHours }
            }
            endCurrent(dropped == nil ? .sent : .suppressed, reason: reason)
            return true
        }
    }

    // MARK: - The document conditions and templates read

    func document(event: WorkflowEvent?) -> JSONValue {
        var steps: [String: JSONValue] = [:]
        for outcome in state.outcomes {
            var o: [String: JSONValue] = [:]
            if let decision = outcome.decision { o["outcome"] = .string(decision.rawValue) }
            if let event = outcome.event { o["event"] = event.documentJSON }
            steps[outcome.step] = .object(o)
        }
        var document: [String: JSONValue] = [
            "trigger": state.trigger.documentJSON, "subscriber": state.subscriber.documentJSON, "steps": .object(steps)
        ]
        if let summary = state.digest?.summary { document["digest"] = summary.documentJSON }
        if let event { document["event"] = event.documentJSON }
        return .object(document)
    }
}

extension WorkflowEvent {
    /// `{id, name, data}` as conditions and templates read it.
    var documentJSON: JSONValue { ["id": .string(id), "name": .string(name), "data": data] }
}

extension WorkflowSubscriber {
    /// `{id, attributes, timezone?, locale?}`.
    var documentJSON: JSONValue {
        var o: [String: JSONValue] = ["id": .string(id), "attributes": attributes]
        if let timezone { o["timezone"] = .string(timezone) }
        if let locale { o["locale"] = .string(locale) }
        return .object(o)
    }
}
