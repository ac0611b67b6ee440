/// What a step decided, as its outcome records it (`decision`), conditions read it
/// (`steps.<name>.outcome`, `{matched: step}`) and the API shows it.
public enum WorkflowStepDecision: String, Sendable, Hashable, CaseIterable {
    /// A `wait` or `waitUntil` reached its moment.
    case waited
    /// A `waitFor`'s event arrived.
    case matched
    /// A `waitFor` reached its timeout.
    case timedOut = "timed_out"
    /// A branch took its `then` arm.
    case then
    /// A branch took its `else` arm.
    case otherwise = "else"
    case sent
    /// A send the policy held back (preferences, a frequency cap, `policy: "drop"` in quiet
    /// hours): its message is recorded with every delivery suppressed and the run goes on.
    case suppressed
    /// A local send's plan was acknowledged by a device: nothing sent at the moment.
    case scheduledOnDevice = "scheduled_on_device"
    /// A local send with no acknowledgement: the same content went as a push.
    case fallbackSent = "fallback_sent"
    case exited
    /// Ended by the run's cancellation.
    case cancelled
    /// Ended by the run's failure.
    case failed
    /// A digest's window closed: the run goes on with what it collected.
    case collected
    /// The run's trigger joined another run's open digest instead (a run started through the
    /// trigger route): it ends there, completed.
    case joined
    /// A throttle let the run through.
    case passed
    /// A throttle stopped the run (its status is `throttled`).
    case throttled
}
