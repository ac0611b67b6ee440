import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// What the gateway's routes do with endpoints (migration 0020): create one with a fresh secret,
/// list, read, change, delete, rotate its secret, queue a test, list its attempts and replay its
/// messages. An endpoint's subscriptions (`webhook_subscriptions`, what producers join) are
/// rewritten in the same transaction as every change of its events or state.
public struct WebhookEndpointStore: Sendable {
    public let postgres: PostgresClient
    private let sealer: AESGCM

    /// - Parameter secretKey: `BUZZKIT_SECRET_KEY` (32 bytes), which seals the signing secrets.
    public init(postgres: PostgresClient, secretKey: [UInt8]) throws {
        self.postgres = postgres
        sealer = try AESGCM(key: secretKey)
    }

    /// An endpoint with its secret, shown once (create and rotate).
    public struct WithSecret: Sendable {
        public var record: WebhookEndpointRecord
        public var secret: WebhookSecret

        /// The record's JSON plus `secret`.
        public var jsonValue: JSONValue {
            guard case .object(var object) = record.jsonValue else { return record.jsonValue }
            object["secret"] = .string(secret.text)
            return .object(object)
        }
    }

    // MARK: - Create, read, list

    public func create(
        tenantId: UUID, url: String, events: [WebhookEventType], description: String?, enabled: Bool
    ) async throws -> WithSecret {
        let id = UUID()
        let secret = WebhookSecret.generate()
        let sealed = try secret.sealed(by: sealer, endpointId: id)
        let record = try await postgres.withTransaction { tx -> WebhookEndpointRecord in
            let rows = try await tx.query(
                """
                INSERT INTO webhook_endpoints (id, tenant_id, url, description, event_types, enabled, disabled_reason,
                                               disabled_at, secret_sealed)
                VALUES ($1::uuid, $2::uuid, $3, $4, $5::text[], $6, CASE WHEN $6 THEN NULL ELSE 'api' END,
                        CASE WHEN $6 THEN NULL ELSE now() END, $7::bytea)
                RETURNING \(WebhookEndpointRecord.columns)
                """, [id, tenantId, url, description, events.map(\.rawValue), enabled, Data(sealed)])
            try await Self.writeSubscriptions(on: tx, endpointId: id)
            return try WebhookEndpointRecord.decode(rows[0])
        }
        return WithSecret(record: record, secret: secret)
    }

    public func get(tenantId: UUID, id: UUID) async throws -> WebhookEndpointRecord? {
        try await postgres.query(
            "SELECT \(WebhookEndpointRecord.columns) FROM webhook_endpoints WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [tenantId, id]
        ).first.map(WebhookEndpointRecord.decode)
    }

    /// Newest first; `after` a record's `cursor` (nil: the first page). Answers the page and the
    /// next page's cursor (nil on the last).
    public func list(tenantId: UUID, after cursor: String?, limit: Int) async throws -> (
        [WebhookEndpointRecord], next: String?
    ) {
        var micros: Int64?
        var last: UUID?
        if let cursor {
            let parts = cursor.split(separator: "_", maxSplits: 1)
            guard parts.count == 2, let m = Int64(parts[0]), let id = UUID(uuidText: String(parts[1])) else {
                throw WebhookStoreError.badCursor
            }
            micros = m
            last = id
        }
        let rows = try await postgres.query(
            """
            SELECT \(WebhookEndpointRecord.columns) FROM webhook_endpoints
            WHERE tenant_id = $1::uuid
              AND ($2::int8 IS NULL OR (round(extract(epoch FROM created_at) * 1000000)::int8, id) < ($2::int8, $3::uuid))
            ORDER BY created_at DESC, id DESC LIMIT $4
            """, [tenantId, micros, last, limit + 1])
        var records = try rows.map(WebhookEndpointRecord.decode)
        var next: String?
        if records.count > limit {
            records.removeLast()
            next = records.last?.cursor
        }
        return (records, next)
    }

    // MARK: - Change, delete

    /// What `PATCH /v1/webhooks/{id}` changes: nil leaves a field as it is; `description: .some(nil)` clears it.
    public struct Change: Sendable {
        public var url: String?
        public var events: [WebhookEventType]?
        public var description: String??
        public var enabled: Bool?

        public init(
            url: String? = nil, events: [WebhookEventType]? = nil, description: String?? = nil, enabled: Bool? = nil
        ) {
            self.url = url
            self.events = events
            self.description = description
            self.enabled = enabled
        }
    }

    /// Applies `change`; nil when the tenant has no such endpoint. Disabling pauses its pending
    /// messages; enabling clears its failure record and sends them again from the schedule's start.
    public func update(tenantId: UUID, id: UUID, _ change: Change) async throws -> WebhookEndpointRecord? {
        try await postgres.withTransaction { tx -> WebhookEndpointRecord? in
            let rows = try await tx.query(
                """
                WITH old AS (SELECT id, enabled FROM webhook_endpoints WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE)
                UPDATE webhook_endpoints e SET
                    url = coalesce($3, e.url),
                    event_types = coalesce($4::text[], e.event_types),
                    description = CASE WHEN $5::boolean THEN $6 ELSE e.description END,
                    enabled = coalesce($7, e.enabled),
                    disabled_reason = CASE WHEN $7 IS NULL THEN e.disabled_reason WHEN $7 THEN NULL
                                           WHEN e.enabled THEN 'api' ELSE e.disabled_reason END,
                    disabled_at = CASE WHEN $7 IS NULL THEN e.disabled_at WHEN $7 THEN NULL
                                       WHEN e.enabled THEN now() ELSE e.disabled_at END,
                    failing_since = CASE WHEN $7 AND NOT e.enabled THEN NULL ELSE e.failing_since END,
                    updated_at = now()
                FROM old WHERE e.id = old.id
                RETURNING \(WebhookEndpointRecord.columns(of: "e")),
                          old.enabled AS was_enabled
                """,
                [
                    tenantId, id, change.url, change.events.map { $0.map(\.rawValue) }, change.description != nil,
                    change.description ?? nil, change.enabled
                ])
            guard let row = rows.first else { return nil }
            let record = try WebhookEndpointRecord.decode(row)
            let wasEnabled = try row.decode(Bool.self, named: "was_enabled")
            try await Self.writeSubscriptions(on: tx, endpointId: id)
            if wasEnabled && !record.enabled {
                try await Self.pause(on: tx, endpointId: id)
            } else if !wasEnabled && record.enabled {
                try await Self.resume(on: tx, endpointId: id)
            }
            return record
        }
    }

    /// Deletes the endpoint with its messages and attempts; false when there was none.
    public func delete(tenantId: UUID, id: UUID) async throws -> Bool {
        try await postgres.execute(
            "DELETE FROM webhook_endpoints WHERE tenant_id = $1::uuid AND id = $2::uuid", [tenantId, id]) > 0
    }

    /// A new secret; the current one becomes the previous one and keeps signing beside it for
    /// `overlap` (both signatures in `webhook-signature`). Nil when there is no such endpoint.
    public func rotateSecret(tenantId: UUID, id: UUID, overlap: Duration) async throws -> WithSecret? {
        let secret = WebhookSecret.generate()
        let sealed = try secret.sealed(by: sealer, endpointId: id)
        let rows = try await postgres.query(
            """
            UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, secret_sealed = $3::bytea,
                previous_secret_expires_at = now() + $4::int8 * interval '1 millisecond', updated_at = now()
            WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING \(WebhookEndpointRecord.columns)
            """, [tenantId, id, Data(sealed), overlap.milliseconds])
        guard let row = rows.first else { return nil }
        return WithSecret(record: try WebhookEndpointRecord.decode(row), secret: secret)
    }

    // MARK: - Test, attempts, replay

    public enum TestRequest: Sendable, Hashable {
        /// Queued: the message's id (its `webhook-id`).
        case queued(UUID)
        case notFound
        /// A disabled endpoint is sent nothing: enable it first.
        case disabled
    }

    /// Queues a `webhook.test` event for this endpoint only (through the outbox, like any event).
    public func sendTest(tenantId: UUID, id: UUID) async throws -> TestRequest {
        let eventId = UUID()
        let rows = try await postgres.query(
            """
            WITH e AS (SELECT id, tenant_id, enabled FROM webhook_endpoints WHERE tenant_id = $1::uuid AND id = $2::uuid),
            q AS (
                INSERT INTO webhook_outbox (endpoint_id, tenant_id, event_id, event_type, occurred_at, data)
                SELECT id, tenant_id, $3::uuid, '\(WebhookEventType.webhookTest.rawValue)', now(),
                       jsonb_build_object('endpointId', id, 'message', 'A test event from BuzzKit: this endpoint is reachable and verifies signatures.')
                FROM e WHERE enabled RETURNING event_id)
            SELECT e.enabled, (SELECT count(*) FROM q) FROM e
            """, [tenantId, id, eventId])
        guard let row = rows.first else { return .notFound }
        return try row.decode(Bool.self, at: 0) ? .queued(eventId) : .disabled
    }

    /// Newest first, keyset on the attempt id (`before`: the last id of the previous page). Nil
    /// when the tenant has no such endpoint.
    public func attempts(tenantId: UUID, endpointId: UUID, before: Int64?, limit: Int) async throws -> (
        [WebhookAttemptRecord], next: Int64?
    )? {
        try await postgres.withConnection { connection in
            guard
                !(try await connection.query(
                    "SELECT 1 FROM webhook_endpoints WHERE tenant_id = $1::uuid AND id = $2::uuid",
                    [tenantId, endpointId]
                )).isEmpty
            else { return nil }
            let rows = try await connection.query(
                """
                SELECT \(WebhookAttemptRecord.columns) FROM webhook_attempts
                WHERE endpoint_id = $1::uuid AND ($2::int8 IS NULL OR id < $2::int8) ORDER BY id DESC LIMIT $3
                """, [endpointId, before, limit + 1])
            var records = try rows.map(WebhookAttemptRecord.decode)
            var next: Int64?
            if records.count > limit {
                records.removeLast()
                next = records.last?.id
            }
            return (records, next)
        }
    }

    /// Sends again, with their original ids, the endpoint's messages made since `since` (delivered,
    /// failed or still retrying; one being sent right now is left to its send), from the
    /// schedule's start. Answers how many; nil when there is no such endpoint.
    public func replay(tenantId: UUID, id: UUID, since: Date) async throws -> Int? {
        try await postgres.withTransaction { tx -> Int? in
            let endpoint = try await tx.query(
                "SELECT enabled FROM webhook_endpoints WHERE tenant_id = $1::uuid AND id = $2::uuid FOR SHARE",
                [tenantId, id])
            guard let row = endpoint.first else { return nil }
            let enabled = try row.decode(Bool.self, at: 0)
            return try await tx.execute(
                """
                UPDATE webhook_messages SET status = 'pending', attempts = 0,
                    next_attempt_at = CASE WHEN $3 THEN now() END
                WHERE endpoint_id = $1::uuid AND created_at >= $2::timestamptz AND claim IS NULL
                """, [id, since, enabled])
        }
    }

    // MARK: - Shared statements

    /// Rewrites an endpoint's rows of `webhook_subscriptions`: its event types while enabled, none otherwise.
    static func writeSubscriptions(on tx: PostgresConnection, endpointId: UUID) async throws {
        try await tx.execute(
            """
            WITH gone AS (DELETE FROM webhook_subscriptions WHERE endpoint_id = $1::uuid)
            INSERT INTO webhook_subscriptions (tenant_id, event_type, endpoint_id)
            SELECT DISTINCT tenant_id, unnest(event_types), id FROM webhook_endpoints WHERE id = $1::uuid AND enabled
            ON CONFLICT DO NOTHING
            """, [endpointId])
    }

    /// A disabled endpoint's pending messages wait (next_attempt_at NULL) until it is enabled.
    static func pause(on tx: PostgresConnection, endpointId: UUID) async throws {
        try await tx.execute(
            "UPDATE webhook_messages SET next_attempt_at = NULL WHERE endpoint_id = $1::uuid AND status = 'pending' AND claim IS NULL",
            [endpointId])
    }

    static func resume(on tx: PostgresConnection, endpointId: UUID) async throws {
        try await tx.execute(
            """
            UPDATE webhook_messages SET next_attempt_at = now(), attempts = 0
            WHERE endpoint_id = $1::uuid AND status = 'pending' AND next_attempt_at IS NULL
            """, [endpointId])
    }
}

/// A store's refusal of its input (distinct from a database failure).
public enum WebhookStoreError: Error, Sendable, Hashable {
    /// A list cursor this API did not make.
    case badCursor
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
