import BuzzKitWorkflows

/// What a run's inbox entry is: `workflow_run_inputs.kind` (its CHECK list is `allCases`, which a
/// test compares with the migrated table).
public enum WorkflowRunInputKind: String, Sendable, Hashable, CaseIterable {
    /// An event of the run's subscriber routed to it (cancelOn, waitFor).
    case event
    /// A cancel request (the route, a deleted workflow).
    case cancel
}

// The vocabularies written into statements as SQL literals, from their one type. A literal, not a
// parameter, where it must match a partial index's predicate (`status IN (\(WorkflowRunStatus.liveSQL))`):
// the planner cannot prove a parameter implies it. The raw values are fixed identifiers (no quote
// can reach the text).

extension WorkflowRunStatus {
    /// `'running'`.
    var sql: String { "'\(rawValue)'" }

    /// `'pending', 'running'`: the live statuses, as the partial indexes list them.
    static let liveSQL = live.map(\.sql).joined(separator: ", ")
}

extension WorkflowRunInputKind {
    /// `'event'`.
    var sql: String { "'\(rawValue)'" }
}
