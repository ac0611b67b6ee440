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

    /// `route(on:tenantId:subscriberId:events:)` for several subscribers' events at once (a
    /// whole read of `bk:events`), in one statement: each event reaches the live runs of its own
    /// subscriber that react to it, except runs that an event of the same subscriber in `lanes`
    /// started (they exist only on a redelivery, and were given their events then).
    public static func route(
        on connection: PostgresConnection, lanes: [(tenantId: UUID, subscriberId: String, events: [WorkflowEvent])]
    ) async throws -> Int {
        var tenants: [UUID] = []
        var subscribers: [String] = []
        var names: [String] = []
        var payloads: [String] = []
        var keys: [String] = []
        var ids: [String] = []
        for lane in lanes {
            for event in lane.events {
                tenants.append(lane.tenantId)
                subscribers.append(lane.subscriberId)
                names.append(event.name)
                payloads.append(event.jsonText)
                keys.append("event:" + event.id)
                ids.append(event.id)
            }
        }
        guard !ids.isEmpty else { return 0 }
        return try await connection.query(
            """
            WITH e AS (
                SELECT tenant, subscriber, name, payload, key, id, n
                FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
                    WITH ORDINALITY AS e(tenant, subscriber, name, payload, key, id, n)),
            i AS (
                INSERT INTO workflow_run_inputs (run_id, kind, payload, dedupe_key)
                SELECT r.id, \(WorkflowRunInputKind.event.sql), e.payload::jsonb, e.key FROM e JOIN workflow_runs r
                    ON r.tenant_id = e.tenant AND r.subscriber_id = e.subscriber AND r.status IN (\(WorkflowRunStatus.liveSQL))
                   AND e.name = ANY (r.reacts_to)
                   AND NOT EXISTS (SELECT 1 FROM e s WHERE s.tenant = r.tenant_id AND s.subscriber = r.subscriber_id
                                                      AND s.id = r.trigger_key)
                ORDER BY e.n, r.id
                ON CONFLICT (run_id, dedupe_key) DO NOTHING
                RETURNING run_id),
            u AS (UPDATE workflow_runs SET wake_at = '-infinity' WHERE id IN (SELECT run_id FROM i))
            SELECT count(*)::int FROM i
            """, [tenants, subscribers, names, payloads, keys, ids]
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
