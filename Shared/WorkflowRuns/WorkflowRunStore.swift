import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// The workflow run store (migration 0011): what the gateway asks of runs (start one from the
/// trigger route, cancel one or all of a workflow's, list and read them) and, in
/// `WorkflowRunStore+Runtime`, what the workflow service does with them (claim due runs, save a
/// run's state with its timer, route events to runs' inboxes).
///
/// The gateway never runs the engine: it inserts a `pending` run (or a `cancel` input) that is due
/// at once (`wake_at = -infinity`), and a workflow replica picks it up within its poll interval.
/// Each request function has a form on a `PostgresConnection`, to join a transaction of the
/// caller's (the trigger route's idempotency record, DELETE of a workflow).
public struct WorkflowRunStore: Sendable {
    public let postgres: PostgresClient

    public init(postgres: PostgresClient) {
        self.postgres = postgres
    }

    /// The dedupe key of a run started by `POST /v1/workflows/{key}/trigger`.
    public static func apiTriggerKey(_ idempotencyKey: String) -> String { "api:" + idempotencyKey }

    // MARK: - (a) Start a run (the trigger route)

    /// What `requestStart` did: `created` false when a run with the same trigger key existed (its id).
    public struct Start: Sendable, Hashable {
        public var runId: UUID
        public var created: Bool
    }

    /// Inserts a pending run of `workflowKey` at `version` for `subscriberId`, started by `trigger`
    /// (the event the route makes up: its `id`, `name` = the definition's trigger event, `data`),
    /// once per `triggerKey` (`apiTriggerKey(idempotency key)`, or the event id): a second call with
    /// the same key answers the first run's id with `created == false`. A workflow replica runs
    /// `WorkflowEngine.start` on it shortly after the commit (the subscriber is read then; an unknown
    /// one fails the run with `subscriber_unknown`).
    public func requestStart(
        tenantId: UUID, workflowKey: String, version: Int, definition: WorkflowDefinition,
        subscriberId: String, trigger: WorkflowEvent, triggerKey: String
    ) async throws -> Start {
        try await postgres.withConnection { connection in
            try await Self.requestStart(
                on: connection, tenantId: tenantId, workflowKey: workflowKey, version: version,
                definition: definition, subscriberId: subscriberId, trigger: trigger,
                triggerKey: triggerKey)
        }
    }

    public static func requestStart(
        on connection: PostgresConnection, tenantId: UUID, workflowKey: String, version: Int,
        definition: WorkflowDefinition, subscriberId: String, trigger: WorkflowEvent,
        triggerKey: String
    ) async throws -> Start {
        let id = UUID.timeOrdered()
        let inserted = try await connection.query(
            """
            WITH claimed AS (
                -- One run per (workflow, trigger) (migration 0024: the runs' own table is partitioned).
                INSERT INTO workflow_run_triggers (tenant_id, workflow_key, trigger_key, run_id)
                VALUES ($2::uuid, $3, $6, $1::uuid) ON CONFLICT DO NOTHING RETURNING run_id)
            INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status,
                                       start_input, reacts_to, wake_at)
            SELECT $1::uuid, $2::uuid, $3::text, $4::int, $5::text, $6::text, \(WorkflowRunStatus.pending.sql),
                   $7::jsonb, $8::text[], '-infinity'
            FROM claimed RETURNING id
            """,
            [
                id, tenantId, workflowKey, version, subscriberId, triggerKey,
                JSONValue.object(["trigger": trigger.jsonValue]), definition.reactsToEvents.sorted()
            ])
        if !inserted.isEmpty { return Start(runId: id, created: true) }
        let existing = try await connection.query(
            "SELECT run_id FROM workflow_run_triggers WHERE tenant_id = $1::uuid AND workflow_key = $2 AND trigger_key = $3",
            [tenantId, workflowKey, triggerKey])
        guard let row = existing.first else {
            throw PostgresError(
                code: .serializationFailure, message: "a run with trigger key \(triggerKey) is being written; try again"
            )
        }
        return Start(runId: try row.decode(UUID.self, at: 0), created: false)
    }

    // MARK: - (b) Cancel

    /// What a cancel request found.
    public enum CancelRequest: String, Sendable, Hashable, CaseIterable {
        /// The run was running (or pending): a `cancel` input is in its inbox and it is due now.
        case requested
        /// The run had already ended (completed, cancelled, failed): nothing changed.
        case alreadyEnded = "already_ended"
        case notFound = "not_found"

        /// What the cancel route answers (`cancel`): a run it found.
        public static let answered: [CancelRequest] = [.requested, .alreadyEnded]
    }

    /// `POST /v1/workflow-runs/{id}/cancel`: puts `.cancel(reason:)` in the run's inbox and makes it
    /// due now; a workflow replica cancels it (sends of later steps never happen). The run reads
    /// `cancelled` once that replica has advanced it (within its poll interval).
    public func requestCancel(tenantId: UUID, runId: UUID, reason: String) async throws -> CancelRequest {
        try await postgres.withConnection {
            try await Self.requestCancel(on: $0, tenantId: tenantId, runId: runId, reason: reason)
        }
    }

    public static func requestCancel(
        on connection: PostgresConnection, tenantId: UUID, runId: UUID,
        reason: String
    ) async throws -> CancelRequest {
        let rows = try await connection.query(
            """
            WITH i AS (
                INSERT INTO workflow_run_inputs (run_id, kind, payload)
                SELECT id, \(WorkflowRunInputKind.cancel.sql), $3::jsonb FROM workflow_runs
                WHERE tenant_id = $1::uuid AND id = $2::uuid AND status IN (\(WorkflowRunStatus.liveSQL))
                RETURNING run_id)
            UPDATE workflow_runs SET wake_at = '-infinity', updated_at = now() WHERE id IN (SELECT run_id FROM i) RETURNING id
            """, [tenantId, runId, JSONValue.object(["reason": .string(reason)])])
        if !rows.isEmpty { return .requested }
        let found = try await connection.query(
            "SELECT 1 FROM workflow_runs WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [tenantId, runId])
        return found.isEmpty ? .notFound : .alreadyEnded
    }

    /// DELETE of a workflow: a cancel request for every running (or pending) run of it; answers
    /// how many. The workflow service also sweeps runs of deleted workflows when it starts and
    /// periodically, so a request lost with a crash is made again.
    @discardableResult
    public func requestCancelAll(tenantId: UUID, workflowKey: String, reason: String) async throws -> Int {
        try await postgres.withConnection {
            try await Self.requestCancelAll(on: $0, tenantId: tenantId, workflowKey: workflowKey, reason: reason)
        }
    }

    @discardableResult
    public static func requestCancelAll(
        on connection: PostgresConnection, tenantId: UUID, workflowKey: String,
        reason: String
    ) async throws -> Int {
        try await connection.query(
            cancelRequestSQL(matching: "workflow_key = $2", dedupeKey: "cancel-all"),
            [tenantId, workflowKey, JSONValue.object(["reason": .string(reason)])]
        ).count
    }

    /// Asks the tenant's ($1) live runs matching `predicate` (over `workflow_runs`, reading $2) to
    /// cancel: a `cancel` input with payload $3, once per run and `dedupeKey`, each run woken now.
    /// Rows: the runs asked.
    static func cancelRequestSQL(matching predicate: String, dedupeKey: String) -> String {
        """
        WITH i AS (
            INSERT INTO workflow_run_inputs (run_id, kind, payload, dedupe_key)
            SELECT id, \(WorkflowRunInputKind.cancel.sql), $3::jsonb, '\(dedupeKey)' FROM workflow_runs
            WHERE tenant_id = $1::uuid AND \(predicate) AND status IN (\(WorkflowRunStatus.liveSQL))
            ON CONFLICT (run_id, dedupe_key) DO NOTHING
            RETURNING run_id)
        UPDATE workflow_runs SET wake_at = '-infinity', updated_at = now() WHERE id IN (SELECT run_id FROM i) RETURNING id
        """
    }

    // MARK: - (c) List, (d) read

    /// `GET /v1/workflows/{key}/runs`: newest first, `limit` (1...1000) per page, optionally one
    /// subscriber's and/or one status's as the API shows it (`running` includes pending runs).
    public func list(
        tenantId: UUID, workflowKey: String, subscriberId: String? = nil, status: WorkflowRunStatus? = nil,
        after cursor: WorkflowRunCursor? = nil, limit: Int = 50
    ) async throws -> WorkflowRunPage {
        let statuses = status.map { shown in WorkflowRunStatus.allCases.filter { $0.shown == shown }.map(\.rawValue) }
        let limit = max(1, min(limit, 1000))
        let rows = try await postgres.query(
            """
            SELECT \(WorkflowRunRecord.columns) FROM workflow_runs
            WHERE tenant_id = $1::uuid AND workflow_key = $2
              AND ($3::text IS NULL OR subscriber_id = $3)
              AND ($4::text[] IS NULL OR status = ANY ($4::text[]))
              AND ($5::timestamptz IS NULL OR (created_at, id) < ($5::timestamptz, $6::uuid))
            ORDER BY created_at DESC, id DESC LIMIT $7
            """, [tenantId, workflowKey, subscriberId, statuses, cursor?.createdAt, cursor?.id, limit + 1])
        var runs = try rows.map(WorkflowRunRecord.decode)
        var next: WorkflowRunCursor?
        if runs.count > limit {
            runs.removeLast()
            next = runs.last.map { WorkflowRunCursor(createdAt: $0.createdAt, id: $0.id) }
        }
        return WorkflowRunPage(runs: runs, next: next)
    }

    /// `GET /v1/workflow-runs/{id}`; nil when the tenant has no such run. A digest run comes with
    /// the events it collected.
    public func run(tenantId: UUID, id: UUID) async throws -> WorkflowRunRecord? {
        let rows = try await postgres.query(
            "SELECT \(WorkflowRunRecord.columns) FROM workflow_runs WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [tenantId, id])
        guard var record = try rows.first.map(WorkflowRunRecord.decode) else { return nil }
        if record.state?.digest != nil { record.digestEvents = try await digestEvents(runId: id) }
        return record
    }

    /// Where a workflow's message came from (for `GET /v1/messages/{id}`): nil for a message not
    /// sent by a workflow.
    public struct MessageOrigin: Sendable, Hashable {
        public var workflowKey: String
        public var version: Int
        public var runId: UUID
        public var step: String

        public init(workflowKey: String, version: Int, runId: UUID, step: String) {
            self.workflowKey = workflowKey
            self.version = version
            self.runId = runId
            self.step = step
        }

        /// `{"workflowKey", "version", "runId", "step"}` (the message's `workflow` member).
        public var jsonValue: JSONValue {
            [
                "workflowKey": .string(workflowKey), "version": .int(Int64(version)),
                "runId": .string(runId.lowercasedText),
                "step": .string(step)
            ]
        }
    }

    public func messageOrigin(tenantId: UUID, messageId: UUID) async throws -> MessageOrigin? {
        let rows = try await postgres.query(
            """
            SELECT workflow_key, workflow_version, workflow_run_id, workflow_step FROM messages
            WHERE tenant_id = $1::uuid AND id = $2::uuid AND workflow_run_id IS NOT NULL
            """, [tenantId, messageId])
        guard let row = rows.first else { return nil }
        return MessageOrigin(
            workflowKey: try row.decode(String.self, at: 0), version: try row.decode(Int.self, at: 1),
            runId: try row.decode(UUID.self, at: 2), step: try row.decode(String.self, at: 3))
    }
}
