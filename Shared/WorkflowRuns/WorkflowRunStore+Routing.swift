import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// The workflow service's routing of a whole `bk:events` entry (one subscriber's batch) in one
/// statement instead of one per event: the same inbox rows, once per (run, event id), in the
/// batch's order.
extension WorkflowRunStore {
    /// Every event of the batch into the inbox of the subscriber's pending and running runs that
    /// react to its name (`reacts_to`), in event order; those runs become due now. Runs that an
    /// event of this batch started are left out: they exist only when the batch is redelivered,
    /// and its first delivery gave them the events after their trigger (one before it, a cancel,
    /// must not reach them now). Answers how many inputs were new.
    public static func route(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String, events: [WorkflowEvent]
    ) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        return try await connection.query(
            """
            WITH e AS (
                SELECT name, payload, key, n FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS e(name, payload, key, n)),
            i AS (
                INSERT INTO workflow_run_inputs (run_id, kind, payload, dedupe_key)
                SELECT r.id, \(WorkflowRunInputKind.event.sql), e.payload::jsonb, e.key FROM e JOIN workflow_runs r
                    ON r.tenant_id = $1::uuid AND r.subscriber_id = $2 AND r.status IN (\(WorkflowRunStatus.liveSQL))
                   AND e.name = ANY (r.reacts_to) AND r.trigger_key <> ALL ($6::text[])
                ORDER BY e.n, r.id
                ON CONFLICT (run_id, dedupe_key) DO NOTHING
                RETURNING run_id),
            u AS (UPDATE workflow_runs SET wake_at = '-infinity' WHERE id IN (SELECT run_id FROM i))
            SELECT count(*)::int FROM i
            """,
            [
                tenantId, subscriberId, events.map(\.name),
                events.map(\.jsonText), events.map { "event:" + $0.id },
                events.map(\.id)
            ]
        ).first?.decode(Int.self, at: 0) ?? 0
    }

    /// Given events into given runs' inboxes, in order (runs a batch started, and the batch's
    /// later events they react to); the runs become due now. Answers how many inputs were new.
    public static func route(on connection: PostgresConnection, pairs: [(runId: UUID, event: WorkflowEvent)])
        async throws -> Int
    {
        guard !pairs.isEmpty else { return 0 }
        return try await connection.query(
            """
            WITH i AS (
                INSERT INTO workflow_run_inputs (run_id, kind, payload, dedupe_key)
                SELECT run, \(WorkflowRunInputKind.event.sql), payload::jsonb, key
                FROM unnest($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS p(run, payload, key, n)
                ORDER BY n
                ON CONFLICT (run_id, dedupe_key) DO NOTHING
                RETURNING run_id),
            u AS (UPDATE workflow_runs SET wake_at = '-infinity' WHERE id IN (SELECT run_id FROM i))
            SELECT count(*)::int FROM i
            """,
            [
                pairs.map(\.runId), pairs.map(\.event.jsonText),
                pairs.map { "event:" + $0.event.id }
            ]
        ).first?.decode(Int.self, at: 0) ?? 0
    }
}
