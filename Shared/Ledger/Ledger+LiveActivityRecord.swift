import BuzzKitContracts
import BuzzKitPostgres
import Foundation

/// One decided Live Activity request's pushes, to record: its chunk, the `message_time` its
/// message was filed at (the deciding statement's answer), and each token's outcome.
public struct LiveActivitySendRecord: Sendable {
    public var chunk: ClaimedChunk
    public var messageTime: Date
    public var outcomes: [DeliveryOutcome]

    public init(chunk: ClaimedChunk, messageTime: Date, outcomes: [DeliveryOutcome]) {
        self.chunk = chunk
        self.messageTime = messageTime
        self.outcomes = outcomes
    }
}

extension Ledger {
    /// Records a batch of Live Activity sends in ONE statement of their own: each token's delivery
    /// inserted once with its outcome and every attempt in the one attempt format (`AttemptLog`,
    /// its request in `delivery_payloads`), the chunks deleted, the messages completed
    /// (`MessageCompletion.cte`, with their `message.completed`), each delivery's `delivery.sent`
    /// or `delivery.failed` (`deliveryEvents`), and tokens APNs called invalid marked so in the
    /// registry (unless registered again after APNs's timestamp). Answers the messages completed.
    ///
    /// Why not `record`, which pushes use: a Live Activity request is one chunk holding one
    /// message, recorded one request at a time at low rates, so the statement's fixed cost is
    /// the cost. This one knows each message's `message_time` (from the deciding statement), so
    /// it joins the ledger's weeks on it instead of computing it per message and pruning by a
    /// range; it takes its arrays as text cast in SQL, so Postgres cannot see their length and
    /// keeps ONE generic plan for it (`record`'s arrays, seen as constants, make every custom plan
    /// look cheaper than the generic one, so Postgres plans it again on every call: 0.6 ms a call
    /// in `pg_stat_statements` at 500 updates/s); and the invalidations go in the same statement,
    /// not a transaction of three.
    ///
    /// Safe to repeat, as `record`: the insert is plain; only when a delivery exists already (the
    /// sweeper recorded a stale request as lost, `recordLostLiveActivities`) is it redone with
    /// `ON CONFLICT DO NOTHING`, keeping what was recorded first, enqueuing nothing for it.
    /// Retried on a blip, since the sends already happened.
    @discardableResult
    public func recordLiveActivities(_ records: [LiveActivitySendRecord], instance: String) async throws -> Set<UUID> {
        guard !records.isEmpty else { return [] }
        let write = Self.liveActivityWrite(records, instance: instance)
        return try await retryingLedgerWrite(logger: logger) {
            do {
                return try Self.completed(
                    try await postgres.query(
                        Self.liveActivityRecordSQL(tolerant: false, invalidates: write.invalidates), write.parameters))
            } catch let error as PostgresError where error.code == .uniqueViolation {
                return try Self.completed(
                    try await postgres.query(
                        Self.liveActivityRecordSQL(tolerant: true, invalidates: write.invalidates), write.parameters))
            }
        }
    }

    /// The statement's parameters, and whether any token is to be marked invalid.
    struct LiveActivityWrite: Sendable {
        var parameters: [any PostgresEncodable]
        var invalidates: Bool
    }

    static func liveActivityRecordSQL(tolerant: Bool, invalidates: Bool) -> String {
        switch (tolerant, invalidates) {
        case (false, false): liveActivityPlain
        case (true, false): liveActivityTolerant
        case (false, true): liveActivityPlainInvalidating
        case (true, true): liveActivityTolerantInvalidating
        }
    }

    private static let liveActivityPlain = liveActivityRecordText(onConflict: "", invalidates: false)
    private static let liveActivityTolerant = liveActivityRecordText(
        onConflict: "ON CONFLICT (id, message_time) DO NOTHING", invalidates: false)
    private static let liveActivityPlainInvalidating = liveActivityRecordText(onConflict: "", invalidates: true)
    private static let liveActivityTolerantInvalidating = liveActivityRecordText(
        onConflict: "ON CONFLICT (id, message_time) DO NOTHING", invalidates: true)

    /// Parameter `n` as an array of `type`, passed as text and cast in SQL: Postgres plans it as
    /// an array of unknown length (the same in a custom and a generic plan), so it keeps the
    /// generic one.
    private static func array(_ n: Int, _ type: String) -> String { "($\(n)::text)::\(type)[]" }

    /// $1-$4 the distinct requests (id, message, payload, headers), $5 the chunks, $6 their
    /// tenants, $7 this replica, $8-$20 one element per delivery (id, its chunk's position in $5
    /// from 1, message, token, subscriber, environment, status, attempt count, last status, last
    /// reason, error code, first request, attempts), $21 the chunks' messages and $22 their
    /// `message_time`s; with `invalidates`, $23-$26 the tokens to mark invalid (tenant, token,
    /// APNs's time, reason). Answers the messages completed.
    static func liveActivityRecordText(onConflict: String, invalidates: Bool) -> String {
        let invalidation =
            invalidates
            ? """
            , invalid AS MATERIALIZED (
                SELECT * FROM unnest(\(array(23, "uuid")), \(array(24, "text")), \(array(25, "timestamptz")), \(array(26, "text")))
                    AS u(tenant_id, token, at, reason)
            ), invalid_activities AS (
                UPDATE live_activities t SET token_status = 'invalid', token_invalidated_at = u.at, token_invalid_reason = u.reason
                FROM invalid u WHERE t.tenant_id = u.tenant_id AND t.token = u.token AND t.updated_at <= u.at
            ), invalid_start_tokens AS (
                UPDATE live_activity_start_tokens t SET token_status = 'invalid', token_invalidated_at = u.at,
                    token_invalid_reason = u.reason
                FROM invalid u WHERE t.tenant_id = u.tenant_id AND t.token = u.token AND t.updated_at <= u.at
            )
            """
            : ""
        return """
            WITH times AS MATERIALIZED (
                SELECT * FROM unnest(\(array(21, "uuid")), \(array(22, "timestamptz"))) AS t(id, message_time)
            ), requests AS (
                INSERT INTO delivery_payloads (id, message_id, message_time, payload, headers)
                SELECT r.id, r.message, t.message_time, r.payload, r.headers
                FROM unnest(\(array(1, "uuid")), \(array(2, "uuid")), \(array(3, "text")), \(array(4, "json")))
                    AS r(id, message, payload, headers)
                JOIN times t ON t.id = r.message
                ON CONFLICT (id, message_time) DO NOTHING
            ), chunks AS (
                DELETE FROM delivery_chunks WHERE id = ANY(\(array(5, "uuid")))
            ), recorded AS (
                INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id, environment,
                                        status, attempt_count, last_status, last_reason, error_code, sending_by, sent_at,
                                        payload_id, attempts)
                SELECT u.id, (\(array(6, "uuid")))[u.chunk], u.message, t.message_time, u.token, u.subscriber, u.environment,
                       u.status, u.attempts, u.last_status, u.last_reason, u.error_code, $7::text,
                       CASE WHEN u.status = 'sent' THEN now() END, u.payload, u.log
                FROM unnest(\(array(8, "uuid")), \(array(9, "int")), \(array(10, "uuid")), \(array(11, "text")),
                            \(array(12, "text")), \(array(13, "text")), \(array(14, "text")), \(array(15, "int")),
                            \(array(16, "int")), \(array(17, "text")), \(array(18, "text")), \(array(19, "uuid")),
                            \(array(20, "json")))
                    AS u(id, chunk, message, token, subscriber, environment, status, attempts, last_status, last_reason,
                         error_code, payload, log)
                JOIN times t ON t.id = u.message
                \(onConflict)
                RETURNING \(deliveryReturning)
            ), \(deliveryEvents(recorded: "recorded", tenants: array(6, "uuid"))), \(MessageCompletion.cte(
                match: "(m.id, m.message_time) IN (SELECT t.id, t.message_time FROM times t)",
                recorded: array(5, "uuid"),
                written: "unnest(\(array(8, "uuid")), \(array(10, "uuid")), \(array(14, "text"))) AS w(id, message_id, status)"
            ))\(invalidation)
            SELECT id FROM completed
            """
    }

    static func liveActivityWrite(_ records: [LiveActivitySendRecord], instance: String) -> LiveActivityWrite {
        var rows = DeliveryRows(capacity: records.reduce(0) { $0 + $1.outcomes.count })
        var requests = RequestRows()
        var chunkIds = PostgresArrayText()
        var tenants = PostgresArrayText()
        var messages = PostgresArrayText()
        var times = PostgresArrayText()
        var invalidTenants = PostgresArrayText()
        var invalidTokens = PostgresArrayText()
        var invalidAt = PostgresArrayText()
        var invalidReasons = PostgresArrayText()
        var invalidates = false
        for (position, record) in records.enumerated() {
            chunkIds.append(record.chunk.id)
            tenants.append(record.chunk.tenantId)
            if let message = record.chunk.messageId {
                messages.append(message)
                times.append(record.messageTime.postgresText)
            }
            for outcome in record.outcomes {
                let device = outcome.device
                var log = AttemptLog(deliveryId: device.deliveryId)
                for attempt in outcome.attempts {
                    log.append(
                        payload: requests.id(
                            message: device.messageId, payload: attempt.payload, headers: attempt.requestHeaders),
                        sentAt: attempt.sentAt, status: attempt.status, reason: attempt.reason?.rawValue,
                        apnsId: attempt.apnsId, latency: attempt.latencyMilliseconds,
                        error: attempt.transportError?.description)
                }
                rows.append(outcome, chunk: position + 1, log: log)
                if let invalidation = outcome.invalidation {
                    invalidates = true
                    invalidTenants.append(record.chunk.tenantId)
                    invalidTokens.append(device.token)
                    invalidAt.append(invalidation.at.postgresText)
                    invalidReasons.append(invalidation.reason)
                }
            }
        }
        var parameters: [any PostgresEncodable] =
            [
                requests.ids.value, requests.messages.value, requests.payloads.value, requests.headerTexts.value,
                chunkIds.value, tenants.value, instance
            ] + rows.parameters + [messages.value, times.value]
        if invalidates {
            parameters += [invalidTenants.value, invalidTokens.value, invalidAt.value, invalidReasons.value]
        }
        return LiveActivityWrite(parameters: parameters, invalidates: invalidates)
    }
}
