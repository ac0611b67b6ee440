import BuzzKitPostgres
import BuzzKitRetention
import Foundation

/// Retention of webhook attempts (migration 0025; docs/data-lifecycle.md, "Retention"):
/// `webhook_attempts` is partitioned by week of `attempted_at`; a pass makes the weeks ahead and
/// drops the weeks wholly older than the retention (`BUZZKIT_WEBHOOKS_RETENTION`), by a concurrent
/// detach then a drop, so the dispatcher's inserts are never held up. An attempt is a record of
/// what happened, never still in use: nothing keeps a week past its time. Several replicas: a
/// pass holds the table's advisory lock; one that does not get it does nothing.
public struct WebhookAttemptRetention: Sendable {
    public let postgres: PostgresClient
    public var retention: Duration
    /// Weekly partitions made ahead of the current week. Default 4.
    public var weeksAhead: Int

    static let partitions = TimePartitions(parent: "webhook_attempts")

    public init(postgres: PostgresClient, retention: Duration, weeksAhead: Int = 4) {
        self.postgres = postgres
        self.retention = retention
        self.weeksAhead = weeksAhead
    }

    /// One pass as of `now` (the database's clock when nil; tests move it).
    public func maintain(now: Date? = nil) async throws -> TimePartitions.Pass {
        let retention = retention
        let weeksAhead = weeksAhead
        return try await postgres.withConnection { connection in
            try await Self.partitions.maintain(
                on: connection, now: now, retention: retention, ahead: weeksAhead, oldestColumn: "attempted_at")
        }
    }
}
