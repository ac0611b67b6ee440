import BuzzKitPostgres
import BuzzKitWorkflows
import Foundation

extension WorkflowRunRetention {
    /// How many runs filed in `[lower, upper)` are live or ended after `endedAfter`. A run is filed
    /// at the time in its id (time-ordered since migration 0027); with `lower` nil (a legacy week)
    /// also every run whose id has no time. The ledger's retention keeps a week of messages while
    /// this is not zero: such a run's sends are filed in that week (`LedgerRetention`). The runs
    /// are looked for among those created within a day of the range (an id and its `created_at`
    /// are taken moments apart), so only the runs' weeks around it are read.
    public static func runsFiled(
        from lower: Date?, to upper: Date, liveOrEndedAfter endedAfter: Date, on connection: PostgresConnection
    ) async throws -> Int {
        let filed =
            lower == nil
            ? "(bk_uuid7_time(r.id) IS NULL OR bk_uuid7_time(r.id) < $2::timestamptz)"
            : """
            r.created_at >= $3::timestamptz - interval '1 day' AND r.created_at < $2::timestamptz + interval '1 day'
              AND bk_uuid7_time(r.id) >= $3::timestamptz AND bk_uuid7_time(r.id) < $2::timestamptz
            """
        return try await connection.query(
            """
            SELECT count(*)::int FROM workflow_runs r
            WHERE (r.status IN (\(WorkflowRunStatus.liveSQL)) OR coalesce(r.ended_at, r.updated_at) > $1::timestamptz)
              AND \(filed)
            """, [endedAfter, upper] + (lower.map { [$0] } ?? [])
        ).first?.decode(Int.self, at: 0) ?? 0
    }
}
