import BuzzKitCore
import BuzzKitWorkflows

/// The workflow service's series on `/metrics`.
public struct WorkflowMetrics: Sendable {
    public let runsStarted: Counter
    public let runsCompleted: Counter
    public let runsCancelled: Counter
    public let runsFailed: Counter
    /// Runs a throttle stopped (issue 28).
    public let runsThrottled: Counter
    /// Digest windows opened: runs started by the first trigger event of a key (issue 28).
    public let digestsOpened: Counter
    /// Trigger events that joined an open digest instead of starting a run.
    public let digestJoins: Counter
    /// Triggers of an unknown subscriber: no run (also in `workflow_trigger_skips`).
    public let triggersSkipped: Counter
    /// Timers that fired (a run's timer found due and applied).
    public let timersDue: Counter
    /// Fired minus due, seconds.
    public let wakeupLateness: Histogram
    public let sends: Counter
    public let eventsRouted: Counter

    public init(_ registry: MetricsRegistry) {
        runsStarted = registry.counter("buzzkit_workflow_runs_started_total", help: "Workflow runs started")
        runsCompleted = registry.counter("buzzkit_workflow_runs_completed_total", help: "Workflow runs completed")
        runsCancelled = registry.counter("buzzkit_workflow_runs_cancelled_total", help: "Workflow runs cancelled")
        runsFailed = registry.counter("buzzkit_workflow_runs_failed_total", help: "Workflow runs failed")
        runsThrottled = registry.counter(
            "buzzkit_workflow_runs_throttled_total", help: "Workflow runs a throttle step stopped")
        digestsOpened = registry.counter(
            "buzzkit_workflow_digests_opened_total",
            help: "Digest windows opened (runs started by a digest's first event)")
        digestJoins = registry.counter(
            "buzzkit_workflow_digest_joins_total", help: "Trigger events that joined an open digest")
        triggersSkipped = registry.counter(
            "buzzkit_workflow_triggers_skipped_total",
            help: "Trigger events that started no run because their subscriber is unknown")
        timersDue = registry.counter(
            "buzzkit_workflow_timers_due_total", help: "Run timers that fell due and were applied")
        wakeupLateness = registry.histogram(
            "buzzkit_workflow_wakeup_lateness_seconds",
            help: "How late a run's timer was applied (fired minus due)",
            buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60])
        sends = registry.counter("buzzkit_workflow_sends_total", help: "Messages written by workflow send steps")
        eventsRouted = registry.counter(
            "buzzkit_workflow_events_routed_total",
            help: "Events put in a running run's inbox (cancelOn, waitFor)")
    }

    func finished(_ status: WorkflowRunStatus) {
        switch status {
        case .completed: runsCompleted.increment()
        case .cancelled: runsCancelled.increment()
        case .failed: runsFailed.increment()
        case .throttled: runsThrottled.increment()
        case .pending, .running: break
        }
    }
}
