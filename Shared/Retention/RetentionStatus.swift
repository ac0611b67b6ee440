import BuzzKitPostgres
import Foundation

/// What a retention pass found for one table (migration 0026, `retention_status`): the setting in
/// force and the oldest data kept, which an operator reads in the dashboard and `GET /v1/retention`.
/// The owners of the tables write it at the end of every pass that ran; the gateway only reads it,
/// since the settings live in the owners' configuration.
public struct RetentionStatus: Sendable, Hashable {
    /// The table (`workflow_runs`, `webhook_attempts`, `events`).
    public var table: String
    /// The retention in force.
    public var retention: Duration
    /// The lower bound of the oldest partition kept; nil when none holds data.
    public var oldestKept: Date?
    public var partitions: Int
    public var partitionsAhead: Int
    /// Partitions past their time kept for what they still hold (live runs).
    public var partitionsKept: Int
    public var droppedLastPass: Int
    /// When the pass ran (the database's clock).
    public var checkedAt: Date

    public init(
        table: String, retention: Duration, oldestKept: Date?, partitions: Int, partitionsAhead: Int,
        partitionsKept: Int = 0, droppedLastPass: Int = 0, checkedAt: Date = Date()
    ) {
        self.table = table
        self.retention = retention
        self.oldestKept = oldestKept
        self.partitions = partitions
        self.partitionsAhead = partitionsAhead
        self.partitionsKept = partitionsKept
        self.droppedLastPass = droppedLastPass
        self.checkedAt = checkedAt
    }

    /// Replaces the table's row (`checked_at`: the database's clock).
    public func record(on connection: PostgresConnection) async throws {
        try await connection.execute(
            """
            INSERT INTO retention_status (table_name, retention_seconds, oldest_kept, partitions, partitions_ahead,
                                          partitions_kept, dropped_last_pass, checked_at)
            VALUES ($1, $2, $3::timestamptz, $4, $5, $6, $7, now())
            ON CONFLICT (table_name) DO UPDATE SET
                retention_seconds = EXCLUDED.retention_seconds, oldest_kept = EXCLUDED.oldest_kept,
                partitions = EXCLUDED.partitions, partitions_ahead = EXCLUDED.partitions_ahead,
                partitions_kept = EXCLUDED.partitions_kept, dropped_last_pass = EXCLUDED.dropped_last_pass,
                checked_at = now()
            """,
            [
                table, Int(retention.components.seconds), oldestKept, partitions, partitionsAhead, partitionsKept,
                droppedLastPass
            ])
    }

    /// Every table's last pass, by table name.
    public static func all(on postgres: PostgresClient) async throws -> [RetentionStatus] {
        try await postgres.query(
            """
            SELECT table_name, retention_seconds, oldest_kept, partitions, partitions_ahead, partitions_kept,
                   dropped_last_pass, checked_at
            FROM retention_status ORDER BY table_name
            """
        ).map { row in
            RetentionStatus(
                table: try row.decode(String.self, at: 0), retention: .seconds(try row.decode(Int.self, at: 1)),
                oldestKept: try row.decode(Date?.self, at: 2), partitions: try row.decode(Int.self, at: 3),
                partitionsAhead: try row.decode(Int.self, at: 4), partitionsKept: try row.decode(Int.self, at: 5),
                droppedLastPass: try row.decode(Int.self, at: 6), checkedAt: try row.decode(Date.self, at: 7))
        }
    }
}
