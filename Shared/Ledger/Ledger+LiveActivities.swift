import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// A token a Live Activity send goes to: its device in the request's chunk (the delivery id is
/// also the `apns-id` of every attempt) and the bundle id its topic is made of.
public struct LiveActivityTarget: Sendable {
    public var device: ChunkDevice
    public var bundleId: String?

    public init(device: ChunkDevice, bundleId: String?) {
        self.device = device
        self.bundleId = bundleId
    }

    public var token: String { device.token }
    public var environment: APNsEnvironment { device.apnsEnvironment }
}

/// What deciding found for one request (`Ledger.decideLiveActivities`).
public enum LiveActivityPlan: Sendable {
    /// Decided before (its message exists): answered from the ledger, never sent again.
    case replay
    /// The request ends in this error (`live_activity_not_found`, `no_push_to_start_token`).
    case error(code: ErrorCode, message: String)
    /// The chunk written for it (claimed by the deciding replica; its devices are the targets),
    /// the tokens it goes to (at least one), and those it skips (with why: `activityEnded`, ...).
    case send(chunk: ClaimedChunk, targets: [LiveActivityTarget], skipped: [LiveActivityResult])
    /// Every token is skipped (with why): nothing is sent, no message written.
    case skipped([LiveActivityResult])
}

/// Live Activity sends in the ledger (the liveactivity service runs these; apns-sender's sweeper
/// runs `recordLostLiveActivities`).
///
/// What a request leaves, stage by stage:
/// 1. decided (`decideLiveActivities`, one statement): its message (`fanned_out`, kind
///    `live_activity`) and ONE chunk of kind `live_activity` holding its tokens, claimed by the
///    deciding replica, with the registry updated. No delivery row yet.
/// 2. recorded (`record`, one statement for the batch): each token's delivery inserted ONCE with
///    its outcome and its attempts in the format pushes use, the chunk deleted, the message
///    completed, refused tokens marked invalid.
/// A replica that dies between 1 and 2 leaves the chunk claimed: the push may have gone out, so
/// it is never sent again. A request retried (or an entry claimed from the dead replica) finds
/// its message and is answered from the ledger (`replay`: `sending` while the chunk is pending);
/// once the chunk is older than the sweeper's stale time, `recordLostLiveActivities` records its
/// deliveries `failed` / `sender_lost` and completes the message.
extension Ledger {
    /// How the deciding statement decides one (request, token): sent, or skipped with why.
    enum LiveActivityDecision: String {
        case send
        case replay
        case activityEnded = "activity_ended"
        case tokenInvalid = "token_invalid"
        case staleTimestamp = "stale_timestamp"
    }

    // MARK: - Deciding

    /// Decides one round of requests (`LiveActivityRounds`: no activity, push-to-start token set
    /// or message twice in it) in one statement, and returns one plan per request, in order.
    ///
    /// The rules, decided under the registry rows' locks (`FOR UPDATE`, taken in key order so
    /// concurrent batches cannot deadlock), so two sends to one activity are ordered:
    /// - a request whose message exists was decided before (a retry, or an entry a dead replica
    ///   held): `replay`, answered from the ledger, never sent again;
    /// - update / end: nothing registered for (subscriber, activity) → `live_activity_not_found`;
    ///   ended → `activityEnded`; token refused before → `tokenInvalid`; `timestamp` older than
    ///   the last one sent → `staleTimestamp` (none of these is sent, no message written);
    ///   otherwise sent, and the activity's last timestamp and event are updated (an `end` ends it);
    /// - start: every push-to-start token of the type; refused ones `tokenInvalid`; none usable →
    ///   `no_push_to_start_token`.
    /// The message (kind `live_activity`, `fanned_out`) and its chunk (kind `live_activity`, its
    /// tokens, claimed by `instance`) are written in the same statement, so a replica that dies
    /// after it leaves the chunk claimed: a kill can lose that push, never double it. A message
    /// written meanwhile by another replica (the same entry twice at once) makes it a `replay`.
    /// A deadlock or serialization failure rolls the statement back; it is run again.
    public func decideLiveActivities(_ entries: [LiveActivityEntry], instance: String) async throws
        -> [LiveActivityPlan]
    {
        guard !entries.isEmpty else { return [] }
        var index = PostgresArrayText()
        var message = PostgresArrayText()
        var tenant = PostgresArrayText()
        var event = PostgresArrayText()
        var subscriber = PostgresArrayText()
        var activity = PostgresArrayText()
        var type = PostgresArrayText()
        var timestamp = PostgresArrayText()
        var content = PostgresArrayText()
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
        return try zip(entries, found).map { entry, rows in try Self.plan(entry, rows) }
    }

    /// One request's plan from its rows of the deciding statement: `(i, decision, token,
    /// environment, bundle_id, chunk_id)`; a request with no registry row has one row of NULLs.
    static func plan(_ entry: LiveActivityEntry, _ rows: [PostgresRow]) throws -> LiveActivityPlan {
        let request = entry.request
        var targets: [LiveActivityTarget] = []
        var skipped: [LiveActivityResult] = []
        var chunkId: UUID?
        for row in rows {
            guard let text = try row.decode(String?.self, at: 1) else { continue }
            guard let decision = LiveActivityDecision(rawValue: text) else {
                throw PostgresError(code: .dataException, message: "unknown Live Activity decision '\(text)'")
            }
            if decision == .replay { return .replay }
            let token = try row.decode(String.self, at: 2)
            switch decision {
            case .replay:
                return .replay
            case .send:
                chunkId = try row.decode(UUID.self, at: 5)
                targets.append(
                    LiveActivityTarget(
                        device: ChunkDevice(
                            messageId: entry.messageId, token: token, subscriberId: request.to,
                            environment: try row.decode(String.self, at: 3)),
                        bundleId: try row.decode(String?.self, at: 4)))
            case .activityEnded, .tokenInvalid, .staleTimestamp:
                skipped.append(
                    LiveActivityResult(
                        activityId: request.event == .start ? nil : request.activityId,
                        attributesType: request.event == .start ? request.attributesType : nil, token: token,
                        deliveryId: nil, status: LiveActivityResult.Status(rawValue: decision.rawValue) ?? .failed))
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
        targets.sort { $0.token < $1.token }
        skipped.sort { $0.token < $1.token }
        guard let chunkId, !targets.isEmpty else { return .skipped(skipped) }
        let chunk = ClaimedChunk(
            id: chunkId, tenantId: entry.tenantId, messageId: entry.messageId, kind: .liveActivity,
            devices: targets.map(\.device))
        return .send(chunk: chunk, targets: targets, skipped: skipped)
    }

    /// Runs `body` again (at most 5 times in all) when Postgres rolled it back for a deadlock or
    /// a serialization failure: nothing of it happened, so running it again is safe.
    private func retryingRollback<T>(_ body: () async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as PostgresError
                where attempt < 5 && (error.code == .deadlockDetected || error.code == .serializationFailure)
            {
                logger.debug("live activity decision rolled back, running it again", metadata: ["error": "\(error)"])
                attempt += 1
            }
        }
    }

    /// `$1` index in the batch, `$2` message id, `$3` tenant, `$4` event, `$5` subscriber, `$6`
    /// activity id (update, end), `$7` attributes type (start), `$8` timestamp, `$9` the
    /// message's content, `$10` this replica. One row per (request, token), or one of NULLs:
    /// `(i, decision, token, environment, bundle_id, chunk_id)`.
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
        let send = LiveActivityDecision.send.rawValue
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
                           CASE WHEN s.token_status = 'invalid' THEN '\(LiveActivityDecision.tokenInvalid.rawValue)'
                                ELSE '\(send)' END
                    FROM start_token s
            """
        let startUpdate = """
            start_update AS (
                UPDATE live_activity_start_tokens t SET last_sent_at = now()
                FROM written w JOIN target x ON x.i = w.i AND x.decision = '\(send)'
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
                SELECT r.i FROM request r
                WHERE EXISTS (SELECT 1 FROM messages m
                              WHERE m.id = r.message_id AND \(LedgerTime.prune("m.message_time", id: "r.message_id")))
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
                SELECT a.i, a.token, a.environment, a.bundle_id,
                       CASE WHEN a.state = 'ended' THEN '\(LiveActivityDecision.activityEnded.rawValue)'
                            WHEN a.token_status = 'invalid' THEN '\(LiveActivityDecision.tokenInvalid.rawValue)'
                            WHEN a.last_timestamp > f.ts THEN '\(LiveActivityDecision.staleTimestamp.rawValue)'
                            ELSE '\(send)' END AS decision
                FROM activity a JOIN fresh f ON f.i = a.i
            \(starts ? startTargets : "")
            ),
            message AS (
                INSERT INTO messages (id, message_time, tenant_id, target, content, status, kind, audience_size)
                SELECT f.message_id, \(LedgerTime.newMessage("f.message_id")), f.tenant_id, jsonb_build_object('to', jsonb_build_array(f.subscriber_id)),
                       f.content::jsonb, 'fanned_out', 'live_activity', n.count
                FROM fresh f
                JOIN (SELECT i, count(*)::int AS count FROM target WHERE decision = '\(send)' GROUP BY i) n ON n.i = f.i
                ON CONFLICT (id, message_time) DO NOTHING
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
                RETURNING a.tenant_id, a.activity_id, a.subscriber_id, a.attributes_type, a.ended_at, w.event
            ),
            ended_events AS (
                \(endedEvents(from: "activity_update e", endedBy: .send, filter: "e.event = 'end'"))
            ),
            \(starts ? startUpdate : "")
            chunk AS (
                INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments,
                                             sending_by, claimed_at, kind)
                SELECT gen_random_uuid(), w.tenant_id, w.message_id, array_agg(w.message_id ORDER BY x.token),
                       array_agg(x.token ORDER BY x.token), array_agg(w.subscriber_id ORDER BY x.token),
                       array_agg(x.environment ORDER BY x.token), $10, now(), '\(ChunkKind.liveActivity.rawValue)'
                FROM written w JOIN target x ON x.i = w.i AND x.decision = '\(send)'
                GROUP BY w.i, w.tenant_id, w.message_id
                RETURNING id, message_id
            )
            SELECT r.i, '\(LiveActivityDecision.replay.rawValue)', NULL, NULL, NULL, NULL::uuid FROM replayed r
            UNION ALL
            SELECT f.i,
                   CASE WHEN x.decision = '\(send)' AND w.i IS NULL THEN '\(LiveActivityDecision.replay.rawValue)'
                        ELSE x.decision END,
                   x.token, x.environment, x.bundle_id, CASE WHEN x.decision = '\(send)' THEN c.id END
            FROM fresh f LEFT JOIN target x ON x.i = f.i LEFT JOIN written w ON w.i = f.i
            LEFT JOIN chunk c ON c.message_id = w.message_id
            """
    }

    /// `live_activity.ended` for the rows of `from` (alias `e`: `tenant_id`, `activity_id`,
    /// `subscriber_id`, `attributes_type`, `ended_at`) that `filter` keeps, as the seam's INSERT.
    /// An activity ends once (`ended` is final, and only a statement that finds it `active` ends
    /// it), so its id, derived from the tenant and the activity, is enqueued once.
    static func endedEvents(from: String, endedBy: LiveActivityVocabulary.EndedBy, filter: String?) -> String {
        WebhookOutbox.insertSQL(
            WebhookEventSource(
                from: from, tenantId: "e.tenant_id", type: WebhookEventSource.literal(.liveActivityEnded),
                eventId: "bk_webhook_event_id('live_activity.ended', e.tenant_id || ':' || e.activity_id)",
                occurredAt: "e.ended_at",
                data: WebhookEventData.liveActivityEnded(
                    activityId: "e.activity_id", subscriberId: "e.subscriber_id", attributesType: "e.attributes_type",
                    endedBy: "'\(endedBy.rawValue)'", endedAt: "e.ended_at"),
                filter: filter))
    }

    // MARK: - Replaying

    /// The answers of requests decided before, as the ledger has them now (a token whose chunk is
    /// still pending says `sending`), one per request, in order. One statement for all.
    public func replayLiveActivities(_ entries: [LiveActivityEntry]) async throws -> [LiveActivityReply] {
        guard !entries.isEmpty else { return [] }
        var ids = PostgresArrayText()
        for entry in entries { ids.append(entry.messageId) }
        let range = LedgerTime.Range(of: entries.lazy.map(\.messageId))
        let rows = try await postgres.query(
            """
            SELECT message_id, id, device_token, status, last_status, last_reason, coalesce(apns_id, id)::text
            FROM deliveries
            WHERE message_id = ANY($1::uuid[]) AND \(LedgerTime.prune("message_time", lower: "$2", upper: "$3"))
            UNION ALL
            SELECT u.m, bk_delivery_id(u.m, u.t), u.t, '\(DeliveryStatus.sending.rawValue)', NULL::int, NULL::text,
                   bk_delivery_id(u.m, u.t)::text
            FROM delivery_chunks k CROSS JOIN LATERAL unnest(k.message_ids, k.tokens) AS u(m, t)
            WHERE k.message_id = ANY($1::uuid[])
            ORDER BY 1, 3
            """,
            [ids.value, range.lower, range.upper])
        var byMessage: [UUID: [PostgresRow]] = [:]
        for row in rows { byMessage[try row.decode(UUID.self, at: 0), default: []].append(row) }
        return try entries.map { entry in
            let request = entry.request
            let results = try (byMessage[entry.messageId] ?? []).map { row in
                let status = DeliveryStatus(rawValue: try row.decode(String.self, at: 3)) ?? .failed
                return LiveActivityResult(
                    activityId: request.event == .start ? nil : request.activityId,
                    attributesType: request.event == .start ? request.attributesType : nil,
                    token: try row.decode(String.self, at: 2), deliveryId: try row.decode(UUID.self, at: 1),
                    status: LiveActivityResult.Status(status), apnsStatus: try row.decode(Int?.self, at: 4),
                    reason: try row.decode(String?.self, at: 5), apnsId: try row.decode(String?.self, at: 6))
            }
            return .results(messageId: entry.messageId, results)
        }
    }

    // MARK: - Lost requests

    /// Records as lost up to `limit` Live Activity chunks claimed longer than `staleAfter` ago:
    /// their replica stopped after deciding them and before recording them, and the pushes may
    /// have gone out, so they are never sent again. One statement: each token's delivery inserted
    /// `failed` / `sender_lost` with no attempt known, the chunk deleted, the message completed
    /// (`MessageCompletion`). `FOR UPDATE SKIP LOCKED`: two sweepers never take the same chunk; a
    /// replica that was only slow and records later keeps what this wrote. Answers how many
    /// requests it recorded.
    @discardableResult
    public func recordLostLiveActivities(staleAfter: Duration, limit: Int = 200, instance: String) async throws -> Int {
        let rows = try await postgres.query(
            """
            WITH stale AS MATERIALIZED (
                SELECT id, tenant_id, message_ids, tokens, subscriber_ids, environments, sending_by, claimed_at
                FROM delivery_chunks
                WHERE kind = '\(ChunkKind.liveActivity.rawValue)' AND sending_by IS NOT NULL
                  AND claimed_at < now() - make_interval(secs => $1)
                ORDER BY claimed_at LIMIT $2 FOR UPDATE SKIP LOCKED
            ), gone AS (
                DELETE FROM delivery_chunks k USING stale s WHERE k.id = s.id
            ), recorded AS (
                INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id, environment,
                                        status, attempt_count, last_reason, error_code, sending_by, attempts)
                SELECT bk_delivery_id(u.m, u.t), s.tenant_id, u.m, \(LedgerTime.ofMessage("u.m")), u.t, u.sub, u.e, '\(DeliveryStatus.failed.rawValue)',
                       0, 'the liveactivity replica ' || s.sending_by || ' stopped after deciding this send (at '
                          || (to_json(s.claimed_at)#>>'{}') || ') and before recording it: whether APNs received it '
                          || 'is unknown, and it is not sent again',
                       '\(DeliveryErrorCode.senderLost.rawValue)', $3, '[]'::json
                FROM stale s CROSS JOIN LATERAL unnest(s.message_ids, s.tokens, s.subscriber_ids, s.environments)
                    AS u(m, t, sub, e)
                ON CONFLICT (id, message_time) DO NOTHING
                RETURNING \(Self.deliveryReturning)
            ), \(Self.deliveryEvents(recorded: "recorded", tenants: "ARRAY(SELECT tenant_id FROM stale)")), \(MessageCompletion.cte(
                match: "m.id IN (SELECT unnest(s.message_ids) FROM stale s)", recorded: "ARRAY(SELECT id FROM stale)",
                written: """
                    (SELECT bk_delivery_id(u.m, u.t) AS id, u.m AS message_id, '\(DeliveryStatus.failed.rawValue)'::text AS status
                     FROM stale s CROSS JOIN LATERAL unnest(s.message_ids, s.tokens) AS u(m, t)) w
                    """))
            SELECT (SELECT count(*)::int FROM stale)
            """, [staleAfter.sqlSeconds, limit, instance])
        return try rows.first?.decode(Int.self, at: 0) ?? 0
    }
}
