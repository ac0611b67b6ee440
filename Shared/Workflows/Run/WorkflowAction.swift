import BuzzKitWire
import Foundation

/// What `WorkflowEngine.advance` asks the runtime to carry out, in order. Commit the new state,
/// its timer and the sends' message rows in one transaction, then publish (an outbox): a crash
/// before the commit redoes the advance from the old state (same message ids, so nothing is sent
/// twice), a crash after it loses nothing.
public enum WorkflowAction: Sendable, Hashable {
    /// Set the run's one timer (replacing any earlier one); fire `.timerFired(token:)` at `dueAt`.
    case scheduleTimer(WorkflowTimer)
    /// The run has no timer any more (drop the earlier one).
    case clearTimer
    /// Send a message to the run's subscriber through the message path and ledger.
    case send(WorkflowSendAction)
    /// Route the subscriber's events named `event` (from `since` on) to the run as `.event`.
    case awaitEvent(WorkflowEventWait)
    /// The run no longer waits for an event.
    case stopAwaitingEvent(step: String)
    /// Look up the receipts of these messages from the run's subscriber and answer `.receipts`.
    case askReceipts(step: String, messageIds: [String])
    /// Issue 16: hand the plan to every active device of the subscriber as a silent push
    /// (`bk.local`, through the sender pool and the ledger, message `messageId`, key `idempotencyKey`).
    case sendLocalPlan(WorkflowLocalPlanAction)
    /// Issue 16: look up whether the subscriber tracked `$local.scheduled` with this `localId`
    /// (from any device) and answer `.acknowledgement`.
    case askAcknowledgement(step: String, localId: String)
    /// Issue 16: a run whose plan had not fired was cancelled centrally: send `bk.cancel` with the
    /// run id to the subscriber's devices (silent), once (`idempotencyKey`).
    case sendCancelPlan(WorkflowCancelPlanAction)
    /// Issue 28: the digest's window closed: make it unjoinable (later trigger events of its key
    /// start the next digest), read every event it collected, in order of arrival, and answer
    /// `.digestCollected` with their summary.
    case collectDigest(WorkflowDigestCollect)
    /// Issue 28: record a pass of the throttle for the run if fewer than `limit` passed within the
    /// window, atomically per (workflow, step, subscriber, key), and answer `.throttle`.
    case askThrottle(WorkflowThrottleCheck)
    /// The run ended: `completed`, `cancelled`, `failed` or `throttled` (the state says why).
    case finished(WorkflowRunStatus)
}

/// A digest's close: the window of (the run's workflow and subscriber, `key`).
public struct WorkflowDigestCollect: Sendable, Hashable {
    public var step: String
    public var key: String

    public init(step: String, key: String) {
        self.step = step
        self.key = key
    }
}

/// A throttle's question: may this run pass `step`?
public struct WorkflowThrottleCheck: Sendable, Hashable {
    public var step: String
    /// The rendered key (`""` without one).
    public var key: String
    public var limit: Int
    public var window: WorkflowDuration
    /// The run's identity (its trigger event's id): a pass asked for again is the same pass.
    public var passKey: String

    public init(step: String, key: String, limit: Int, window: WorkflowDuration, passKey: String) {
        self.step = step
        self.key = key
        self.limit = limit
        self.window = window
        self.passKey = passKey
    }
}

/// A message to send: the rendered content for the run's subscriber.
public struct WorkflowSendAction: Sendable, Hashable {
    public var step: String
    /// From `WorkflowEnvironment.messageId(runId, step, "send")`.
    public var messageId: String
    /// `<run id>:<step>` (`:fallback` for issue 16's fallback push): unique per run and step, so
    /// a step executed again never sends twice.
    public var idempotencyKey: String
    public var subscriberId: String
    public var delivery: WorkflowDelivery
    /// The rendered content members (what `POST /v1/messages` takes, without a target): store it
    /// as the message's content.
    public var contentJSON: JSONValue
    /// The same, validated.
    public var content: MessageContent
    /// Template paths that rendered empty.
    public var missing: [String]
    /// Decided by the engine already (`policy: "drop"` in quiet hours: `quietHours`): the runtime
    /// records the message suppressed without asking the policy. nil: the runtime asks
    /// `Policy.decide` and reports it with `WorkflowEngine.recordPolicy`.
    public var suppressed: SuppressionReason? = nil
}

/// The plan of a local window, to send as a silent push.
public struct WorkflowLocalPlanAction: Sendable, Hashable {
    public var step: String
    public var messageId: String
    /// `<run id>:<step>:plan`.
    public var idempotencyKey: String
    public var subscriberId: String
    /// `bk.local`: id, wall-clock `fireAt` in the subscriber's zone, title, body, data, deep link,
    /// the device-decidable `cancelOn` names, the message id.
    public var plan: LocalPlan
    /// The moment as an instant (the run's timer is due then too).
    public var fireAt: Date
    /// Template paths that rendered empty.
    public var missing: [String]
}

/// `bk.cancel` for a run's local notifications.
public struct WorkflowCancelPlanAction: Sendable, Hashable {
    public var runId: String
    /// The local send step whose plan it cancels (the message row's step).
    public var step: String
    public var messageId: String
    /// `<run id>:cancel`.
    public var idempotencyKey: String
    public var subscriberId: String
}

/// The new state and what to do.
public struct WorkflowAdvance: Sendable, Hashable {
    public var state: WorkflowRunState
    public var actions: [WorkflowAction]

    /// Whether anything changed (a stale timer or a non-matching event changes nothing: no write needed).
    public var changed: Bool
}
