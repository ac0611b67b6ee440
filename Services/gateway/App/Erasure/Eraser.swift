import BuzzKitCore
import BuzzKitCrypto
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import BuzzKitWorkflowRuns
import Foundation

/// Erases a subscriber everywhere (issue 30; docs/data-lifecycle.md). `start` does in one
/// transaction what is small and must be atomic with the subscriber's disappearance (the row, its
/// devices, aliases, installations, topic memberships, Live Activities) and writes the durable
/// `erasures` record; `advance` works through the rest (`ErasureStep`) in batches, each its own
/// transaction with the record locked and its counts updated, so it can stop anywhere (a time
/// budget, a crash) and be resumed by anyone (`ErasureWorker`).
struct Eraser: Sendable {
    let postgres: PostgresClient
    let secretKey: [UInt8]
    let settings: ErasureSettings
    let logger: Logger

    /// The audit's name of a person: HMAC-SHA-256 under the server's secret of tenant and id, hex.
    func subjectHash(tenantId: UUID, subscriberId: String) -> String {
        Hex.string(
            Digest.hmacSHA256(
                key: secretKey, message: Array("erasure:\(tenantId.lowercasedText):\(subscriberId)".utf8)))
    }

    /// What `start` found: the erasure it began, or the latest one of the same person when there
    /// was nothing left to erase (a repeated DELETE).
    struct Started: Sendable {
        var record: ErasureRecord?
        var deleted: Bool
    }

    /// Begins the erasure of `subscriberId`: a new one when the subscriber exists or was never
    /// erased; otherwise the person's latest erasure, untouched (the call is idempotent).
    func start(tenantId: UUID, subscriberId: String, apiKeyId: UUID?) async throws -> Started {
        let hash = subjectHash(tenantId: tenantId, subscriberId: subscriberId)
        return try await postgres.withTransaction { tx -> Started in
            let exists = try await !tx.query(
                "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2 FOR UPDATE", [tenantId, subscriberId]
            ).isEmpty
            if !exists,
                let latest = try await tx.query(
                    """
                    SELECT \(ErasureRecord.columns) FROM erasures
                    WHERE tenant_id = $1::uuid AND subject_hash = $2 ORDER BY requested_at DESC LIMIT 1
                    """, [tenantId, hash]
                ).first
            {
                return Started(record: try ErasureRecord(latest), deleted: false)
            }
            // The person's other names (anonymous ids of their installations) and device tokens,
            // kept in the record while it runs: the rows that lead to them go now.
            let ids = try await tx.query(
                """
                SELECT anonymous_id FROM subscriber_aliases WHERE tenant_id = $1::uuid AND subscriber_id = $2
                UNION SELECT anonymous_id FROM installations WHERE tenant_id = $1::uuid AND subscriber_id = $2
                """, [tenantId, subscriberId]
            ).map { try $0.decode(String.self, at: 0) }
            let tokens = try await tx.query(
                """
                SELECT token FROM devices WHERE tenant_id = $1::uuid AND subscriber_id = $2
                UNION SELECT token FROM live_activities WHERE tenant_id = $1::uuid AND subscriber_id = $2
                UNION SELECT token FROM live_activity_start_tokens WHERE tenant_id = $1::uuid AND subscriber_id = $2
                """, [tenantId, subscriberId]
            ).map { try $0.decode(String.self, at: 0) }
            let subjects = [subscriberId] + ids.filter { $0 != subscriberId }.sorted()
            let installations = try await tx.execute(
                """
                DELETE FROM installations
                WHERE tenant_id = $1::uuid AND (subscriber_id = $2 OR anonymous_id = ANY ($3::text[]))
                """, [tenantId, subscriberId, subjects])
            let aliases = try await tx.execute(
                "DELETE FROM subscriber_aliases WHERE tenant_id = $1::uuid AND subscriber_id = $2",
                [tenantId, subscriberId])
            let topics = try await tx.execute(
                "DELETE FROM topic_subscriptions WHERE tenant_id = $1::uuid AND subscriber_id = $2",
                [tenantId, subscriberId])
            // No device.unregistered event: it would carry the very id and tokens being erased.
            let devices = try await tx.execute(
                "DELETE FROM devices WHERE tenant_id = $1::uuid AND subscriber_id = $2", [tenantId, subscriberId])
            let activities = try await Ledger.eraseLiveActivities(
                on: tx, tenantId: tenantId, subscriberId: subscriberId)
            try await tx.execute(
                "DELETE FROM subscribers WHERE tenant_id = $1::uuid AND id = $2", [tenantId, subscriberId])
            let counts: JSONValue = [
                "installations": .int(Int64(installations)), "aliases": .int(Int64(aliases)),
                "topicSubscriptions": .int(Int64(topics)), "devices": .int(Int64(devices)),
                "liveActivities": .int(Int64(activities.activities)),
                "pushToStartTokens": .int(Int64(activities.startTokens))
            ]
            let row = try await tx.query(
                """
                INSERT INTO erasures (id, tenant_id, subject_hash, api_key_id, subject_ids, tokens, step, counts)
                VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5::text[], $6::text[], $7, $8::jsonb)
                RETURNING \(ErasureRecord.columns)
                """,
                [
                    UUID(), tenantId, hash, apiKeyId, subjects, tokens.sorted(), ErasureStep.events.rawValue, counts
                ])
            return Started(record: try row.first.map(ErasureRecord.init), deleted: exists)
        }
    }

    /// What one batch left.
    enum Progress: Sendable, Equatable {
        /// More to do now.
        case more
        /// Nothing can be done now: a send or a run still holds the person (try again later).
        case waiting
        /// Another process holds the erasure (it works on it), or it is not running.
        case busy
        case completed
    }

    /// Runs batches of erasure `id` until it completes, waits, is busy elsewhere, or `deadline`
    /// passes; answers the last batch's progress. `wait`: lock the record even when another
    /// process holds it (the request that began it); otherwise skip it then.
    func advance(_ id: UUID, until deadline: ContinuousClock.Instant, wait: Bool) async throws -> Progress {
        while true {
            let progress = try await batch(id, wait: wait)
            if progress != .more || ContinuousClock.now >= deadline { return progress }
        }
    }

    /// The record as it is now (nil: no such erasure in this tenant).
    func read(_ id: UUID, tenantId: UUID) async throws -> ErasureRecord? {
        try await postgres.query(
            "SELECT \(ErasureRecord.columns) FROM erasures WHERE id = $1::uuid AND tenant_id = $2::uuid", [id, tenantId]
        ).first.map(ErasureRecord.init)
    }

    /// Running erasures older than the request budget (their request has handed them over), oldest first.
    func running(limit: Int) async throws -> [UUID] {
        try await postgres.query(
            """
            SELECT id FROM erasures WHERE status = 'running' AND requested_at < now() - make_interval(secs => $1)
            ORDER BY requested_at LIMIT $2
            """, [settings.requestBudget.sqlSeconds, limit]
        ).map { try $0.decode(UUID.self, at: 0) }
    }

    /// One batch of the record's current step, in one transaction with the record locked.
    func batch(_ id: UUID, wait: Bool) async throws -> Progress {
        try await postgres.withTransaction { tx -> Progress in
            guard
                let row = try await tx.query(
                    """
                    SELECT \(ErasureRecord.columns) FROM erasures WHERE id = $1::uuid AND status = 'running'
                    FOR UPDATE \(wait ? "" : "SKIP LOCKED")
                    """, [id]
                ).first
            else { return .busy }
            let record = try ErasureRecord(row)
            guard let step = record.step else { return try await finish(tx, record) }
            let steps = ErasureSteps(tx: tx, record: record, settings: settings)
            switch try await steps.run(step) {
            case .more: return .more
            case .waiting: return .waiting
            case .done:
                let all = ErasureStep.allCases
                guard let index = all.firstIndex(of: step), index + 1 < all.count else {
                    return try await finish(tx, record)
                }
                try await tx.execute(
                    "UPDATE erasures SET step = $2, cursor_at = NULL, cursor_id = NULL WHERE id = $1::uuid",
                    [id, all[index + 1].rawValue])
                return .more
            }
        }
    }

    /// The end: what named the person leaves the record.
    private func finish(_ tx: PostgresConnection, _ record: ErasureRecord) async throws -> Progress {
        try await tx.execute(
            """
            UPDATE erasures SET status = 'completed', subject_ids = NULL, tokens = NULL, completed_at = now(),
                cursor_at = NULL, cursor_id = NULL
            WHERE id = $1::uuid
            """, [record.id])
        logger.info(
            "erasure.completed",
            metadata: ["erasure": record.id.lowercasedText, "tenant": record.tenantId.lowercasedText])
        return .completed
    }
}

/// The erasure's settings (the gateway's erasure variables, see `GatewayConfiguration`).
public struct ErasureSettings: Sendable {
    /// How long `DELETE /v1/subscribers/{id}` works before it answers `202` with the erasure to poll.
    public var requestBudget: Duration = .seconds(2)
    /// Rows per batch (events, receipts, runs); the ledger walks a tenth as many messages per batch.
    public var batchSize = 1000
    /// How often the erasure loop looks for erasures to finish.
    public var interval: Duration = .seconds(1)
    /// How long the person's running workflow runs have to end after being asked to cancel before
    /// they are deleted anyway (a workflow service that is down must not hold an erasure forever).
    public var runCancelWait: Duration = .seconds(30)

    public init() {}
}
