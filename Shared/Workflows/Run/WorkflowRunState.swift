import BuzzKitWire
import Foundation

/// Where a run stands: the value the runtime keeps in a jsonb column (`jsonValue` /
/// `init(json:)`), written in the same transaction as the run's timer, so a step's effects and
/// the state that says it happened commit together.
///
/// A run waits on at most one timer at a time (`timer`), plus possibly an event (`awaiting`,
/// with the timer as its timeout) or receipts (`receiptsFor`). Its position is `current`, the
/// name of the step it is in (step names are unique in a definition).
public struct WorkflowRunState: Sendable, Hashable {
    /// The JSON layout's version (`"format": 1`).
    public static let format = 1

    public var runId: String
    public var workflowKey: String
    /// The definition version the run started with and keeps.
    public var version: Int
    public var status: WorkflowRunStatus
    /// Set when `status` is `failed`.
    public var failure: WorkflowRunFailure?
    /// Why the run was cancelled (`cancelOn[0]: workout.completed`, the route's reason).
    public var cancelReason: String?
    public var trigger: WorkflowEvent
    public var subscriber: WorkflowSubscriber
    public var startedAt: Date
    public var endedAt: Date?
    /// The step the run is in; nil once it ended.
    public var current: String?
    /// One per step begun, in the order they began.
    public var outcomes: [WorkflowStepOutcome]
    /// The run's one timer; nil when none is due.
    public var timer: WorkflowTimer?
    /// The event a `waitFor` waits for.
    public var awaiting: WorkflowEventWait?
    /// Message ids whose receipts a branch asked for and waits on.
    public var receiptsFor: [String]?
    /// The local window's plan, from the start of its `waitUntil` until its send step ends.
    public var localPlan: WorkflowLocalPlanState?
    /// The plan id whose acknowledgement the local send asked for and waits on.
    public var acknowledgementFor: String?
    /// The digest the run started with (issue 28): its key and window, then what it collected.
    public var digest: WorkflowDigestState?
    /// The throttle step that asked whether the run may pass and waits on the answer.
    public var throttleFor: String?
    /// Why a throttle stopped the run (status `throttled`).
    public var throttleReason: String?

    public init(
        runId: String, workflowKey: String, version: Int, trigger: WorkflowEvent, subscriber: WorkflowSubscriber,
        startedAt: Date
    ) {
        self.runId = runId
        self.workflowKey = workflowKey
        self.version = version
        status = .running
        self.trigger = trigger
        self.subscriber = subscriber
        self.startedAt = WorkflowTime.quantized(startedAt)
        outcomes = []
    }

    /// The outcome of a step, if it began.
    public func outcome(_ step: String) -> WorkflowStepOutcome? { outcomes.last { $0.step == step } }

    /// When the run's timer is due (the runtime's timers column).
    public var dueAt: Date? { timer?.dueAt }

    /// Every message id the run's sends used.
    public var messageIds: [String] { outcomes.flatMap(\.messageIds) }
}

/// Why a run failed: a stable code and a message.
public struct WorkflowRunFailure: Sendable, Hashable {
    /// The failure codes: one list, the run state's and the runs table's `failure_code`.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A rendered send broke the content rules.
        case contentInvalid = "content_invalid"
        /// The state names a step the definition lacks (or a step in the wrong kind).
        case definitionMismatch = "definition_mismatch"
        /// More steps in one advance than the definition has: a bug.
        case loopLimit = "loop_limit"
        /// The run's definition version cannot be read (the runtime's, not the engine's).
        case definitionMissing = "definition_missing"
        /// A pending run's subscriber does not exist (the runtime's; such a run has no state).
        case subscriberUnknown = "subscriber_unknown"
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

/// The run's one timer. `token` (`<step>:<purpose>`) comes back in `.timerFired`; a stale token is
/// ignored, which makes a timer firing twice harmless.
public struct WorkflowTimer: Sendable, Hashable {
    /// What a timer is for: the second half of its token.
    public enum Purpose: String, Sendable, Hashable, CaseIterable {
        /// A `wait`'s end.
        case wait
        /// A `waitUntil`'s moment.
        case until
        /// A `waitFor`'s timeout.
        case timeout
        /// A send moved out of quiet hours.
        case quiet
        /// A digest's window closes.
        case window
    }

    public var token: String
    public var dueAt: Date

    public init(token: String, dueAt: Date) {
        self.token = token
        self.dueAt = WorkflowTime.quantized(dueAt)
    }

    /// The timer of `step` for `purpose` (token `<step>:<purpose>`).
    public init(step: String, _ purpose: Purpose, dueAt: Date) {
        self.init(token: "\(step):\(purpose.rawValue)", dueAt: dueAt)
    }
}

/// A `waitFor`'s wait: route the subscriber's events named `event` to the run. The runtime also
/// hands over those that arrived from `since` on (the wait's start), so an event arriving while
/// the wait was being set up is not missed; the `where` is the engine's to decide.
public struct WorkflowEventWait: Sendable, Hashable {
    public var step: String
    public var event: String
    public var since: Date
    public var timeoutAt: Date

    public init(step: String, event: String, since: Date, timeoutAt: Date) {
        self.step = step
        self.event = event
        self.since = WorkflowTime.quantized(since)
        self.timeoutAt = WorkflowTime.quantized(timeoutAt)
    }
}

/// A local window's plan (issue 16): handed to the devices when the `waitUntil` began; at the
/// moment the send step reads whether a device acknowledged it (`$local.scheduled`).
public struct WorkflowLocalPlanState: Sendable, Hashable {
    /// The local send step.
    public var step: String
    /// `<run id>:<step>`: the notification's identifier on the device (`bk.cancel` with the run id
    /// matches it by prefix) and the `localId` of `$local.scheduled`.
    public var localId: String
    /// The plan's message (the silent push); opens of the local notification carry it.
    public var messageId: String
    /// The moment (already shifted out of quiet hours unless the policy is `ignore`).
    public var fireAt: Date
    /// The rendered content members, sent again as the fallback push.
    public var content: JSONValue
    public var missing: [String]
    /// A `$local.scheduled` with `localId` arrived.
    public var acknowledged: Bool

    public init(
        step: String, localId: String, messageId: String, fireAt: Date, content: JSONValue, missing: [String],
        acknowledged: Bool = false
    ) {
        self.step = step
        self.localId = localId
        self.messageId = messageId
        self.fireAt = WorkflowTime.quantized(fireAt)
        self.content = content
        self.missing = missing
        self.acknowledged = acknowledged
    }
}

/// A digest run's window: the key its trigger events share, when the window closes, and once it
/// closed, what it collected.
public struct WorkflowDigestState: Sendable, Hashable {
    /// The digest step (the workflow's first).
    public var step: String
    /// The rendered key (`""` without one: the subscriber alone).
    public var key: String
    public var closesAt: Date
    /// The window closed and the run waits for the collected events (`collectDigest`).
    public var collecting: Bool
    /// What the window collected; nil until it closed.
    public var summary: WorkflowDigestSummary?

    public init(
        step: String, key: String, closesAt: Date, collecting: Bool = false, summary: WorkflowDigestSummary? = nil
    ) {
        self.step = step
        self.key = key
        self.closesAt = WorkflowTime.quantized(closesAt)
        self.collecting = collecting
        self.summary = summary
    }
}

/// What happened in one step: times, the decision and why, the messages it sent.
public struct WorkflowStepOutcome: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// Begun and not yet over (waiting).
        case running
        case done
        /// Ended by the run's cancellation or failure.
        case interrupted
    }

    public var step: String
    public var kind: WorkflowStepKind.Name
    public var status: Status
    public var startedAt: Date
    /// When the step is due to go on (a wait's end, a waitFor's timeout, a send moved out of quiet hours).
    public var dueAt: Date?
    public var endedAt: Date?
    /// What the step decided (`WorkflowStepDecision`); nil while it runs.
    public var decision: WorkflowStepDecision?
    /// Why, in words: the zone a time was read in, the branch condition's value, a quiet-hours shift.
    public var reason: String?
    /// The messages the step sent.
    public var messageIds: [String]
    /// Template paths that had no value and rendered empty.
    public var missing: [String]
    /// The event a `waitFor` matched.
    public var event: WorkflowEvent?
    /// A send moved out of quiet hours: the moment it was due before the shift.
    public var shiftedFrom: Date?
    /// A send the policy held back (decision `suppressed`): why. Its message is recorded with
    /// every delivery suppressed; `{suppressed: step}` reads it.
    public var suppressed: SuppressionReason?
    /// The receipts a branch decided on, by message id.
    public var receipts: [String: WorkflowReceipts]?

    public init(step: String, kind: WorkflowStepKind.Name, startedAt: Date) {
        self.step = step
        self.kind = kind
        status = .running
        self.startedAt = startedAt
        messageIds = []
        missing = []
    }
}
