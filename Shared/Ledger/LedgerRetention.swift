import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitWorkflows
import Foundation

/// Retention of the ledger (migration 0027; docs/data-lifecycle.md, "Retention"): `messages`,
/// `deliveries` and `delivery_payloads` are partitioned by week of `message_time`, the same weeks
/// in all three; a pass creates the weeks ahead and drops a week from all three at once when it is
/// past the retention and holds nothing still in use. apns-sender runs it (`LedgerRetentionService`).
///
/// A week is dropped only when its whole range ends before `now - retention` and
/// - no message of it is unfinished (`queued`, `fanning_out`, `fanned_out`: a send still going,
///   whatever its age) and none completed or failed after `now - retention`;
/// - no chunk still to send names one of its messages;
/// - no workflow run whose id carries a time in it is live or ended after `now - retention` (its
///   sends are filed under its start: a run waiting for weeks still writes into its week).
/// Such a week is kept and reported (`Pass.kept`); every pass tests it again. When the legacy
/// partition (the rows from before migration 0027) goes, the attempt rows older builds wrote for
/// Live Activity sends (`delivery_attempt_rows`, all of them from before) go with it.
///
/// Several replicas: a pass holds the session advisory lock of `messages`' maintenance; a replica
/// that does not get it does nothing (`Pass.ran == false`). A pass that dies half-way leaves
/// nothing wrong: deliveries and requests go before their messages, and the next pass finishes an
/// interrupted detach.
public struct LedgerRetention: Sendable {
    public let postgres: PostgresClient
    /// Messages are kept at least this long after they were written and after they ended. Default 90 days.
    public var retentionDays: Int
    /// Weekly partitions made ahead of the current week. Default 4.
    public var weeksAhead: Int

    /// The tables, children first (the order of a week's drop).
    static let tables = ["deliveries", "delivery_payloads", "messages"].map { TimePartitions(parent: $0) }
    static let messages = TimePartitions(parent: "messages")

    public init(postgres: PostgresClient, retentionDays: Int = 90, weeksAhead: Int = 4) {
        self.postgres = postgres
        self.retentionDays = retentionDays
        self.weeksAhead = weeksAhead
    }

    /// A week kept past its time, and what keeps it.
    public struct Kept: Sendable, Hashable {
        public var week: String
        /// Messages not ended, or ended within the retention.
        public var messages: Int
        /// Chunks still to send of its messages.
        public var chunks: Int
        /// Workflow runs filed in it that are live or ended within the retention.
        public var runs: Int

        public init(week: String, messages: Int, chunks: Int, runs: Int) {
            self.week = week
            self.messages = messages
            self.chunks = chunks
            self.runs = runs
        }
    }

    /// What one pass did and found (`created` and `dropped` name every table's partitions; the
    /// counts and `oldest` are `messages`').
    public typealias Pass = RetentionPass<Kept>

    /// One pass as of `now` (the database's clock when nil; tests move it).
    public func maintain(now: Date? = nil) async throws -> Pass {
        try await postgres.withConnection { connection in
            try await Self.messages.locked(on: connection) { try await maintain(on: connection, now: now) } ?? Pass()
        }
    }

    private func maintain(on connection: PostgresConnection, now given: Date?) async throws -> Pass {
        var pass = Pass(ran: true)
        let now = try await TimePartitions.now(on: connection, given)
        let cutoff = now.addingTimeInterval(-Double(retentionDays) * 86_400)
        for table in Self.tables {
            pass.created += try await table.createWeeks(on: connection, now: now, weeksAhead: weeksAhead)
                .filter { $0.hasPrefix("created ") }.map { String($0.dropFirst("created ".count)) }
        }
        // An interrupted detach of any table's week is finished first.
        for table in Self.tables {
            for partition in try await table.list(on: connection) where partition.detachPending {
                try await table.detachAndDrop(on: connection, partition)
                pass.dropped.append(partition.name)
            }
        }
        for week in try await Self.messages.list(on: connection) where week.upper <= cutoff {
            let kept = try await inUse(week, on: connection, cutoff: cutoff)
            if kept.messages > 0 || kept.chunks > 0 || kept.runs > 0 {
                pass.kept.append(kept)
                continue
            }
            let suffix = String(week.name.dropFirst("messages".count))
            for table in Self.tables {
                let name = table.parent + suffix
                guard let partition = try await table.list(on: connection).first(where: { $0.name == name }) else {
                    continue
                }
                try await table.detachAndDrop(on: connection, partition)
                pass.dropped.append(name)
            }
            if week.lower == nil {
                try await connection.execute("TRUNCATE delivery_attempt_rows")
            }
        }

        let remaining = try await Self.messages.list(on: connection)
        pass.partitions = remaining.count
        pass.partitionsAhead = remaining.filter { ($0.lower ?? .distantPast) >= now }.count
        pass.oldest = try await Self.messages.oldest(on: connection, remaining.first, column: "created_at")
        try await RetentionStatus(
            table: "messages", retention: .seconds(retentionDays * 86_400), oldestKept: pass.oldest,
            partitions: pass.partitions, partitionsAhead: pass.partitionsAhead, partitionsKept: pass.kept.count,
            droppedLastPass: pass.dropped.filter { $0.hasPrefix("messages_") }.count
        ).record(on: connection)
        return pass
    }

    /// What keeps `week` (a partition of `messages`) in use.
    private func inUse(_ week: TimePartitions.Partition, on connection: PostgresConnection, cutoff: Date) async throws
        -> Kept
    {
        let table = TimePartitions.quote(week.name)
        // The runs filed in the week: by the time in their id, looked for among the runs created
        // around it (a run's id and its created_at are taken a moment apart). The legacy week
        // (no lower bound) also holds the sends of runs whose id has no time.
        let runsInWeek =
            week.lower == nil
            ? "(bk_uuid7_time(r.id) IS NULL OR bk_uuid7_time(r.id) < $2::timestamptz)"
            : """
            r.created_at >= $3::timestamptz - interval '1 day' AND r.created_at < $2::timestamptz + interval '1 day'
              AND bk_uuid7_time(r.id) >= $3::timestamptz AND bk_uuid7_time(r.id) < $2::timestamptz
            """
        let row = try await connection.query(
            """
            SELECT (SELECT count(*)::int FROM \(table) m
                    WHERE m.status NOT IN (\(Self.literals(MessageStatus.allCases.filter(\.isFinal).map(\.rawValue))))
                       OR coalesce(m.completed_at, m.updated_at) > $1::timestamptz),
                   (SELECT count(*)::int FROM delivery_chunks k
                    WHERE EXISTS (SELECT 1 FROM unnest(k.message_ids) AS u(id)
                                  JOIN \(table) m ON m.id = u.id)),
                   (SELECT count(*)::int FROM workflow_runs r
                    WHERE (r.status IN (\(Self.literals(WorkflowRunStatus.live.map(\.rawValue))))
                           OR coalesce(r.ended_at, r.updated_at) > $1::timestamptz)
                      AND \(runsInWeek))
            """, [cutoff, week.upper] + (week.lower.map { [$0] } ?? []))
        return Kept(
            week: week.name, messages: try row.first?.decode(Int.self, at: 0) ?? 0,
            chunks: try row.first?.decode(Int.self, at: 1) ?? 0, runs: try row.first?.decode(Int.self, at: 2) ?? 0)
    }

    /// Fixed identifiers (a vocabulary's raw values) as SQL literals: `'a', 'b'`.
    static func literals(_ values: [String]) -> String {
        values.map { "'\($0)'" }.joined(separator: ", ")
    }
}
