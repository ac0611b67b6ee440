/// How a step ended, as `WorkflowStepOutcome.decision` records it and the run API answers it
/// (`steps[].decision`, and `steps.<name>.outcome` in conditions).
///
/// The engine writes only these; the dashboard's list of them is generated from this type (the
/// gateway's `DashboardVocabulary`), so a new decision is shown without a copy to keep in step.
public enum WorkflowStepDecision: String, Sendable, Hashable, CaseIterable {
    /// A `wait` or `waitUntil` reached its time.
    case waited
    /// A `waitFor`'s event arrived.
    case matched
    /// A `waitFor` reached its timeout first.
    case timedOut = "timed_out"
    /// A `branch`'s condition held.
    case then
    /// A `branch`'s condition did not hold.
    case `else`
    /// A `send` wrote its message.
    case sent
    /// A local send whose plan a device acknowledged: nothing sent at the moment.
    case scheduledOnDevice = "scheduled_on_device"
    /// A local send no device acknowledged: sent as an ordinary push.
    case fallbackSent = "fallback_sent"
    /// An `exit` step.
    case exited
    /// The run was cancelled while the step ran.
    case cancelled
    /// The run failed while the step ran.
    case failed
}
