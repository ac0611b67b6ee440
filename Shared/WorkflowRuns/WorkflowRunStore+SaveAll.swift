import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// A run worker's claim written back in two statements instead of one or two per run.
extension WorkflowRunStore {
    /// `save` for many runs at once: each one's new state with its one timer (a running run is next
    /// due at it, an ended one never again) in one UPDATE, with the webhook events of the runs that
    /// end (`endedEvents`), and the inbox entries applied deleted in one DELETE.
    public static func save(on tx: PostgresConnection, _ saves: [WorkflowRunSave]) async throws {
        guard !saves.isEmpty else { return }
        var ids: [UUID] = []
        var statuses: [String] = []
        var failures: [String?] = []
        var states: [String] = []
        var tokens: [String?] = []
        var dues: [Date?] = []
        var starts: [Date] = []
        var ends: [Date?] = []
        for save in saves {
            let state = save.state
            let live = state.status == .running
            ids.append(save.id)
            statuses.append(state.status.rawValue)
            failures.append((save.failureCode ?? state.failure?.code)?.rawValue)
            states.append(state.jsonText)
            tokens.append(live ? state.timer?.token : nil)
            dues.append(live ? state.timer?.dueAt : nil)
            starts.append(state.startedAt)
            ends.append(live ? nil : (state.endedAt ?? state.startedAt))
        }
        try await tx.execute(
            """
            WITH saved AS (
                UPDATE workflow_runs r SET status = t.status, failure_code = t.failure, state = t.state::jsonb,
                    start_input = NULL, timer_token = t.token, timer_due_at = t.due, wake_at = t.due, updated_at = now(),
                    started_at = COALESCE(r.started_at, t.started), ended_at = t.ended
                FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
                            $7::timestamptz[], $8::timestamptz[]) AS t(id, status, failure, state, token, due, started, ended)
                JOIN workflow_runs b ON b.id = t.id
                WHERE r.id = t.id
                RETURNING \(endedReturning), b.status AS before
            ), run_events AS (
                \(endedEvents(from: "saved e", filter: "e.before IN (\(WorkflowRunStatus.liveSQL))"))
            )
            SELECT count(*) FROM saved
            """, [ids, statuses, failures, states, tokens, dues, starts, ends])
        try await dropWindowsOfEnded(on: tx, saves.map(\.state))
        let applied = saves.compactMap { save in save.lastInputId.map { (save.id, $0) } }
        guard !applied.isEmpty else { return }
        try await tx.execute(
            """
            DELETE FROM workflow_run_inputs i USING unnest($1::uuid[], $2::int8[]) AS t(run, last)
            WHERE i.run_id = t.run AND i.id <= t.last
            """, [applied.map(\.0), applied.map(\.1)])
    }
}
