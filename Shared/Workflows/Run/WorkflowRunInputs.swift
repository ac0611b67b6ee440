import BuzzKitWire
import Foundation

/// An event as a run sees it: the trigger, an event a `waitFor` or `cancelOn` decides on.
public struct WorkflowEvent: Sendable, Hashable {
    /// The event's id (client-generated, unique per tenant); the trigger's id is part of the
    /// run's identity (one run per workflow and trigger event).
    public var id: String
    public var name: String
    /// The event's `data` (an object).
    public var data: JSONValue
    public var occurredAt: Date

    public init(id: String, name: String, data: JSONValue = [:], occurredAt: Date) {
        self.id = id
        self.name = name
        self.data = data
        self.occurredAt = WorkflowTime.quantized(occurredAt)
    }
}

/// The subscriber as the run started (a snapshot: later changes do not reach a running run).
public struct WorkflowSubscriber: Sendable, Hashable {
    public var id: String
    /// A JSON object.
    public var attributes: JSONValue
    /// An IANA zone name, if known.
    public var timezone: String?
    public var locale: String?

    public init(id: String, attributes: JSONValue = [:], timezone: String? = nil, locale: String? = nil) {
        self.id = id
        self.attributes = attributes
        self.timezone = timezone
        self.locale = locale
    }
}

/// What the server has heard back about one message from the run's subscriber.
public struct WorkflowReceipts: Sendable, Hashable {
    /// A `$notification.delivered` with this message id arrived.
    public var delivered: Bool
    /// A `$notification.opened` with this message id arrived.
    public var opened: Bool

    public init(delivered: Bool = false, opened: Bool = false) {
        self.delivered = delivered
        self.opened = opened
    }
}

/// What happens to a run: the inputs of `WorkflowEngine.advance`.
public enum WorkflowInput: Sendable, Hashable {
    /// The run's timer fired. `token` is the `WorkflowTimer.token` it was scheduled with; a token
    /// that is not the run's current timer (already handled, replaced) changes nothing.
    case timerFired(token: String)
    /// An event of the run's subscriber whose name the run reacts to (`cancelOn` or the awaited
    /// `waitFor` event). The engine decides whether it matches; one that does not changes nothing.
    case event(WorkflowEvent)
    /// The answer to `askReceipts`: receipts by message id (a message absent from the map has none).
    case receipts([String: WorkflowReceipts])
    /// Cancel the run (the cancel route, a workflow deleted). Nothing once the run has ended.
    case cancel(reason: String)
    /// The answer to `askAcknowledgement`: whether any device of the subscriber tracked
    /// `$local.scheduled` with that `localId`.
    case acknowledgement(localId: String, acknowledged: Bool)
    /// The answer to `collectDigest`: what the window collected.
    case digestCollected(WorkflowDigestSummary)
    /// The answer to `askThrottle`.
    case throttle(WorkflowThrottleAnswer)
}

/// Whether a throttle let the run pass, and how many runs passed it within the window (this one
/// included when it passed).
public struct WorkflowThrottleAnswer: Sendable, Hashable {
    public var passed: Bool
    public var recent: Int

    public init(passed: Bool, recent: Int) {
        self.passed = passed
        self.recent = recent
    }
}

/// The tenant's settings and the clock, given to every `advance` (read fresh: a quiet-hours
/// change applies to the steps that begin after it).
public struct WorkflowEnvironment: Sendable {
    /// The moment of this advance (a timer's firing, an event's arrival).
    public var now: Date
    /// The tenant's quiet hours; nil: none.
    public var quietHours: QuietHours?
    /// The tenant's default IANA zone for subscribers without one (else UTC).
    public var defaultTimeZone: String?
    /// The id of the message a step sends, from the run id, the step name and the purpose.
    /// Deterministic is best (e.g. a name-based UUID): a step executed again then names the same
    /// message, and the runtime's unique key on it refuses the second.
    public var messageId: @Sendable (_ runId: String, _ step: String, _ purpose: WorkflowMessagePurpose) -> String

    public init(
        now: Date, quietHours: QuietHours? = nil, defaultTimeZone: String? = nil,
        messageId: @escaping @Sendable (_ runId: String, _ step: String, _ purpose: WorkflowMessagePurpose) -> String
    ) {
        self.now = WorkflowTime.quantized(now)
        self.quietHours = quietHours
        self.defaultTimeZone = defaultTimeZone
        self.messageId = messageId
    }
}

/// Why a step makes a message: part of the message's deterministic id (with the run and step).
public enum WorkflowMessagePurpose: String, Sendable, Hashable, CaseIterable {
    /// A send step's push.
    case send
    /// A local window's plan (a silent push with `bk.local`).
    case plan
    /// A local window's push when no device acknowledged the plan.
    case fallback
    /// `bk.cancel` for a plan of a run cancelled before its moment.
    case cancel
}

/// Instants in run state are whole microseconds, so a state read back from its JSON is equal
/// to the one written.
public enum WorkflowTime {
    public static func quantized(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(EventTimestamp.microseconds(date)) / 1_000_000)
    }

    public static func text(_ date: Date) -> String { EventTimestamp.format(date) }
}
