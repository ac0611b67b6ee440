import BuzzKitAudience
import BuzzKitWire

/// A workflow as a tenant defines it (`PUT /v1/workflows/{key}`): what starts a run, what cancels
/// it, and its named steps. Read one with `WorkflowDefinition.parse(_:)` (which validates every
/// rule and reports every problem with its JSON path); `canonicalJSON` is the stored form, so
/// saving the same definition again compares equal byte for byte.
///
/// A run keeps the definition version it started with: the runtime passes that version's
/// definition to every `WorkflowEngine.advance`.
public struct WorkflowDefinition: Sendable, Hashable {
    /// The event that starts a run for its subscriber (once per workflow and event id).
    public var trigger: WorkflowEventRule
    /// A matching event of the run's subscriber cancels the run.
    public var cancelOn: [WorkflowEventRule]
    public var steps: [WorkflowStep] { didSet { index = WorkflowStepIndex(steps) } }
    /// What the document said about `enabled` (nil: nothing). Not part of a version: the flag is
    /// the workflow's, so enabling or disabling makes no new version.
    public var enabled: Bool?
    /// Where each step sits, derived from `steps`.
    public private(set) var index: WorkflowStepIndex

    public init(
        trigger: WorkflowEventRule, cancelOn: [WorkflowEventRule] = [], steps: [WorkflowStep], enabled: Bool? = nil
    ) {
        self.trigger = trigger
        self.cancelOn = cancelOn
        self.steps = steps
        self.enabled = enabled
        index = WorkflowStepIndex(steps)
    }
}

/// `{event, where?}`: an event name and an optional condition on the event (`trigger`,
/// `cancelOn`).
public struct WorkflowEventRule: Sendable, Hashable {
    public var event: String
    public var condition: WorkflowExpression?

    public init(event: String, condition: WorkflowExpression? = nil) {
        self.event = event
        self.condition = condition
    }
}

/// An expression of the audience language in the document context, kept with its text (the
/// canonical form writes the text as given).
public struct WorkflowExpression: Sendable, Hashable {
    public var text: String
    public var expression: AudienceExpression

    public init(text: String, expression: AudienceExpression) {
        self.text = text
        self.expression = expression
    }
}

/// One named step. Names are unique in the whole definition (branches included): a run's
/// position, its outcomes, its timers and its sends' idempotency keys are all by step name.
public struct WorkflowStep: Sendable, Hashable {
    public var name: String
    public var kind: WorkflowStepKind

    public init(name: String, kind: WorkflowStepKind) {
        self.name = name
        self.kind = kind
    }
}

public indirect enum WorkflowStepKind: Sendable, Hashable {
    /// `wait {duration}`.
    case wait(WorkflowDuration)
    /// `waitUntil {time, timezone}`: the next occurrence of `time` after the step begins.
    case waitUntil(WallClockTime, WorkflowTimeZoneChoice)
    /// `waitFor {event, where?, timeout}`.
    case waitFor(WorkflowWaitFor)
    /// `branch {if, then, else}`.
    case branch(WorkflowBranch)
    /// `send {deliver, policy, content...}`.
    case send(WorkflowSend)
    /// `exit`: the run ends (completed).
    case exit
    /// `digest {window, key?, list?}`: the first step only; the trigger events of a key join one run.
    case digest(WorkflowDigest)
    /// `throttle {limit, window, key?}`: at most `limit` runs pass within a rolling window.
    case throttle(WorkflowThrottle)

    /// The kinds by name: the member name in JSON, and a step outcome's `kind`.
    public enum Name: String, Sendable, Hashable, CaseIterable {
        case wait, waitUntil, waitFor, branch, send, exit, digest, throttle
    }

    public var name: Name {
        switch self {
        case .wait: .wait
        case .waitUntil: .waitUntil
        case .waitFor: .waitFor
        case .branch: .branch
        case .send: .send
        case .exit: .exit
        case .digest: .digest
        case .throttle: .throttle
        }
    }

    /// Every kind's member name, in document order.
    public static let names = Name.allCases.map(\.rawValue)
}

/// `waitUntil.timezone`: the subscriber's own zone (else the tenant's default, else UTC), or a
/// fixed IANA zone.
public enum WorkflowTimeZoneChoice: Sendable, Hashable {
    case subscriber
    case named(String)

    public var text: String {
        switch self {
        case .subscriber: "subscriber"
        case .named(let name): name
        }
    }
}

public struct WorkflowWaitFor: Sendable, Hashable {
    public var event: String
    /// A condition on the arriving event (`event.data.x`), the trigger, the subscriber, earlier steps.
    public var condition: WorkflowExpression?
    public var timeout: WorkflowDuration

    public init(event: String, condition: WorkflowExpression? = nil, timeout: WorkflowDuration) {
        self.event = event
        self.condition = condition
        self.timeout = timeout
    }
}

public struct WorkflowBranch: Sendable, Hashable {
    public var condition: WorkflowCondition
    public var then: [WorkflowStep]
    public var otherwise: [WorkflowStep]

    public init(condition: WorkflowCondition, then: [WorkflowStep], otherwise: [WorkflowStep]) {
        self.condition = condition
        self.then = then
        self.otherwise = otherwise
    }
}

/// A branch's `if`: an expression (a JSON string) or a receipt condition object; `all`, `any`
/// and `not` combine them.
public indirect enum WorkflowCondition: Sendable, Hashable {
    case expression(WorkflowExpression)
    /// `{opened: "<send step>"}`: a `$notification.opened` of one of that step's messages reached
    /// the server from the run's subscriber.
    case opened(String)
    /// `{delivered: "<send step>"}`: likewise `$notification.delivered`.
    case delivered(String)
    /// `{matched: "<waitFor step>"}`: the wait ended with its event (not by its timeout).
    case matched(String)
    /// `{suppressed: "<send step>"}`: the send policy held that step's push back (any reason:
    /// preferences, a frequency cap, `policy: "drop"` in quiet hours).
    case suppressed(String)
    case all([WorkflowCondition])
    case any([WorkflowCondition])
    case not(WorkflowCondition)
}

/// How a send reaches the device.
public enum WorkflowDelivery: String, Sendable, Hashable, CaseIterable {
    /// An ordinary push at the moment.
    case push
    /// A local window (issue 16): the plan goes to the device as a silent push when the
    /// preceding `waitUntil` begins; a push is the fallback at the moment when no device
    /// acknowledged it. Only directly after a `waitUntil`.
    case local
}

/// Whether quiet hours move a send.
public enum QuietHoursPolicy: String, Sendable, Hashable, CaseIterable {
    /// A moment inside quiet hours moves to the window's end (the default).
    case respect
    /// Sent at its moment whatever the quiet hours.
    case ignore
    /// A moment inside quiet hours is not sent: the step's message is recorded with its
    /// deliveries suppressed (`quiet_hours`) and the run goes on. Push sends only.
    case drop
}

public struct WorkflowSend: Sendable, Hashable {
    /// The content members allowed in a send step besides `deliver` and `policy`.
    public static let contentMembers: Set<String> = [
        "title", "subtitle", "body", "data", "deepLink", "action", "actions", "image", "sound", "badge",
        "category", "threadId", "interruptionLevel", "priority"
    ]

    public var deliver: WorkflowDelivery
    public var policy: QuietHoursPolicy
    /// The content members as given, strings possibly holding `{{ ... }}` templates; rendered
    /// per run and then validated as a `MessageContent`.
    public var content: [String: JSONValue]

    public init(deliver: WorkflowDelivery = .push, policy: QuietHoursPolicy = .respect, content: [String: JSONValue]) {
        self.deliver = deliver
        self.policy = policy
        self.content = content
    }
}
