import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitWire
import Foundation

/// Every statement the liveactivity service runs against the ledger and the token registry, in
/// one place (the ledger's tables are apns-sender's; when they change, this file is the port).
///
/// A batch of requests costs two statements, whatever its size: `decide` (one statement: the
/// registry rows locked and read, the decision, the message and its deliveries written
/// `sending`, the registry updated) before the pushes go out, and `record` (every attempt and
/// each delivery's outcome) after. One request alone cost seven round trips and a transaction
/// before, plus one statement after.
struct LiveActivityLedger: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    // MARK: - Deciding

    /// Decides one round of requests (`LiveActivityRounds`: no activity, push-to-start token set
    /// or message twice in it) in one statement, and returns one plan per request, in order.
    ///
    /// The rules, decided under the registry rows' locks (`FOR UPDATE`, taken in key order so
    /// concurrent batches cannot deadlock), so two sends to one activity are ordered:
    /// - a request whose message exists was decided before (a retry, or an entry a dead replica
    ///   held): `replay`, answered from the ledger, never sent again;
    /// - update / end: nothing registered for (subscriber, activity) → `live_activity_not_found`;
    ///   ended → `activity_ended`; token refused before → `token_invalid`; `timestamp` older
    ///   than the last one sent → `stale_timestamp` (none of these is sent, no message written);
    ///   otherwise sent, and the activity's last timestamp and event are updated (an `end` ends it);
    /// - start: every push-to-start token of the type; refused ones `token_invalid`; none usable →
    ///   `no_push_to_start_token`.
    /// The message (kind `live_activity`, already `fanned_out`) and one delivery per token it
    /// goes to (`sending`, by `instance`) are written in the same statement, so a replica that
    /// dies after it leaves them `sending`: a kill can lose that push, never double it. A message
    /// written meanwhile by another replica (the same entry twice at once) makes it a `replay`.
    /// A deadlock or serialization failure rolls the statement back; it is run again.
    func decide(_ entries: [LiveActivityEntry], instance: String) async throws -> [LiveActivityPlan] {
        guard !entries.isEmpty else { return [] }
        var index = PostgresArrayText(), message = PostgresArrayText(), tenant = PostgresArrayText()
        var event = PostgresArrayText(), subscriber = PostgresArrayText(), activity = PostgresArrayText()
        var type = PostgresArrayText(), timestamp = PostgresArrayText(), content = PostgresArrayText()
        for (i, entry) in entries.enumerated() {
            let request = entry.request
            index.append(i)
            message.append(entry.messageId)
            tenant.append(entry.tenantId)
            event.append(request.event.rawValue)
            subscriber.append(request.to)
            activity.append(request.event == .start ? nil : request.activityId)
            type.append(request.event == .start ? request.attributesType : nil)
            timestamp.append(Int(request.timestamp))
            content.append(utf8: JSONValue.object(["liveActivity": request.json]).jsonBytes)
        }
        let parameters: [any PostgresEncodable] = [
            index.value, message.value, tenant.value, event.value, subscriber.value, activity.value, type.value,
            timestamp.value, content.value, instance
        ]
        let statement = Self.decideStatement(starts: entries.contains { $0.request.event == .start })
        let rows = try await retryingRollback { try await postgres.query(statement, parameters) }
        var found: [[PostgresRow]] = Array(repeating: [], count: entries.count)
        for row in rows { found[try row.decode(Int.self, at: 0)].append(row) }
        return try zip(entries, found).map { entry, rows in try Self.plan(entry.request, rows) }
    }

    /// One request's plan from its rows of the deciding statement: `(i, decision, token,
    /// environment, bundle_id, delivery_id, apns_id)`; a request with no registry row has one row
    /// of NULLs.
    static func plan(_ request: LiveActivitySendRequest, _ rows: [PostgresRow]) throws -> LiveActivityPlan {
        var targets: [LiveActivityTarget] = []
        var skipped: [LiveActivityResult] = []
        for row in rows {
            guard let decision = try row.decode(String?.self, at: 1) else { continue }
            if decision == "replay" { return .replay }
            let token = try row.decode(String.self, at: 2)
            if decision == "send" {
                targets.append(
                    LiveActivityTarget(
                        deliveryId: try row.decode(UUID.self, at: 5), apnsId: try row.decode(UUID.self, at: 6),
                        token: token,
                        environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 3)) ?? .sandbox,
                        bundleId: try row.decode(String?.self, at: 4)))
            } else {
                skipped.append(
                    LiveActivityResult(
                        activityId: request.event == .start ? nil : request.activityId,
                        attributesType: request.event == .start ? request.attributesType : nil, token: token,
                        deliveryId: nil, status: decision))
            }
        }
        switch request.event {
        case .update, .end:
            if targets.isEmpty && skipped.isEmpty {
                let activity = request.activityId ?? ""
                return .error(
                    code: .liveActivityNotFound,
                    message: "no Live Activity \(activity) is registered for subscriber \(request.to)")
            }
        case .start:
            if targets.isEmpty {
                return .error(
                    code: .noPushToStartToken,
                    message:
                        "subscriber \(request.to) has no usable push-to-start token of type \(request.attributesType ?? "")"
                )
            }
        }
        return .send(targets: targets.sorted { $0.token < $1.token }, skipped: skipped.sorted { $0.token < $1.token })
    }

    /// Runs `body` again (at most 5 times in all) when Postgres rolled it back for a deadlock or
    /// a serialization failure: nothing of it happened, so running it again is safe.
    private func retryingRollback<T>(_ body: () async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as PostgresError where attempt < 5 && ["40P01", "40001"].contains(error.code.rawValue) {
                logger.debug("live activity decision rolled back, running it again", metadata: ["error": "\(error)"])
                attempt += 1
            }
        }
    }

    /// `$1` index in the batch, `$2` message id, `$3` tenant, `$4` event, `$5` subscriber, `$6`
    /// activity id (update, end), `$7` attributes type (start), `$8` timestamp, `$9` the
    /// message's content, `$10` this replica. One row per (request, token), or one of NULLs.
    ///
    /// Two texts of one statement: with the push-to-start parts, and without them for rounds of
    /// updates and ends only (the usual case), whose plan has a third fewer nodes to start and
    /// run: 1,615-1,713 against 1,352-1,504 single-row decisions a second on one connection here.
    static func decideStatement(starts: Bool) -> String {
        starts ? decideWithStarts : decideWithoutStarts
    }

    static let decideWithStarts = decideText(starts: true)
    static let decideWithoutStarts = decideText(starts: false)

    private static func decideText(starts: Bool) -> String {
        let startToken = """
            start_token AS MATERIALIZED (
                SELECT f.i, t.token, t.environment, t.bundle_id, t.token_status
                FROM fresh f JOIN live_activity_start_tokens t
                  ON t.tenant_id = f.tenant_id AND t.subscriber_id = f.subscriber_id
                     AND t.attributes_type = f.attributes_type
                WHERE f.event = 'start'
                ORDER BY t.tenant_id, t.subscriber_id, t.attributes_type, t.device_key
                FOR UPDATE OF t
            ),
            """
        let startTargets = """
                    UNION ALL
                    SELECT s.i, s.token, s.environment, s.bundle_id,
                           CASE WHEN s.token_status = 'invalid' THEN 'token_invalid' ELSE 'send' END
                    FROM start_token s
            """
        let startUpdate = """
            start_update AS (
                UPDATE live_activity_start_tokens t SET last_sent_at = now()
                FROM written w JOIN target x ON x.i = w.i AND x.decision = 'send'
                WHERE w.event = 'start' AND t.tenant_id = w.tenant_id AND t.attributes_type = w.attributes_type
                  AND t.token = x.token
            ),
            """
        return """
            WITH request AS MATERIALIZED (
                SELECT * FROM unnest($1::int[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[],
                                     $8::bigint[], $9::text[])
                    AS r(i, message_id, tenant_id, event, subscriber_id, activity_id, attributes_type, ts, content)
            ),
            replayed AS MATERIALIZED (
                SELECT r.i FROM request r WHERE EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id)
            ),
            fresh AS MATERIALIZED (
                SELECT r.* FROM request r WHERE r.i NOT IN (SELECT i FROM replayed)
            ),
            activity AS MATERIALIZED (
                SELECT f.i, a.token, a.environment, a.bundle_id, a.state, a.token_status, a.last_timestamp
                FROM fresh f JOIN live_activities a
                  ON a.tenant_id = f.tenant_id AND a.activity_id = f.activity_id AND a.subscriber_id = f.subscriber_id
                WHERE f.event <> 'start'
                ORDER BY a.tenant_id, a.activity_id
                FOR UPDATE OF a
            ),
            \(starts ? startToken : "")
            target AS MATERIALIZED (
                SELECT x.*, gen_random_uuid() AS delivery_id, gen_random_uuid() AS apns_id FROM (
                    SELECT a.i, a.token, a.environment, a.bundle_id,
                           CASE WHEN a.state = 'ended' THEN 'activity_ended'
                                WHEN a.token_status = 'invalid' THEN 'token_invalid'
                                WHEN a.last_timestamp > f.ts THEN 'stale_timestamp' ELSE 'send' END AS decision
                    FROM activity a JOIN fresh f ON f.i = a.i
            \(starts ? startTargets : "")
                ) x
            ),
            message AS (
                INSERT INTO messages (id, tenant_id, target, content, status, kind, audience_size)
                SELECT f.message_id, f.tenant_id, jsonb_build_object('to', jsonb_build_array(f.subscriber_id)),
                       f.content::jsonb, 'fanned_out', 'live_activity', n.count
                FROM fresh f
                JOIN (SELECT i, count(*)::int AS count FROM target WHERE decision = 'send' GROUP BY i) n ON n.i = f.i
                ON CONFLICT (id) DO NOTHING
                RETURNING id
            ),
            written AS MATERIALIZED (
                SELECT f.* FROM fresh f JOIN message m ON m.id = f.message_id
            ),
            activity_update AS (
                UPDATE live_activities a SET last_timestamp = w.ts, last_event = w.event, last_sent_at = now(),
                    state = CASE WHEN w.event = 'end' THEN 'ended' ELSE a.state END,
                    ended_by = CASE WHEN w.event = 'end' THEN 'send' ELSE a.ended_by END,
                    ended_at = CASE WHEN w.event = 'end' THEN now() ELSE a.ended_at END
                FROM written w
                WHERE w.event <> 'start' AND a.tenant_id = w.tenant_id AND a.activity_id = w.activity_id
            ),
            \(starts ? startUpdate : "")
            delivery AS (
                INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment, status,
                                        apns_id, sending_by, sending_at)
                SELECT x.delivery_id, w.tenant_id, w.message_id, x.token, w.subscriber_id, x.environment, 'sending',
                       x.apns_id, $10, now()
                FROM written w JOIN target x ON x.i = w.i AND x.decision = 'send'
            )
            SELECT r.i, 'replay', NULL, NULL, NULL, NULL::uuid, NULL::uuid FROM replayed r
            UNION ALL
            SELECT f.i, CASE WHEN x.decision = 'send' AND w.i IS NULL THEN 'replay' ELSE x.decision END,
                   x.token, x.environment, x.bundle_id,
                   CASE WHEN x.decision = 'send' THEN x.delivery_id END, CASE WHEN x.decision = 'send' THEN x.apns_id END
            FROM fresh f LEFT JOIN target x ON x.i = f.i LEFT JOIN written w ON w.i = f.i
            """
    }

    // MARK: - Recording

    /// Writes a batch's outcomes: every attempt into `delivery_attempts` (payload bytes, headers
    /// as sent with the JWT redacted, status, reason, `apns-id`, latency), each delivery's final
    /// status, and the tokens APNs refused marked invalid in the registry (unless registered
    /// again after APNs's timestamp). One statement, or one transaction when a token is
    /// invalidated; retried on a blip, since the sends already happened.
    func record(_ outcomes: [LiveActivityOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        var aId = PostgresArrayText(), aNumber = PostgresArrayText(), aPayload = PostgresArrayText()
        var aHeaders = PostgresArrayText(), aStatus = PostgresArrayText(), aReason = PostgresArrayText()
        var aApnsId = PostgresArrayText(), aLatency = PostgresArrayText(), aError = PostgresArrayText()
        var uId = PostgresArrayText(), uStatus = PostgresArrayText(), uAttempts = PostgresArrayText()
        var uLast = PostgresArrayText(), uReason = PostgresArrayText(), uCode = PostgresArrayText()
        for outcome in outcomes {
            for (index, attempt) in outcome.attempts.enumerated() {
                aId.append(outcome.target.deliveryId)
                aNumber.append(index + 1)
                aPayload.append(utf8: attempt.payload)
                aHeaders.append(utf8: attempt.requestHeadersJSON.jsonBytes)
                aStatus.append(attempt.status)
                aReason.append(attempt.reason?.rawValue)
                aApnsId.append(attempt.apnsId)
                aLatency.append(attempt.latencyMilliseconds)
                aError.append(attempt.transportError?.description)
            }
            uId.append(outcome.target.deliveryId)
            uStatus.append(outcome.status)
            uAttempts.append(outcome.attempts.count)
            uLast.append(outcome.attempts.last?.status)
            uReason.append(outcome.reason)
            uCode.append(outcome.errorCode)
        }
        let parameters: [any PostgresEncodable] = [
            aId.value, aNumber.value, aPayload.value, aHeaders.value, aStatus.value, aReason.value, aApnsId.value,
            aLatency.value, aError.value, uId.value, uStatus.value, uAttempts.value, uLast.value, uReason.value,
            uCode.value
        ]
        let invalid = outcomes.filter { $0.invalidAt != nil }
        try await retryingLedgerWrite(logger: logger) {
            guard !invalid.isEmpty else {
                try await postgres.execute(Self.recordStatement, parameters)
                return
            }
            try await postgres.withTransaction { tx in
                try await tx.execute(Self.recordStatement, parameters)
                let tenants = invalid.map(\.tenantId), tokens = invalid.map(\.target.token)
                let at = invalid.map { $0.invalidAt ?? Date() }, reasons = invalid.map { $0.reason ?? "Unregistered" }
                for table in ["live_activities", "live_activity_start_tokens"] {
                    try await tx.execute(
                        """
                        UPDATE \(table) t SET token_status = 'invalid', token_invalidated_at = u.at, token_invalid_reason = u.reason
                        FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[]) AS u(tenant_id, token, at, reason)
                        WHERE t.tenant_id = u.tenant_id AND t.token = u.token AND t.updated_at <= u.at
                        """, [tenants, tokens, at, reasons])
                }
            }
        }
    }

    static let recordStatement = """
        WITH attempts AS (
            INSERT INTO delivery_attempt_rows (delivery_id, attempt, payload, headers, status, reason, apns_id, latency_ms, error)
            SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::json[], $5::int[], $6::text[], $7::text[],
                                 $8::int[], $9::text[])
            ON CONFLICT DO NOTHING
        )
        UPDATE deliveries d SET status = u.status, attempt_count = u.attempts, last_status = u.last_status,
            last_reason = u.last_reason, error_code = u.error_code,
            sent_at = CASE WHEN u.status = 'sent' THEN now() ELSE d.sent_at END, updated_at = now()
        FROM unnest($10::uuid[], $11::text[], $12::int[], $13::int[], $14::text[], $15::text[])
            AS u(id, status, attempts, last_status, last_reason, error_code)
        WHERE d.id = u.id
        """

    // MARK: - Replaying

    /// The answers of requests decided before, as the ledger has them now (a delivery a dead
    /// replica left `sending` says so), one per request, in order. One statement for all.
    func replay(_ entries: [LiveActivityEntry]) async throws -> [LiveActivityReply] {
        guard !entries.isEmpty else { return [] }
        var ids = PostgresArrayText()
        for entry in entries { ids.append(entry.messageId) }
        let rows = try await postgres.query(
            """
            SELECT message_id, id, device_token, status, last_status, last_reason, apns_id::text FROM deliveries
            WHERE message_id = ANY($1::uuid[]) ORDER BY message_id, device_token
            """, [ids.value])
        var byMessage: [UUID: [PostgresRow]] = [:]
        for row in rows { byMessage[try row.decode(UUID.self, at: 0), default: []].append(row) }
        return try entries.map { entry in
            let request = entry.request
            let results = try (byMessage[entry.messageId] ?? []).map { row in
                LiveActivityResult(
                    activityId: request.event == .start ? nil : request.activityId,
                    attributesType: request.event == .start ? request.attributesType : nil,
                    token: try row.decode(String.self, at: 2), deliveryId: try row.decode(UUID.self, at: 1),
                    status: try row.decode(String.self, at: 3), apnsStatus: try row.decode(Int?.self, at: 4),
                    reason: try row.decode(String?.self, at: 5), apnsId: try row.decode(String?.self, at: 6))
            }
            return .results(messageId: entry.messageId, results)
        }
    }
}
