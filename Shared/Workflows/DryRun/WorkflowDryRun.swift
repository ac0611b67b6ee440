import BuzzKitWire
import Foundation

/// A dry run: the definition walked for a sample (or real) subscriber and trigger event on a
/// simulated clock, through the same `WorkflowEngine` a live run uses. It sends nothing and
/// stores nothing: every send, timer and wait becomes an entry of the timeline.
///
/// Timers fire at their due time; a `waitFor` matches when `arrivals` has an event for that step
/// (delivered at the wait's start plus `after`), else it times out; a branch on receipts reads
/// `receipts` by send step name; a local window's plan counts as acknowledged when its send step is
/// in `acknowledged` (else the fallback push is shown). Message ids are `dry-run:<step>`.
///
/// A digest (issue 28) collects the trigger event and those of `events` (further trigger events,
/// each `after` the start) with the same key that arrive before its window closes; the others are
/// shown as starting a digest of their own. A throttle lets the run pass unless its step is in
/// `throttled`.
///
/// The send policy: `policy` holds the decision for each send step (by step name) as the caller
/// evaluated it without counting (`Policy.evaluate`); a step in it ends `suppressed` with that
/// reason, as a live run records it. `policy: "drop"` inside quiet hours needs nothing from it.
public enum WorkflowDryRun {
    /// An event the simulation delivers to a `waitFor`.
    public struct Arrival: Sendable, Hashable {
        public var event: WorkflowEvent
        /// How long after the wait begins it arrives (0: at once; past the timeout: the wait times out first).
        public var after: TimeInterval

        public init(event: WorkflowEvent, after: TimeInterval = 0) {
            self.event = event
            self.after = after
        }
    }

    public struct Entry: Sendable, Hashable {
        /// What an entry of the timeline is.
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            /// A step's outcome.
            case step
            /// What would be sent.
            case send
            /// A local window's plan.
            case plan
            /// A local send asked whether a device acknowledged its plan.
            case acknowledgement
            /// `bk.cancel` for a local plan.
            case cancel
            case timer
            /// A `waitFor` began waiting.
            case `await`
            /// A branch asked for receipts.
            case receipts
            /// An event was delivered to a `waitFor`.
            case event
            /// The run ended.
            case end
            /// A further trigger event joined the digest.
            case joined
            /// A further trigger event would start a digest of its own (another key, or after the close).
            case separate
            /// A throttle was asked whether the run may pass.
            case throttle
        }

        /// The simulated moment.
        public var at: Date
        public var step: String?
        public var kind: Kind
        public var detail: JSONValue
    }

    public struct Timeline: Sendable, Hashable {
        /// Whether the trigger's `where` holds for the sample (a live run starts only then; the
        /// walk goes on either way, to show the steps).
        public var triggerMatches: Bool
        public var entries: [Entry]
        /// The run state at the end of the walk.
        public var state: WorkflowRunState

        public var jsonValue: JSONValue {
            [
                "triggerMatches": .bool(triggerMatches),
                "status": .string(state.status.rawValue),
                "failure": state.failure.map { ["code": .string($0.code.rawValue), "message": .string($0.message)] }
                    ?? .null,
                "startedAt": .string(WorkflowTime.text(state.startedAt)),
                "endedAt": state.endedAt.map { .string(WorkflowTime.text($0)) } ?? .null,
                "timeline": .array(
                    entries.map { e in
                        [
                            "at": .string(WorkflowTime.text(e.at)), "step": e.step.map(JSONValue.string) ?? .null,
                            "kind": .string(e.kind.rawValue), "detail": e.detail
                        ]
                    }),
                "steps": .array(state.outcomes.map(\.jsonValue))
            ]
        }
    }

    /// Most inputs one walk applies (a definition has at most 100 steps, each a few inputs).
    static let maxInputs = 1000

    public static func walk(
        _ definition: WorkflowDefinition, subscriber: WorkflowSubscriber, event: WorkflowEvent,
        receipts: [String: WorkflowReceipts] = [:], arrivals: [String: Arrival] = [:],
        acknowledged: Set<String> = [], events: [Arrival] = [], throttled: Set<String> = [],
        policy: [String: SuppressionReason] = [:],
        start: Date, quietHours: QuietHours? = nil, defaultTimeZone: String? = nil
    ) -> Timeline {
        /// The policy's decisions recorded on the sends of `advance`, as the runtime does.
        func decided(_ advance: WorkflowAdvance) -> WorkflowAdvance {
            var advance = advance
            for case .send(let send) in advance.actions where send.suppressed == nil {
                advance.state = WorkflowEngine.recordPolicy(
                    advance.state, messageId: send.messageId, suppressed: policy[send.step])
            }
            return advance
        }
        func environment(_ now: Date) -> WorkflowEnvironment {
            WorkflowEnvironment(
                now: now, quietHours: quietHours, defaultTimeZone: defaultTimeZone,
                messageId: { _, step, purpose in
                    purpose == .send ? "dry-run:\(step)" : "dry-run:\(step):\(purpose.rawValue)"
                })
        }
        var entries: [Entry] = []
        func record(_ advance: WorkflowAdvance, at now: Date, previous: WorkflowRunState?) {
            let before = Set((previous?.outcomes ?? []).map(\.jsonValue))
            for outcome in advance.state.outcomes
            where !before.contains(outcome.jsonValue) && outcome.status != .running {
                entries.append(
                    Entry(at: outcome.endedAt ?? now, step: outcome.step, kind: .step, detail: outcome.jsonValue))
            }
            for action in advance.actions {
                switch action {
                case .send(let send):
                    var detail: [String: JSONValue] = [
                        "messageId": .string(send.messageId), "content": send.contentJSON,
                        "idempotencyKey": .string(send.idempotencyKey)
                    ]
                    if !send.missing.isEmpty { detail["missing"] = .array(send.missing.map(JSONValue.string)) }
                    if let reason = send.suppressed ?? policy[send.step] {
                        detail["suppressed"] = .string(reason.rawValue)
                    }
                    entries.append(Entry(at: now, step: send.step, kind: .send, detail: .object(detail)))
                case .scheduleTimer(let timer):
                    entries.append(
                        Entry(
                            at: now, step: advance.state.current, kind: .timer,
                            detail: ["token": .string(timer.token), "dueAt": .string(WorkflowTime.text(timer.dueAt))]))
                case .awaitEvent(let wait):
                    entries.append(
                        Entry(
                            at: now, step: wait.step, kind: .await,
                            detail: [
                                "event": .string(wait.event), "timeoutAt": .string(WorkflowTime.text(wait.timeoutAt))
                            ]))
                case .askReceipts(let step, let ids):
                    entries.append(
                        Entry(
                            at: now, step: step, kind: .receipts,
                            detail: ["messageIds": .array(ids.map(JSONValue.string))]))
                case .finished(let status):
                    var detail: [String: JSONValue] = ["status": .string(status.rawValue)]
                    if let failure = advance.state.failure {
                        detail["failure"] = .string("\(failure.code.rawValue): \(failure.message)")
                    }
                    entries.append(Entry(at: now, step: nil, kind: .end, detail: .object(detail)))
                case .sendLocalPlan(let plan):
                    let f = plan.plan.fireAt
                    let wall =
                        "\(f.year)-\(CivilCalendar.padded(f.month, 2))-\(CivilCalendar.padded(f.day, 2))T\(CivilCalendar.padded(f.hour, 2)):\(CivilCalendar.padded(f.minute, 2))"
                    var detail: [String: JSONValue] = [
                        "messageId": .string(plan.messageId), "localId": .string(plan.plan.id),
                        "fireAt": .string(WorkflowTime.text(plan.fireAt)),
                        "wallClock": .string(wall), "cancelOn": .array(plan.plan.cancelOn.map(JSONValue.string)),
                        "idempotencyKey": .string(plan.idempotencyKey)
                    ]
                    if let title = plan.plan.title { detail["title"] = .string(title) }
                    if let body = plan.plan.body { detail["body"] = .string(body) }
                    if let link = plan.plan.deepLink { detail["deepLink"] = .string(link) }
                    if !plan.missing.isEmpty { detail["missing"] = .array(plan.missing.map(JSONValue.string)) }
                    entries.append(Entry(at: now, step: plan.step, kind: .plan, detail: .object(detail)))
                case .askAcknowledgement(let step, let localId):
                    entries.append(
                        Entry(
                            at: now, step: step, kind: .acknowledgement,
                            detail: [
                                "localId": .string(localId),
                                "acknowledged": .bool(acknowledged.contains(step))
                            ]))
                case .sendCancelPlan(let cancel):
                    entries.append(Entry(at: now, step: nil, kind: .cancel, detail: ["runId": .string(cancel.runId)]))
                case .askThrottle(let check):
                    entries.append(
                        Entry(
                            at: now, step: check.step, kind: .throttle,
                            detail: [
                                "limit": .int(Int64(check.limit)), "window": .string(check.window.text),
                                "key": .string(check.key), "passed": .bool(!throttled.contains(check.step))
                            ]))
                case .clearTimer, .stopAwaitingEvent, .collectDigest:
                    break
                }
            }
        }

        let triggerMatches = WorkflowEngine.triggers(definition, event: event, subscriber: subscriber)
        var now = WorkflowTime.quantized(start)
        var advance = decided(
            WorkflowEngine.start(
                runId: "dry-run", workflowKey: "dry-run", version: 0, definition: definition,
                trigger: event, subscriber: subscriber, environment: environment(now)))
        record(advance, at: now, previous: nil)
        // The further trigger events: those of the run's digest key before its close join it.
        var collector = WorkflowDigestCollector(list: definition.digest?.digest.list)
        collector.add(event)
        if let window = advance.state.digest {
            for (i, arrival) in events.enumerated() {
                var joining = arrival.event
                if joining.id == event.id { joining.id += ":\(i + 1)" }
                let at = WorkflowTime.quantized(now.addingTimeInterval(max(0, arrival.after)))
                let key = WorkflowEngine.digestWindow(definition, trigger: joining, now: at)?.key ?? ""
                var detail: [String: JSONValue] = [
                    "id": .string(joining.id), "occurredAt": .string(WorkflowTime.text(joining.occurredAt)),
                    "key": .string(key)
                ]
                if key != window.key {
                    detail["reason"] = "another key: it starts a digest of its own"
                    entries.append(Entry(at: at, step: window.step, kind: .separate, detail: .object(detail)))
                } else if at >= window.closesAt {
                    detail["reason"] = "after the window closed: it starts the next digest"
                    entries.append(Entry(at: at, step: window.step, kind: .separate, detail: .object(detail)))
                } else {
                    entries.append(Entry(at: at, step: window.step, kind: .joined, detail: .object(detail)))
                    collector.add(joining)
                }
            }
        }
        var inputs = 0
        var delivered = Set<String>()
        while advance.state.status == .running, inputs < maxInputs {
            inputs += 1
            let state = advance.state
            let input: WorkflowInput
            if let localId = state.acknowledgementFor, let step = state.localPlan?.step {
                input = .acknowledgement(localId: localId, acknowledged: acknowledged.contains(step))
            } else if let step = state.throttleFor {
                let passed = !throttled.contains(step)
                var limit = 1
                if case .throttle(let t)? = definition.index[step]?.step.kind { limit = t.limit }
                input = .throttle(WorkflowThrottleAnswer(passed: passed, recent: passed ? 1 : limit))
            } else if state.digest?.collecting == true, let summary = collector.summary {
                input = .digestCollected(summary)
            } else if let ids = state.receiptsFor {
                // The branch's receipts: the sample's, by send step, for each message of that step.
                var answer: [String: WorkflowReceipts] = [:]
                for outcome in state.outcomes where ids.contains(where: outcome.messageIds.contains) {
                    if let r = receipts[outcome.step] { for id in outcome.messageIds { answer[id] = r } }
                }
                input = .receipts(answer)
            } else if let wait = state.awaiting, let arrival = arrivals[wait.step], !delivered.contains(wait.step),
                wait.since.addingTimeInterval(max(0, arrival.after)) < wait.timeoutAt
            {
                now = max(now, WorkflowTime.quantized(wait.since.addingTimeInterval(max(0, arrival.after))))
                var event = arrival.event
                if event.id == state.trigger.id { event.id += ":arrival" }
                entries.append(Entry(at: now, step: wait.step, kind: .event, detail: event.jsonValue))
                delivered.insert(wait.step)
                input = .event(event)
            } else if let timer = state.timer {
                now = max(now, timer.dueAt)
                input = .timerFired(token: timer.token)
            } else {
                break
            }
            let next = decided(
                WorkflowEngine.advance(state, definition: definition, input: input, environment: environment(now)))
            if !next.changed { continue }  // an arrival its `where` refused: the timeout comes next
            record(next, at: now, previous: state)
            advance = next
        }
        // In time order (a later trigger event that starts a digest of its own may come after the end).
        let ordered = entries.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }
        return Timeline(triggerMatches: triggerMatches, entries: ordered.map(\.element), state: advance.state)
    }
}
