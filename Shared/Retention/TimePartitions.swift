import BuzzKitPostgres
import Foundation

/// Weekly (or daily) range partitions of a table partitioned by a `timestamptz` (migration 0024's
/// `bk_retention_create_weeks` / `bk_retention_partitions`, 0028's `bk_retention_create_days`),
/// and the one way to drop one without blocking its writers (docs/data-lifecycle.md, "Retention").
///
/// `DROP TABLE` of an attached partition takes `ACCESS EXCLUSIVE` on the parent: it waits for every
/// transaction on the table and queues every later one behind it. `detachAndDrop` instead runs
/// `DETACH PARTITION … CONCURRENTLY` (`SHARE UPDATE EXCLUSIVE` on the parent: inserts, updates and
/// reads go on; it waits for the transactions that may still see the partition and blocks none),
/// then drops the table it detached, which no one reads any more. Both must run outside a
/// transaction block: call these on a connection with no transaction open.
///
/// `maintain` is the whole pass for a table whose rows are never in use past their time (webhook
/// attempts); the runs' pass (`WorkflowRunRetention`) adds its own test of what is still live.
public struct TimePartitions: Sendable {
    /// The partitioned table (of the connection's current schema).
    public let parent: String
    /// How long one partition spans.
    public let period: Period

    /// A partition's span: a UTC week from Monday (most tables), or a UTC day (idempotency
    /// records, kept 24 hours).
    public enum Period: Sendable, Hashable {
        case week
        case day
    }

    public init(parent: String, period: Period = .week) {
        self.parent = parent
        self.period = period
    }

    /// One partition: its bounds (`lower` nil: `MINVALUE`, the legacy partition) and whether a
    /// concurrent detach of it was interrupted.
    public struct Partition: Sendable, Hashable {
        public var name: String
        public var lower: Date?
        public var upper: Date
        public var detachPending: Bool

        public init(name: String, lower: Date?, upper: Date, detachPending: Bool) {
            self.name = name
            self.lower = lower
            self.upper = upper
            self.detachPending = detachPending
        }
    }

    /// The partitions, oldest first.
    public func list(on connection: PostgresConnection) async throws -> [Partition] {
        try await connection.query(
            """
            SELECT part, lower_bound, upper_bound, detach_pending FROM bk_retention_partitions($1)
            ORDER BY upper_bound
            """, [parent]
        ).map { row in
            Partition(
                name: try row.decode(String.self, at: 0), lower: try row.decode(Date?.self, at: 1),
                upper: try row.decode(Date.self, at: 2), detachPending: try row.decode(Bool.self, at: 3))
        }
    }

    /// Creates the weekly partitions after the newest one up to `weeksAhead` weeks past the week
    /// after `now`; answers one line per partition (`created …` or `skipped …: why`).
    @discardableResult
    public func createWeeks(on connection: PostgresConnection, now: Date, weeksAhead: Int) async throws -> [String] {
        try await connection.query(
            "SELECT bk_retention_create_weeks($1, $2, $3::timestamptz)", [parent, weeksAhead, now]
        ).map { try $0.decode(String.self, at: 0) }
    }

    /// Creates the partitions of this table's `period` after the newest one up to `ahead` periods
    /// past the one after `now`; answers the names of those this call created (a partition a
    /// concurrent pass created first is skipped).
    public func createAhead(on connection: PostgresConnection, now: Date, ahead: Int) async throws -> [String] {
        let function =
            switch period {
            case .week: "bk_retention_create_weeks"
            case .day: "bk_retention_create_days"
            }
        return try await connection.query("SELECT \(function)($1, $2, $3::timestamptz)", [parent, ahead, now])
            .map { try $0.decode(String.self, at: 0) }
            .filter { $0.hasPrefix("created ") }.map { String($0.dropFirst("created ".count)) }
    }

    /// Detaches `partition` concurrently (or finishes an interrupted detach of it) and drops it.
    public func detachAndDrop(on connection: PostgresConnection, _ partition: Partition) async throws {
        let parentName = Self.quote(parent)
        let name = Self.quote(partition.name)
        if partition.detachPending {
            try await connection.execute("ALTER TABLE \(parentName) DETACH PARTITION \(name) FINALIZE")
        } else {
            try await connection.execute("ALTER TABLE \(parentName) DETACH PARTITION \(name) CONCURRENTLY")
        }
        try await connection.execute("DROP TABLE \(name)")
    }

    /// What one pass did (no week is ever kept past its time here).
    public typealias Pass = RetentionPass<Never>

    /// One pass under the table's advisory lock: makes the partitions up to `ahead` periods past
    /// the one after `now` (the database's clock when nil) and drops every partition wholly older
    /// than `now - retention`; records what it found (`RetentionStatus`).
    public func maintain(
        on connection: PostgresConnection, now given: Date?, retention: Duration, ahead: Int, oldestColumn: String
    ) async throws -> Pass {
        try await locked(on: connection) {
            var pass = Pass(ran: true)
            let now = try await Self.now(on: connection, given)
            let cutoff = now.addingTimeInterval(-Double(retention.components.seconds))
            pass.created = try await createAhead(on: connection, now: now, ahead: ahead)
            for partition in try await list(on: connection) where partition.detachPending || partition.upper <= cutoff {
                try await detachAndDrop(on: connection, partition)
                pass.dropped.append(partition.name)
            }
            let remaining = try await list(on: connection)
            pass.partitions = remaining.count
            pass.partitionsAhead = remaining.filter { ($0.lower ?? .distantPast) >= now }.count
            pass.oldest = try await oldest(on: connection, remaining.first, column: oldestColumn)
            try await RetentionStatus(
                table: parent, retention: retention, oldestKept: pass.oldest, partitions: pass.partitions,
                partitionsAhead: pass.partitionsAhead, droppedLastPass: pass.dropped.count
            ).record(on: connection)
            return pass
        } ?? Pass()
    }

    /// `body` under the table's advisory lock (released after it, thrown or not); nil when
    /// another session holds the lock (a pass of another replica), and then `body` does not run.
    public func locked<T>(on connection: PostgresConnection, _ body: () async throws -> T) async throws -> T? {
        guard try await tryLock(on: connection) else { return nil }
        do {
            let result = try await body()
            try await unlock(on: connection)
            return result
        } catch {
            try? await unlock(on: connection)
            throw error
        }
    }

    /// `given`, or the database's clock.
    public static func now(on connection: PostgresConnection, _ given: Date?) async throws -> Date {
        if let given { return given }
        return try await connection.query("SELECT now()").first?.decode(Date.self, at: 0) ?? Date()
    }

    /// The lower bound of `partition`, or for the legacy partition (no lower bound) its oldest
    /// `column` (a scan: the legacy partition is temporary).
    public func oldest(on connection: PostgresConnection, _ partition: Partition?, column: String) async throws -> Date?
    {
        guard let partition else { return nil }
        if let lower = partition.lower { return lower }
        return try await connection.query(
            "SELECT min(\(Self.quote(column))) FROM \(Self.quote(partition.name))"
        ).first?.decode(Date?.self, at: 0)
    }

    /// `name` as a quoted SQL identifier.
    public static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Takes the session advisory lock of this table's maintenance (one per table and schema), or
    /// answers false when another session holds it. Release it with `unlock` on the same connection.
    public func tryLock(on connection: PostgresConnection) async throws -> Bool {
        try await connection.query(
            "SELECT pg_try_advisory_lock(hashtext('buzzkit.retention:' || $1 || ':' || current_schema()))", [parent]
        ).first?.decode(Bool.self, at: 0) ?? false
    }

    public func unlock(on connection: PostgresConnection) async throws {
        try await connection.execute(
            "SELECT pg_advisory_unlock(hashtext('buzzkit.retention:' || $1 || ':' || current_schema()))", [parent])
    }
}
