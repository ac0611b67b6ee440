/// Where a run is in its life: the one vocabulary of the run state's `status`, of the runs
/// table's `status` column (its CHECK list, which a test compares with `allCases`) and of the API.
public enum WorkflowRunStatus: String, Sendable, Hashable, CaseIterable {
    /// Accepted by the trigger route and not yet started by a workflow replica: a runs-table row
    /// only (it has no state yet; the engine never produces it). The API shows it as `running`.
    case pending
    case running
    case completed
    case cancelled
    case failed
    /// Stopped at a `throttle` step: the subscriber's runs had passed it `limit` times within its
    /// window (the state's `throttleReason` says so).
    case throttled

    /// The statuses of a run that may still change (a replica advances it, events reach it).
    public static let live: [WorkflowRunStatus] = [.pending, .running]

    /// The statuses the API shows and filters on (`pending` reads as `running`).
    public static let shown: [WorkflowRunStatus] = allCases.filter { $0 != .pending }

    /// The status as the API shows it.
    public var shown: WorkflowRunStatus { self == .pending ? .running : self }

    /// Whether the run has ended (it never changes again).
    public var hasEnded: Bool { !Self.live.contains(self) }
}
