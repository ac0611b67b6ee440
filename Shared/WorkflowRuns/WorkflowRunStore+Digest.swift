import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// A digest window a trigger event opens or joins (issue 28): (tenant, workflow, subscriber, key).
public struct WorkflowDigestWindowRequest: Sendable, Hashable {
    public var tenantId: UUID
    public var workflowKey: String
    public var subscriberId: String
    /// The rendered key (`WorkflowDigestState.key`).
    public var key: String
    /// The new run that opens the window when none is open.
    public var candidateRunId: UUID
    public var closesAt: Date

    public init(
        tenantId: UUID, workflowKey: String, subscriberId: String, key: String, candidateRunId: UUID, closesAt: Date
    ) {
        self.tenantId = tenantId
        self.workflowKey = workflowKey
        self.subscriberId = subscriberId
        self.key = key
        self.candidateRunId = candidateRunId
        self.closesAt = closesAt
    }
}

/// A trigger event a digest run collects.
public struct WorkflowDigestEventInsert: Sendable {
    public var tenantId: UUID
    public var workflowKey: String
    public var runId: UUID
    public var event: WorkflowEvent

    public init(tenantId: UUID, workflowKey: String, runId: UUID, event: WorkflowEvent) {
        self.tenantId = tenantId
        self.workflowKey = workflowKey
        self.runId = runId
        self.event = event
    }
}

/// A digest run whose window closes: the window of its (tenant, workflow, subscriber, key).
public struct WorkflowDigestClose: Sendable, Hashable {
    public var runId: UUID
    public var tenantId: UUID
    public var workflowKey: String
    public var subscriberId: String
    public var key: String

    public init(runId: UUID, tenantId: UUID, workflowKey: String, subscriberId: String, key: String) {
        self.runId = runId
        self.tenantId = tenantId
        self.workflowKey = workflowKey
        self.subscriberId = subscriberId
        self.key = key
    }
}

/// One event a digest collected, as the run shows it.
public struct WorkflowDigestEventRef: Sendable, Hashable {
    public var id: String
    public var occurredAt: Date
    /// When the workflow service put it in the digest (the moment that decided which window).
    public var joinedAt: Date

    public var jsonValue: JSONValue {
        [
            "id": .string(id), "occurredAt": .string(WorkflowTime.text(occurredAt)),
            "joinedAt": .string(WorkflowTime.text(joinedAt))
        ]
    }
}

/// The events a digest run collected (the first ones, in order of arrival) and how many in all.
public struct WorkflowDigestEvents: Sendable, Hashable {
    public var events: [WorkflowDigestEventRef]
    public var count: Int
}

/// The digest windows, the events they collect and the throttles' passes (migration 0019): the
/// statements that make digests and throttles exact under concurrency, replicas and kill -9
/// (the row locks and unique keys they rely on are described in the migration).
extension WorkflowRunStore {
    /// A key as the tables keep it: the rendered key, or over 512 bytes `sha256:<hex>` (an index
    /// entry stays small whatever the trigger data holds).
    static func storedKey(_ text: String) -> String {
        "(CASE WHEN octet_length(\(text)) > 512 THEN 'sha256:' || encode(sha256(convert_to(\(text), 'UTF8')), 'hex') ELSE \(text) END)"
    }

    /// Opens or joins each window (keys distinct), locking their rows until the caller's
    /// transaction ends: a window that is open at `now` (its `closes_at` later) answers its run;
    /// one that is not (none, or one whose close is late) is opened with the request's
    /// candidate run. Answers the run of each request, in order: the candidate when it opened.
    public static func openOrJoinDigests(
        on tx: PostgresConnection, _ windows: [WorkflowDigestWindowRequest], now: Date
    ) async throws -> [UUID] {
        guard !windows.isEmpty else { return [] }
        let rows = try await tx.query(
            """
            WITH t AS (
                SELECT tenant, workflow, subscriber, \(storedKey("key")) AS k, run, closes, n
                FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::uuid[], $6::timestamptz[])
                    WITH ORDINALITY AS t(tenant, workflow, subscriber, key, run, closes, n)),
            w AS (
                INSERT INTO workflow_digest_windows AS w (tenant_id, workflow_key, subscriber_id, digest_key, run_id, closes_at)
                SELECT tenant, workflow, subscriber, k, run, closes FROM t ORDER BY tenant, workflow, subscriber, k
                ON CONFLICT (tenant_id, workflow_key, subscriber_id, digest_key) DO UPDATE SET
                    run_id = CASE WHEN w.closes_at <= $7::timestamptz THEN EXCLUDED.run_id ELSE w.run_id END,
                    closes_at = CASE WHEN w.closes_at <= $7::timestamptz THEN EXCLUDED.closes_at ELSE w.closes_at END
                RETURNING tenant_id, workflow_key, subscriber_id, digest_key, run_id)
            SELECT t.n, w.run_id FROM t JOIN w ON w.tenant_id = t.tenant AND w.workflow_key = t.workflow
                AND w.subscriber_id = t.subscriber AND w.digest_key = t.k
            """,
            [
                windows.map(\.tenantId), windows.map(\.workflowKey), windows.map(\.subscriberId), windows.map(\.key),
                windows.map(\.candidateRunId), windows.map(\.closesAt), now
            ])
        var runs = windows.map(\.candidateRunId)
        for row in rows {
            let (n, run) = try row.decode((Int, UUID).self)
            runs[n - 1] = run
        }
        return runs
    }

    /// The events into their runs' digests, in order (each its place in arrival order), once per
    /// (workflow, event id). Answers the `(workflow key, event id)` of those that were new, by
    /// tenant: one already there (a redelivered entry) is not counted again.
    public static func collectDigestEvents(
        on tx: PostgresConnection, _ events: [WorkflowDigestEventInsert], joinedAt: Date
    ) async throws -> Set<DigestEventKey> {
        guard !events.isEmpty else { return [] }
        let rows = try await tx.query(
            """
            INSERT INTO workflow_digest_events (tenant_id, workflow_key, event_id, run_id, name, data, occurred_at, joined_at)
            SELECT tenant, workflow, id, run, name, data::jsonb, occurred, $8::timestamptz
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::timestamptz[])
                WITH ORDINALITY AS t(tenant, workflow, id, run, name, data, occurred, n)
            ORDER BY n
            ON CONFLICT (tenant_id, workflow_key, event_id) DO NOTHING
            RETURNING tenant_id, workflow_key, event_id
            """,
            [
                events.map(\.tenantId), events.map(\.workflowKey), events.map(\.event.id), events.map(\.runId),
                events.map(\.event.name), events.map(\.event.data.jsonString), events.map(\.event.occurredAt),
                joinedAt
            ])
        var inserted = Set<DigestEventKey>()
        for row in rows {
            let (tenant, workflow, id) = try row.decode((UUID, String, String).self)
            inserted.insert(DigestEventKey(tenantId: tenant, workflowKey: workflow, eventId: id))
        }
        return inserted
    }

    /// A digest event's identity: once per (tenant, workflow, event id).
    public struct DigestEventKey: Sendable, Hashable {
        public var tenantId: UUID
        public var workflowKey: String
        public var eventId: String

        public init(tenantId: UUID, workflowKey: String, eventId: String) {
            self.tenantId = tenantId
            self.workflowKey = workflowKey
            self.eventId = eventId
        }
    }

    /// Undoes windows this transaction opened for runs it will not start (every event of theirs
    /// was counted before, or the run could not be inserted), with the events it gave them.
    public static func dropDigests(on tx: PostgresConnection, _ windows: [WorkflowDigestClose]) async throws {
        guard !windows.isEmpty else { return }
        try await deleteWindows(on: tx, windows)
        try await tx.execute(
            "DELETE FROM workflow_digest_events WHERE run_id = ANY ($1::uuid[])", [windows.map(\.runId)])
    }

    /// Closes windows: each run's window row goes (waiting for any transaction joining it to end,
    /// so nothing joins after this), then answers every event each run collected, in order of
    /// arrival. A window already taken over (its run was late) is left to its new run.
    public static func closeDigests(on tx: PostgresConnection, _ windows: [WorkflowDigestClose]) async throws
        -> [UUID: [WorkflowEvent]]
    {
        guard !windows.isEmpty else { return [:] }
        try await deleteWindows(on: tx, windows)
        let rows = try await tx.query(
            """
            SELECT run_id, event_id, name, data, occurred_at FROM workflow_digest_events
            WHERE run_id = ANY ($1::uuid[]) ORDER BY run_id, seq
            """, [windows.map(\.runId)])
        var events: [UUID: [WorkflowEvent]] = [:]
        for row in rows {
            events[try row.decode(UUID.self, at: 0), default: []].append(
                WorkflowEvent(
                    id: try row.decode(String.self, at: 1), name: try row.decode(String.self, at: 2),
                    data: try row.decode(JSONValue.self, at: 3), occurredAt: try row.decode(Date.self, at: 4)))
        }
        return events
    }

    private static func deleteWindows(on tx: PostgresConnection, _ windows: [WorkflowDigestClose]) async throws {
        try await tx.execute(
            """
            DELETE FROM workflow_digest_windows w
            USING (SELECT tenant, workflow, subscriber, \(storedKey("key")) AS k, run
                   FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::uuid[]) AS t(tenant, workflow, subscriber, key, run)
                   ORDER BY tenant, workflow, subscriber, k) t
            WHERE w.tenant_id = t.tenant AND w.workflow_key = t.workflow AND w.subscriber_id = t.subscriber
              AND w.digest_key = t.k AND w.run_id = t.run
            """,
            [
                windows.map(\.tenantId), windows.map(\.workflowKey), windows.map(\.subscriberId), windows.map(\.key),
                windows.map(\.runId)
            ])
    }

    /// The windows of runs that ended before theirs closed (cancelled, failed): later trigger
    /// events of their keys open the next digest instead of joining a run that is over.
    static func dropWindowsOfEnded(on tx: PostgresConnection, _ states: [WorkflowRunState]) async throws {
        let ended = states.filter { $0.status.hasEnded && $0.digest != nil && $0.digest?.summary == nil }
        guard !ended.isEmpty else { return }
        try await tx.execute(
            """
            DELETE FROM workflow_digest_windows w
            USING workflow_runs r, unnest($1::uuid[], $2::text[]) AS t(run, key)
            WHERE r.id = t.run AND w.tenant_id = r.tenant_id AND w.workflow_key = r.workflow_key
              AND w.subscriber_id = r.subscriber_id AND w.digest_key = \(storedKey("t.key")) AND w.run_id = t.run
            """, [ended.compactMap { UUID(uuidText: $0.runId) }, ended.map { $0.digest?.key ?? "" }])
    }

    /// The events a digest run collected, in order of arrival (the first `limit`), and how many
    /// in all (those of an open window so far).
    public func digestEvents(runId: UUID, limit: Int = 1000) async throws -> WorkflowDigestEvents {
        let rows = try await postgres.query(
            """
            SELECT event_id, occurred_at, joined_at, count(*) OVER ()::int FROM workflow_digest_events
            WHERE run_id = $1::uuid ORDER BY seq LIMIT $2
            """, [runId, limit])
        var events: [WorkflowDigestEventRef] = []
        var count = 0
        for row in rows {
            events.append(
                WorkflowDigestEventRef(
                    id: try row.decode(String.self, at: 0), occurredAt: try row.decode(Date.self, at: 1),
                    joinedAt: try row.decode(Date.self, at: 2)))
            count = try row.decode(Int.self, at: 3)
        }
        return WorkflowDigestEvents(events: events, count: count)
    }

    // MARK: - Throttles

    /// A throttle's decision for one run, in one statement under the row lock of (tenant,
    /// workflow, step, subscriber, key): passes older than the window are dropped; the run's own
    /// (`check.passKey`) is added unless `limit` passes are left; a run asking again finds its
    /// pass. Answers whether it passed and how many passes the window holds now.
    public static func throttle(
        on tx: PostgresConnection, tenantId: UUID, workflowKey: String, subscriberId: String,
        check: WorkflowThrottleCheck, now: Date
    ) async throws -> WorkflowThrottleAnswer {
        let rows = try await tx.query(
            """
            INSERT INTO workflow_throttles AS t (tenant_id, workflow_key, step, subscriber_id, throttle_key, pass_keys, pass_times)
            VALUES ($1::uuid, $2, $3, $4, \(storedKey("$5::text")), ARRAY[$6::text], ARRAY[$7::timestamptz])
            ON CONFLICT (tenant_id, workflow_key, step, subscriber_id, throttle_key) DO UPDATE SET
                (pass_keys, pass_times) = (
                    SELECT COALESCE(array_agg(k ORDER BY at, k), '{}')
                               || CASE WHEN bool_or(k = $6) OR count(*) >= $8 THEN '{}'::text[] ELSE ARRAY[$6::text] END,
                           COALESCE(array_agg(at ORDER BY at, k), '{}')
                               || CASE WHEN bool_or(k = $6) OR count(*) >= $8 THEN '{}'::timestamptz[]
                                       ELSE ARRAY[$7::timestamptz] END
                    FROM unnest(t.pass_keys, t.pass_times) AS p(k, at)
                    WHERE p.at > $7::timestamptz - make_interval(secs => $9::float8) OR p.k = $6),
                updated_at = now()
            RETURNING $6 = ANY (pass_keys), cardinality(pass_keys)
            """,
            [
                tenantId, workflowKey, check.step, subscriberId, check.key, check.passKey, now, check.limit,
                Double(check.window.seconds)
            ])
        guard let row = rows.first else { return WorkflowThrottleAnswer(passed: false, recent: check.limit) }
        let (passed, recent) = try row.decode((Bool, Int).self)
        return WorkflowThrottleAnswer(passed: passed, recent: recent)
    }
}
