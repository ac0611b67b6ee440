import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// A run a replica holds (row locked `FOR UPDATE` in its transaction) to advance it.
public struct ClaimedWorkflowRun: Sendable {
    public var record: WorkflowRunRecord
    public var timerToken: String?
    /// The inbox, oldest first.
    public var inputs: [WorkflowRunInboxItem]
}

/// One inbox entry: an event routed to the run or a cancel request, with when it arrived.
public struct WorkflowRunInboxItem: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case event(WorkflowEvent)
        case cancel(reason: String)
    }

    public var id: Int64
    public var kind: Kind
    public var createdAt: Date
}

/// What a replica writes back for a run it advanced (one statement with its timer).
public struct WorkflowRunSave: Sendable {
    public var id: UUID
    public var state: WorkflowRunState
    /// Set when the run failed before the engine could start it (no state to show): `subscriber_unknown`.
    public var failureCode: WorkflowRunFailure.Code?
    /// The inbox entries applied (up to and including this id are deleted).
    public var lastInputId: Int64?

    public init(id: UUID, state: WorkflowRunState, lastInputId: Int64?) {
        self.id = id
        self.state = state
        self.lastInputId = lastInputId
    }
}

/// A new run the workflow service started from a `bk:events` trigger (engine already walked).
public struct WorkflowRunInsert: Sendable {
    public var id: UUID
    public var tenantId: UUID
    public var triggerKey: String
    public var reactsTo: [String]
    public var state: WorkflowRunState

    public init(id: UUID, tenantId: UUID, triggerKey: String, reactsTo: [String], state: WorkflowRunState) {
        self.id = id
        self.tenantId = tenantId
        self.triggerKey = triggerKey
        self.reactsTo = reactsTo
        self.state = state
    }
}

/// The workflow service's side of the store. Every function takes the connection of the
/// caller's transaction: a run's state, its timer, its consumed inbox entries and its sends'
/// message rows (`Ledger.insertWorkflowMessages`, on the same connection) are committed together
/// or not at all.
extension WorkflowRunStore {
    /// Up to `limit` runs due at `now` (`wake_at <= now`: timer due, inbox not empty, pending),
    /// locked `FOR UPDATE SKIP LOCKED` (another replica's claim is skipped, never waited on), with
    /// their inboxes. Through `bk_workflow_runs_due` (migration 0024), which merges the partitions'
    /// wake indexes whatever the statistics say.
    public static func claimDue(on tx: PostgresConnection, now: Date, limit: Int) async throws -> [ClaimedWorkflowRun] {
        let rows = try await tx.query(
            """
            SELECT \(WorkflowRunRecord.columns), timer_token FROM bk_workflow_runs_due($1::timestamptz, $2::int)
            """, [now, limit])
        var claimed: [ClaimedWorkflowRun] = []
        claimed.reserveCapacity(rows.count)
        for row in rows {
            claimed.append(
                ClaimedWorkflowRun(
                    record: try WorkflowRunRecord.decode(row),
                    timerToken: try row.decode(String?.self, at: 15), inputs: []))
        }
        guard !claimed.isEmpty else { return [] }
        let inputRows = try await tx.query(
            """
            SELECT run_id, id, kind, payload, created_at FROM workflow_run_inputs WHERE run_id = ANY ($1::uuid[]) ORDER BY id
            """, [claimed.map(\.record.id)])
        var byRun: [UUID: [WorkflowRunInboxItem]] = [:]
        for row in inputRows {
            let runId = try row.decode(UUID.self, at: 0)
            let id = try row.decode(Int64.self, at: 1)
            let payload = try row.decode(JSONValue.self, at: 3)
            let kind: WorkflowRunInboxItem.Kind
            switch WorkflowRunInputKind(rawValue: try row.decode(String.self, at: 2)) {
            case .cancel?:
                kind = .cancel(reason: payload["reason"]?.stringValue ?? "cancelled")
            case .event?:
                guard let event = try? WorkflowEvent(stateJSON: payload) else { continue }
                kind = .event(event)
            case nil:
                continue  // unreadable: dropped with the others applied
            }
            byRun[runId, default: []].append(
                WorkflowRunInboxItem(id: id, kind: kind, createdAt: try row.decode(Date.self, at: 4)))
        }
        for i in claimed.indices { claimed[i].inputs = byRun[claimed[i].record.id] ?? [] }
        return claimed
    }

    /// Writes a claimed run's new state with its one timer (`state.timer`) and deletes the inbox
    /// entries applied. A running run is next due at its timer; an ended one never again. A run
    /// that ends here enqueues its webhook event (`endedEvents`) in the same statement.
    public static func save(on tx: PostgresConnection, _ save: WorkflowRunSave) async throws {
        let state = save.state
        let live = state.status == .running
        let status = state.status.rawValue
        try await tx.execute(
            """
            WITH saved AS (
                UPDATE workflow_runs r SET status = $2, failure_code = $3, state = $4::jsonb, start_input = NULL,
                    timer_token = $5, timer_due_at = $6::timestamptz, wake_at = $7::timestamptz, updated_at = now(),
                    started_at = COALESCE(r.started_at, $8::timestamptz), ended_at = $9::timestamptz
                FROM workflow_runs b
                WHERE r.id = $1::uuid AND b.id = r.id
                RETURNING \(endedReturning), b.status AS before
            ), run_events AS (
                \(endedEvents(from: "saved e", filter: "e.before IN (\(WorkflowRunStatus.liveSQL))"))
            )
            SELECT count(*) FROM saved
            """,
            [
                save.id, status, (save.failureCode ?? state.failure?.code)?.rawValue, state.jsonText,
                live ? state.timer?.token : nil,
                live ? state.timer?.dueAt : nil, live ? state.timer?.dueAt : nil, state.startedAt,
                live ? nil : (state.endedAt ?? state.startedAt)
            ])
        if let last = save.lastInputId {
            try await tx.execute(
                "DELETE FROM workflow_run_inputs WHERE run_id = $1::uuid AND id <= $2", [save.id, last])
        }
        try await dropWindowsOfEnded(on: tx, [state])
    }

    /// A pending run that cannot start (its subscriber is unknown): failed with `code`, no state;
    /// its `workflow_run.failed` event enqueued in the same statement.
    public static func failPending(
        on tx: PostgresConnection, id: UUID, code: WorkflowRunFailure.Code, now: Date
    ) async throws {
        try await tx.execute(
            """
            WITH failed AS (
                UPDATE workflow_runs r SET status = \(WorkflowRunStatus.failed.sql), failure_code = $2, wake_at = NULL,
                    updated_at = now(), ended_at = $3::timestamptz
                FROM workflow_runs b
                WHERE r.id = $1::uuid AND b.id = r.id
                RETURNING \(endedReturning), b.status AS before
            ), run_events AS (
                \(endedEvents(from: "failed e", filter: "e.before IN (\(WorkflowRunStatus.liveSQL))"))
            )
            SELECT count(*) FROM failed
            """, [id, code.rawValue, now])
        try await tx.execute("DELETE FROM workflow_run_inputs WHERE run_id = $1::uuid", [id])
    }

    /// Inserts runs started from `bk:events` triggers; answers the ids inserted (a trigger key
    /// already present, a redelivered entry, inserts nothing: its sends must not be written, nor
    /// its webhook event). A run that ended at once (a digest's trigger that joined, a failure)
    /// enqueues its event in the same statement.
    public static func insertStarted(on tx: PostgresConnection, _ runs: [WorkflowRunInsert]) async throws -> Set<UUID> {
        guard !runs.isEmpty else { return [] }
        var ids: [UUID] = []
        var tenants: [UUID] = []
        var keys: [String] = []
        var versions: [Int] = []
        var subscribers: [String] = []
        var triggers: [String] = []
        var statuses: [String] = []
        var failures: [String?] = []
        var states: [String] = []
        var reacts: [String] = []
        var tokens: [String?] = []
        var dues: [Date?] = []
        var starts: [Date] = []
        var ends: [Date?] = []
        for run in runs {
            let s = run.state
            let live = s.status == .running
            ids.append(run.id)
            tenants.append(run.tenantId)
            keys.append(s.workflowKey)
            versions.append(s.version)
            subscribers.append(s.subscriber.id)
            triggers.append(run.triggerKey)
            statuses.append(s.status.rawValue)
            failures.append(s.failure?.code.rawValue)
            states.append(s.jsonText)
            // text[] per row cannot go through unnest: one array literal per row, split in SQL.
            reacts.append(run.reactsTo.joined(separator: "\u{1F}"))
            tokens.append(live ? s.timer?.token : nil)
            dues.append(live ? s.timer?.dueAt : nil)
            starts.append(s.startedAt)
            ends.append(live ? nil : (s.endedAt ?? s.startedAt))
        }
        let rows = try await tx.query(
            """
            WITH t AS (
                SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[],
                                     $8::text[], $9::text[], $10::text[], $11::text[], $12::timestamptz[],
                                     $13::timestamptz[], $14::timestamptz[])
                    AS t(id, tenant, key, version, subscriber, trigger, status, failure, state, reacts, token, due, started, ended)
            ), claimed AS (
                -- One run per (workflow, trigger) (migration 0024: the runs' own table is partitioned).
                INSERT INTO workflow_run_triggers (tenant_id, workflow_key, trigger_key, run_id)
                SELECT tenant, key, trigger, id FROM t
                ON CONFLICT DO NOTHING
                RETURNING run_id
            ), inserted AS (
                INSERT INTO workflow_runs AS r (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status,
                                                failure_code, state, reacts_to, timer_token, timer_due_at, wake_at,
                                                started_at, ended_at)
                SELECT id, tenant, key, version, subscriber, trigger, status, failure, state::jsonb,
                       CASE WHEN reacts = '' THEN '{}'::text[] ELSE string_to_array(reacts, E'\\x1F') END,
                       token, due, due, started, ended
                FROM t WHERE id IN (SELECT run_id FROM claimed)
                RETURNING \(endedReturning)
            ), run_events AS (
                \(endedEvents(from: "inserted e", filter: nil))
            )
            SELECT id FROM inserted
            """,
            [
                ids, tenants, keys, versions, subscribers, triggers, statuses, failures, states, reacts, tokens, dues,
                starts, ends
            ])
        return Set(try rows.map { try $0.decode(UUID.self, at: 0) })
    }

    /// Puts `event` in the inbox of every live run of its subscriber that reacts to its name
    /// (cancelOn, waitFor) and makes them due now; once per (run, event id). Answers how many.
    @discardableResult
    public static func route(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String,
        event: WorkflowEvent
    ) async throws -> Int {
        try await connection.query(
            """
            WITH i AS (
                INSERT INTO workflow_run_inputs (run_id, kind, payload, dedupe_key)
                SELECT id, \(WorkflowRunInputKind.event.sql), $4::jsonb, $5 FROM workflow_runs
                WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND status IN (\(WorkflowRunStatus.liveSQL)) AND $3 = ANY (reacts_to)
                ON CONFLICT (run_id, dedupe_key) DO NOTHING
                RETURNING run_id)
            UPDATE workflow_runs SET wake_at = '-infinity' WHERE id IN (SELECT run_id FROM i) RETURNING id
            """, [tenantId, subscriberId, event.name, event.jsonValue, "event:" + event.id]
        ).count
    }

    /// A trigger that started nothing because its subscriber is unknown; once per trigger key.
    /// Answers whether it was new.
    @discardableResult
    public static func recordSkip(
        on connection: PostgresConnection, tenantId: UUID, workflowKey: String, triggerKey: String,
        subscriberId: String, reason: String
    ) async throws -> Bool {
        try await !connection.query(
            """
            INSERT INTO workflow_trigger_skips (tenant_id, workflow_key, trigger_key, subscriber_id, reason)
            VALUES ($1::uuid, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1
            """, [tenantId, workflowKey, triggerKey, subscriberId, reason]
        ).isEmpty
    }

    /// Cancel requests for the live runs of every deleted workflow (the sweep behind the
    /// `deleted` notification, which is not durable). Answers how many runs were asked.
    @discardableResult
    public static func cancelRunsOfDeletedWorkflows(on connection: PostgresConnection) async throws -> Int {
        try await connection.query(
            """
            WITH i AS (
                INSERT INTO workflow_run_inputs (run_id, kind, payload, dedupe_key)
                SELECT r.id, \(WorkflowRunInputKind.cancel.sql), '{"reason": "workflow deleted"}'::jsonb, 'cancel-all' FROM workflow_runs r
                JOIN workflows w ON w.tenant_id = r.tenant_id AND w.key = r.workflow_key
                WHERE r.status IN (\(WorkflowRunStatus.liveSQL)) AND w.deleted_at IS NOT NULL
                ON CONFLICT (run_id, dedupe_key) DO NOTHING
                RETURNING run_id)
            UPDATE workflow_runs SET wake_at = '-infinity' WHERE id IN (SELECT run_id FROM i) RETURNING id
            """
        ).count
    }

    /// The receipts (`delivered`, `opened`) of `messageIds` from `subscriberId` (ingest's
    /// `message_receipts`), for a branch on `{opened:}` / `{delivered:}`.
    public static func receipts(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String,
        messageIds: [String]
    ) async throws -> [String: WorkflowReceipts] {
        guard !messageIds.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT message_id, kind FROM message_receipts
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND message_id = ANY ($3::text[]) AND kind IN ('delivered', 'opened')
            """, [tenantId, subscriberId, messageIds])
        var result: [String: WorkflowReceipts] = [:]
        for row in rows {
            let (id, kind) = try row.decode((String, String).self)
            var receipts = result[id] ?? WorkflowReceipts()
            if kind == "opened" { receipts.opened = true } else { receipts.delivered = true }
            result[id] = receipts
        }
        return result
    }

    /// Whether `subscriberId` tracked `$local.scheduled` with `data.localId` = `localId` (ingest's
    /// `events`, from any of their devices and at any time: device clocks are not trusted to
    /// bound it): the acknowledgement a local window asks for at its moment.
    public static func localScheduled(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String, localId: String
    ) async throws -> Bool {
        try await !connection.query(
            """
            SELECT 1 FROM events
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND name = $3 AND data->>'localId' = $4 LIMIT 1
            """, [tenantId, subscriberId, WorkflowEngine.localScheduledEvent, localId]
        ).isEmpty
    }

    /// `localScheduled` for many (subscriber, local id) pairs of one tenant in one statement:
    /// answers the local ids whose subscriber tracked their `$local.scheduled`.
    public static func localScheduled(
        on connection: PostgresConnection, tenantId: UUID, plans: [(subscriberId: String, localId: String)]
    ) async throws -> Set<String> {
        guard !plans.isEmpty else { return [] }
        let rows = try await connection.query(
            """
            SELECT p.local_id FROM unnest($2::text[], $3::text[]) AS p(subscriber_id, local_id)
            WHERE EXISTS (SELECT 1 FROM events e
                          WHERE e.tenant_id = $1::uuid AND e.subscriber_id = p.subscriber_id AND e.name = $4
                            AND e.data->>'localId' = p.local_id)
            """, [tenantId, plans.map(\.subscriberId), plans.map(\.localId), WorkflowEngine.localScheduledEvent])
        return Set(try rows.map { try $0.decode(String.self, at: 0) })
    }

    /// The subscriber's events named `name` received from `since` on (ingest's `events`), oldest
    /// first: handed to a `waitFor` that just began, so one that arrived while it was set up counts.
    public static func events(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String, name: String,
        since: Date, limit: Int = 20
    ) async throws -> [WorkflowEvent] {
        let rows = try await connection.query(
            """
            SELECT event_id, name, data, occurred_at FROM events
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND name = $3 AND received_at >= $4::timestamptz
            ORDER BY received_at LIMIT $5
            """, [tenantId, subscriberId, name, since, limit])
        return try rows.map { row in
            WorkflowEvent(
                id: try row.decode(String.self, at: 0), name: try row.decode(String.self, at: 1),
                data: try row.decode(JSONValue.self, at: 2), occurredAt: try row.decode(Date.self, at: 3))
        }
    }

    /// The subscriber's events named one of `names` received strictly after `receivedAfter`, oldest
    /// first: handed to a run just started from an earlier batch, so a cancel or awaited event that
    /// another replica routed before the run existed still reaches it.
    public static func eventsReceived(
        on connection: PostgresConnection, tenantId: UUID, subscriberId: String, names: [String],
        after receivedAfter: Date, limit: Int = 50
    ) async throws -> [WorkflowEvent] {
        guard !names.isEmpty else { return [] }
        let rows = try await connection.query(
            """
            SELECT event_id, name, data, occurred_at FROM events
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND name = ANY ($3::text[]) AND received_at > $4::timestamptz
            ORDER BY received_at, event_id LIMIT $5
            """, [tenantId, subscriberId, names, receivedAfter, limit])
        return try rows.map { row in
            WorkflowEvent(
                id: try row.decode(String.self, at: 0), name: try row.decode(String.self, at: 1),
                data: try row.decode(JSONValue.self, at: 2), occurredAt: try row.decode(Date.self, at: 3))
        }
    }
}
