import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// Erasure of a subscriber (issue 30): their runs are cancelled the way a deleted workflow's are (a
/// `cancel` input in each live run's inbox, due now: the workflow service ends them, with their
/// `workflow_run.cancelled` event), then every run and what hangs off it is deleted in batches.
extension WorkflowRunStore {
    /// Asks every live run of `subscriberIds` to cancel; answers how many were asked.
    @discardableResult
    public static func requestCancelForErasure(
        on connection: PostgresConnection, tenantId: UUID, subscriberIds: [String]
    ) async throws -> Int {
        try await connection.query(
            cancelRequestSQL(matching: "subscriber_id = ANY ($2::text[])", dedupeKey: "erasure"),
            [tenantId, subscriberIds, JSONValue.object(["reason": "the subscriber was erased"])]
        ).count
    }

    /// The live runs of `subscriberIds` (read through `workflow_runs_live`).
    public static func liveRuns(on connection: PostgresConnection, tenantId: UUID, subscriberIds: [String])
        async throws -> Int
    {
        let rows = try await connection.query(
            """
            SELECT count(*) FROM workflow_runs
            WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[]) AND status IN (\(WorkflowRunStatus.liveSQL))
            """, [tenantId, subscriberIds])
        return try rows.first?.decode(Int.self, at: 0) ?? 0
    }

    /// What one batch of `eraseRuns` deleted.
    public struct ErasedRuns: Sendable, Equatable {
        public var runs = 0
        public var digestEvents = 0
        public var digestWindows = 0
        public var throttles = 0
        public var triggerSkips = 0
    }

    /// Deletes up to `limit` runs of `subscriberIds` (their inbox and trigger record with them; a run a
    /// replica is saving is waited for, its row locked), the digest events gathered into them, and
    /// the subscriber's digest windows, throttles and trigger skips. Fewer than `limit` runs: none left.
    public static func eraseRuns(
        on connection: PostgresConnection, tenantId: UUID, subscriberIds: [String], limit: Int
    ) async throws -> ErasedRuns {
        let rows = try await connection.query(
            """
            WITH doomed AS (
                SELECT id, workflow_key, trigger_key FROM workflow_runs
                WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[])
                LIMIT $3 FOR UPDATE),
            de AS (DELETE FROM workflow_digest_events WHERE run_id IN (SELECT id FROM doomed) RETURNING 1),
            ri AS (DELETE FROM workflow_run_inputs WHERE run_id IN (SELECT id FROM doomed)),
            rt AS (DELETE FROM workflow_run_triggers t USING doomed d
                   WHERE t.tenant_id = $1::uuid AND t.workflow_key = d.workflow_key AND t.trigger_key = d.trigger_key
                     AND t.run_id = d.id),
            r AS (DELETE FROM workflow_runs WHERE id IN (SELECT id FROM doomed) RETURNING 1),
            w AS (DELETE FROM workflow_digest_windows WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[])
                  RETURNING 1),
            t AS (DELETE FROM workflow_throttles WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[])
                  RETURNING 1),
            s AS (DELETE FROM workflow_trigger_skips WHERE tenant_id = $1::uuid AND subscriber_id = ANY ($2::text[])
                  RETURNING 1)
            SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM de), (SELECT count(*) FROM w),
                   (SELECT count(*) FROM t), (SELECT count(*) FROM s)
            """, [tenantId, subscriberIds, limit])
        guard let row = rows.first else { return ErasedRuns() }
        return ErasedRuns(
            runs: try row.decode(Int.self, at: 0), digestEvents: try row.decode(Int.self, at: 1),
            digestWindows: try row.decode(Int.self, at: 2), throttles: try row.decode(Int.self, at: 3),
            triggerSkips: try row.decode(Int.self, at: 4))
    }
}
