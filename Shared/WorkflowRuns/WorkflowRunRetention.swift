import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitWorkflows
import Foundation

/// Retention of workflow runs (migration 0024; docs/data-lifecycle.md, "Retention"): `workflow_runs`
/// is partitioned by week of `created_at`; a pass creates the weeks ahead and drops each week that
/// is past the retention and holds nothing still in use. The workflow service runs it
/// (`RunRetentionService`); every statement on the runs' tables stays in this module.
///
/// A week is dropped only when its whole range ends before `now - retention` and it holds no run
/// `pending` or `running` (a run still waiting, whatever its age) and none that ended after
/// `now - retention`. Such a week is kept and reported (`Pass.kept`); every pass tests it again.
/// Before the drop, the week's rows in the side tables go: its trigger records
/// (`workflow_run_triggers`), leftover inbox rows and gathered digest events. A pass that dies
/// half-way leaves nothing wrong: the next one deletes what is left and finishes an interrupted
/// detach.
///
/// Several replicas: a pass holds a session advisory lock on its connection; a replica that does
/// not get it does nothing (`Pass.ran == false`).
public struct WorkflowRunRetention: Sendable {
    public let postgres: PostgresClient
    /// Finished runs are kept at least this long after they ended. Default 30 days.
    public var retentionDays: Int
    /// Weekly partitions made ahead of the current week. Default 4.
    public var weeksAhead: Int

    static let partitions = TimePartitions(parent: "workflow_runs")

    public init(postgres: PostgresClient, retentionDays: Int = 30, weeksAhead: Int = 4) {
        self.postgres = postgres
        self.retentionDays = retentionDays
        self.weeksAhead = weeksAhead
    }

    /// A week kept past its time: how many of its runs are live, and how many ended within the retention.
    public struct Kept: Sendable, Hashable {
        public var partition: String
        public var liveRuns: Int
        public var recentlyEnded: Int

        public init(partition: String, liveRuns: Int, recentlyEnded: Int) {
            self.partition = partition
            self.liveRuns = liveRuns
            self.recentlyEnded = recentlyEnded
        }
    }

    /// What one pass did and found.
    public typealias Pass = RetentionPass<Kept>

    /// One pass as of `now` (the database's clock when nil; tests move it).
    public func maintain(now: Date? = nil) async throws -> Pass {
        try await postgres.withConnection { connection in
            try await Self.partitions.locked(on: connection) { try await maintain(on: connection, now: now) } ?? Pass()
        }
    }

    private func maintain(on connection: PostgresConnection, now given: Date?) async throws -> Pass {
        var pass = Pass(ran: true)
        let now = try await TimePartitions.now(on: connection, given)
        let cutoff = now.addingTimeInterval(-Double(retentionDays) * 86_400)
        let partitions = Self.partitions
        pass.created = try await partitions.createAhead(on: connection, now: now, ahead: weeksAhead)

        for partition in try await partitions.list(on: connection) {
            if partition.detachPending {
                try await partitions.detachAndDrop(on: connection, partition)
                pass.dropped.append(partition.name)
                continue
            }
            guard partition.upper <= cutoff else { continue }
            let table = TimePartitions.quote(partition.name)
            let row = try await connection.query(
                """
                SELECT count(*) FILTER (WHERE status IN (\(WorkflowRunStatus.liveSQL))),
                       count(*) FILTER (WHERE status NOT IN (\(WorkflowRunStatus.liveSQL))
                                        AND coalesce(ended_at, updated_at) > $1::timestamptz)
                FROM \(table)
                """, [cutoff])
            let live = try row.first?.decode(Int.self, at: 0) ?? 0
            let recent = try row.first?.decode(Int.self, at: 1) ?? 0
            if live > 0 || recent > 0 {
                pass.kept.append(Kept(partition: partition.name, liveRuns: live, recentlyEnded: recent))
                continue
            }
            try await connection.execute(
                """
                WITH t AS (DELETE FROM workflow_run_triggers t USING \(table) r
                           WHERE t.tenant_id = r.tenant_id AND t.workflow_key = r.workflow_key
                             AND t.trigger_key = r.trigger_key AND t.run_id = r.id),
                     i AS (DELETE FROM workflow_run_inputs WHERE run_id IN (SELECT id FROM \(table)))
                DELETE FROM workflow_digest_events WHERE run_id IN (SELECT id FROM \(table))
                """)
            try await partitions.detachAndDrop(on: connection, partition)
            pass.dropped.append(partition.name)
        }

        // Inbox rows whose run is gone (a deleted tenant's runs went by cascade): the inbox is a
        // queue, small at any time.
        try await connection.execute(
            """
            DELETE FROM workflow_run_inputs i
            WHERE NOT EXISTS (SELECT 1 FROM workflow_runs r WHERE r.id = i.run_id)
              AND i.created_at < $1::timestamptz - interval '1 hour'
            """, [now])

        let remaining = try await partitions.list(on: connection)
        pass.partitions = remaining.count
        pass.partitionsAhead = remaining.filter { ($0.lower ?? .distantPast) >= now }.count
        pass.oldest = try await partitions.oldest(on: connection, remaining.first, column: "created_at")
        try await RetentionStatus(
            table: "workflow_runs", retention: .seconds(retentionDays * 86_400), oldestKept: pass.oldest,
            partitions: pass.partitions, partitionsAhead: pass.partitionsAhead, partitionsKept: pass.kept.count,
            droppedLastPass: pass.dropped.count
        ).record(on: connection)
        return pass
    }
}
