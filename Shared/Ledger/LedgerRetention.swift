import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitWorkflowRuns
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
            pass.created += try await table.createAhead(on: connection, now: now, ahead: weeksAhead)
        }
        // An interrupted detach of any table's week is finished first; what is left is each
        // table's weeks, oldest first (a pass that died between the tables left a week in some).
        var weeks: [String: [TimePartitions.Partition]] = [:]
        for table in Self.tables {
            for partition in try await table.list(on: connection) {
                if partition.detachPending {
                    try await table.detachAndDrop(on: connection, partition)
                    pass.dropped.append(partition.name)
                } else {
                    weeks[table.parent, default: []].append(partition)
                }
            }
        }
        for week in weeks[Self.messages.parent, default: []] where week.upper <= cutoff {
            let kept = try await inUse(week, on: connection, cutoff: cutoff)
            if kept.messages > 0 || kept.chunks > 0 || kept.runs > 0 {
                pass.kept.append(kept)
                continue
            }
            let suffix = String(week.name.dropFirst(Self.messages.parent.count))
            for table in Self.tables {
                let name = table.parent + suffix
                guard let partition = weeks[table.parent]?.first(where: { $0.name == name }) else { continue }
                try await table.detachAndDrop(on: connection, partition)
                pass.dropped.append(partition.name)
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
            droppedLastPass: Self.weeksDropped(pass)
        ).record(on: connection)
        return pass
    }

    /// What keeps `week` (a partition of `messages`) in use.
    private func inUse(_ week: TimePartitions.Partition, on connection: PostgresConnection, cutoff: Date) async throws
        -> Kept
    {
        let table = TimePartitions.quote(week.name)
        let row = try await connection.query(
            """
            SELECT (SELECT count(*)::int FROM \(table) m
                    WHERE m.status NOT IN (\(Self.finalStatuses))
                       OR coalesce(m.completed_at, m.updated_at) > $1::timestamptz),
                   (SELECT count(*)::int FROM delivery_chunks k
                    WHERE EXISTS (SELECT 1 FROM unnest(k.message_ids) AS u(id)
                                  JOIN \(table) m ON m.id = u.id))
            """, [cutoff])
        let runs = try await WorkflowRunRetention.runsFiled(
            from: week.lower, to: week.upper, liveOrEndedAfter: cutoff, on: connection)
        return Kept(
            week: week.name, messages: try row.first?.decode(Int.self, at: 0) ?? 0,
            chunks: try row.first?.decode(Int.self, at: 1) ?? 0, runs: runs)
    }

    /// The weeks `pass` dropped (its `messages` partitions; `dropped` names every table's).
    public static func weeksDropped(_ pass: Pass) -> Int {
        pass.dropped.filter { $0.hasPrefix(messages.parent + "_") }.count
    }

    /// `'completed', 'failed'`: a message's final statuses as SQL literals (fixed identifiers).
    static let finalStatuses = MessageStatus.allCases.filter(\.isFinal).map { "'\($0.rawValue)'" }
        .joined(separator: ", ")
}
