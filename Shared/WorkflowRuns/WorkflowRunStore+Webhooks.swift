import BuzzKitWebhooks
import BuzzKitWorkflows

/// The webhook events of runs that end (`workflow_run.completed`, `.failed`, `.cancelled`),
/// enqueued through the seam (`WebhookOutbox`) by the statements that write a run's end (`save`,
/// `insertStarted`, `failPending`), so an event is committed with the run's end or not at all.
/// A run ends once (an ended run is never claimed, saved or started again), and only a statement
/// that finds it live (`pending`, `running`) or inserts it enqueues: a transaction run again after
/// a crash, or a trigger redelivered, enqueues nothing twice. The id is derived from the run's.
///
/// A run that ends `throttled` (a throttle step stopped it) reports nothing: it is not one of the
/// types an endpoint subscribes to, and the run sent nothing.
extension WorkflowRunStatus {
    /// The event a run ending with this status reports (nil: none).
    public var webhookEventType: WebhookEventType? {
        switch self {
        case .completed: .workflowRunCompleted
        case .failed: .workflowRunFailed
        case .cancelled: .workflowRunCancelled
        case .pending, .running, .throttled: nil
        }
    }
}

extension WorkflowRunStore {
    /// What a statement that ends runs returns for their events (a `RETURNING` list over the
    /// runs table's alias `r`).
    static let endedReturning = """
        r.id, r.tenant_id, r.workflow_key, r.version, r.subscriber_id, r.status, r.failure_code, r.state,
        r.started_at, r.ended_at
        """

    /// The seam's INSERT for the rows of `from` (alias `e`, the columns of `endedReturning`)
    /// whose status reports an event and that `filter` keeps (a transition: the row was live
    /// before this statement). `reason`: why it was cancelled, or the failure's message.
    static func endedEvents(from: String, filter: String?) -> String {
        let reported = WorkflowRunStatus.allCases.compactMap { status in
            status.webhookEventType.map { (status, $0) }
        }
        let type =
            "CASE e.status "
            + reported.map { "WHEN \($0.0.sql) THEN \(WebhookEventSource.literal($0.1))" }.joined(separator: " ")
            + " END"
        let ended = "e.status IN (\(reported.map(\.0.sql).joined(separator: ", ")))"
        return WebhookOutbox.insertSQL(
            WebhookEventSource(
                from: from, tenantId: "e.tenant_id", type: type,
                eventId: "bk_webhook_event_id('workflow_run', e.id::text)", occurredAt: "e.ended_at",
                data: WebhookEventData.workflowRun(
                    runId: "e.id", workflowKey: "e.workflow_key", version: "e.version", subscriberId: "e.subscriber_id",
                    status: "e.status", failureCode: "e.failure_code",
                    reason: "coalesce(e.state->>'cancelReason', e.state->'failure'->>'message')",
                    startedAt: "e.started_at", endedAt: "e.ended_at"),
                filter: filter.map { "\(ended) AND (\($0))" } ?? ended))
    }
}
