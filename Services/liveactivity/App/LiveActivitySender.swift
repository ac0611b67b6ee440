import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// Handles one `bk:la` entry: decides which tokens the send goes to (the rules below), writes the
/// message and its deliveries, sends through the APNs client pool, records every attempt in the
/// ledger, updates the registry and answers on the entry's reply key.
///
/// Rules, decided under a row lock on the activity (so two updates of one activity are ordered):
/// - update / end: nothing registered for (subscriber, activity) → `live_activity_not_found`; the
///   activity ended → result `activity_ended`; its token was refused by APNs → `token_invalid`; a
///   `timestamp` older than the last one sent → `stale_timestamp`. None of these is sent. An
///   `end` that goes out marks the activity ended (by `send`).
/// - start: every push-to-start token of that attributes type of the subscriber; none usable →
///   `no_push_to_start_token`. Tokens APNs refused before are reported `token_invalid`, unsent.
/// - 410 / `BadDeviceToken` marks the token invalid (unless it was registered again after APNs's
///   timestamp), reported `invalid_token` in the result.
///
/// Exactly once from BuzzKit's side: the message row is the request's (its id comes with the
/// entry, derived from the `Idempotency-Key` when there is one), so an entry handled again (a
/// retried request, or one a dead replica held) finds it and is answered from the ledger, never
/// sent again. The deliveries are written `sending` (by this replica) in the same transaction that
/// decides the send: a replica that dies after that leaves them `sending`, reported so to the
/// replica that takes the entry over; a kill can lose that push, never double it. (They get no
/// `delivery_claims` row: apns-sender's sweeper re-sends claimed chunks as ordinary pushes.)
struct LiveActivitySender: Sendable {
    let postgres: PostgresClient
    let redis: RedisClient
    let credentials: TenantCredentialStore
    let clients: APNsClientPool
    let configuration: LiveActivityConfiguration
    let instance: String
    let logger: Logger

    /// A token the send goes to.
    struct Target: Sendable {
        var deliveryId: UUID
        var apnsId: UUID
        var token: String
        var environment: APNsEnvironment
        var bundleId: String?
    }

    /// What the deciding transaction found.
    enum Plan: Sendable {
        case replay
        case error(code: ErrorCode, message: String)
        case send(targets: [Target], skipped: [LiveActivityResult])
    }

    func handle(_ entry: LiveActivityEntry) async throws {
        let reply: LiveActivityReply
        switch try await plan(entry) {
        case .replay:
            reply = try await replay(entry)
        case .error(let code, let message):
            reply = .error(code: code.rawValue, message: message)
        case .send(let targets, let skipped):
            let results = try await send(entry, targets)
            reply = .results(messageId: targets.isEmpty ? nil : entry.messageId, skipped + results)
        }
        try await answer(entry.replyKey, reply)
    }

    // MARK: - Deciding

    private func plan(_ entry: LiveActivityEntry) async throws -> Plan {
        let request = entry.request
        let tenant = entry.tenantId
        return try await postgres.withTransaction { tx -> Plan in
            let existing = try await tx.query("SELECT 1 FROM messages WHERE id = $1::uuid", [entry.messageId])
            if !existing.isEmpty { return .replay }
            var targets: [Target] = []
            var skipped: [LiveActivityResult] = []
            switch request.event {
            case .update, .end:
                let activity = request.activityId ?? ""
                let rows = try await tx.query(
                    """
                    SELECT token, environment, bundle_id, state, token_status, last_timestamp FROM live_activities
                    WHERE tenant_id = $1::uuid AND activity_id = $2 AND subscriber_id = $3 FOR UPDATE
                    """, [tenant, activity, request.to])
                guard let row = rows.first else {
                    return .error(
                        code: .liveActivityNotFound,
                        message: "no Live Activity \(activity) is registered for subscriber \(request.to)")
                }
                let token = try row.decode(String.self, at: 0)
                let last = try row.decode(Int64?.self, at: 5)
                func skip(_ status: String) {
                    skipped.append(
                        LiveActivityResult(
                            activityId: activity, attributesType: nil, token: token,
                            deliveryId: nil, status: status))
                }
                if try row.decode(String.self, at: 3) == "ended" {
                    skip("activity_ended")
                } else if try row.decode(String.self, at: 4) == "invalid" {
                    skip("token_invalid")
                } else if let last, request.timestamp < last {
                    skip("stale_timestamp")
                } else {
                    targets.append(
                        Target(
                            deliveryId: UUID(), apnsId: UUID(), token: token,
                            environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 1)) ?? .sandbox,
                            bundleId: try row.decode(String?.self, at: 2)))
                    try await tx.execute(
                        """
                        UPDATE live_activities SET last_timestamp = $3, last_event = $4, last_sent_at = now(),
                            state = CASE WHEN $4 = 'end' THEN 'ended' ELSE state END,
                            ended_by = CASE WHEN $4 = 'end' THEN 'send' ELSE ended_by END,
                            ended_at = CASE WHEN $4 = 'end' THEN now() ELSE ended_at END
                        WHERE tenant_id = $1::uuid AND activity_id = $2
                        """, [tenant, activity, request.timestamp, request.event.rawValue])
                }
            case .start:
                let type = request.attributesType ?? ""
                let rows = try await tx.query(
                    """
                    SELECT token, environment, bundle_id, token_status FROM live_activity_start_tokens
                    WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND attributes_type = $3 ORDER BY token FOR UPDATE
                    """, [tenant, request.to, type])
                for row in rows {
                    let token = try row.decode(String.self, at: 0)
                    if try row.decode(String.self, at: 3) == "invalid" {
                        skipped.append(
                            LiveActivityResult(
                                activityId: nil, attributesType: type, token: token, deliveryId: nil,
                                status: "token_invalid"))
                        continue
                    }
                    targets.append(
                        Target(
                            deliveryId: UUID(), apnsId: UUID(), token: token,
                            environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 1)) ?? .sandbox,
                            bundleId: try row.decode(String?.self, at: 2)))
                }
                guard !targets.isEmpty else {
                    return .error(
                        code: .noPushToStartToken,
                        message: "subscriber \(request.to) has no usable push-to-start token of type \(type)")
                }
                try await tx.execute(
                    """
                    UPDATE live_activity_start_tokens SET last_sent_at = now()
                    WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND attributes_type = $3 AND token = ANY($4::text[])
                    """, [tenant, request.to, type, targets.map(\.token)])
            }
            guard !targets.isEmpty else { return .send(targets: [], skipped: skipped) }
            try await tx.execute(
                """
                INSERT INTO messages (id, tenant_id, target, content, status, kind, audience_size)
                VALUES ($1::uuid, $2::uuid, $3::jsonb, $4::jsonb, 'fanned_out', 'live_activity', $5)
                """,
                [
                    entry.messageId, tenant, JSONValue.object(["to": .array([.string(request.to)])]),
                    JSONValue.object(["liveActivity": request.json]), targets.count
                ])
            try await tx.execute(
                """
                INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment, status, apns_id,
                                        sending_by, sending_at)
                SELECT u.id, $1::uuid, $2::uuid, u.token, $3, u.environment, 'sending', u.apns_id, $4, now()
                FROM unnest($5::uuid[], $6::text[], $7::text[], $8::uuid[]) AS u(id, token, environment, apns_id)
                """,
                [
                    tenant, entry.messageId, request.to, instance, targets.map(\.deliveryId), targets.map(\.token),
                    targets.map(\.environment.rawValue), targets.map(\.apnsId)
                ])
            return .send(targets: targets, skipped: skipped)
        }
    }

    // MARK: - Sending

    private func send(_ entry: LiveActivityEntry, _ targets: [Target]) async throws -> [LiveActivityResult] {
        guard !targets.isEmpty else { return [] }
        let request = entry.request
        let push = Self.push(request)
        let tenant = try await credentials.get(entry.tenantId)
        var outcomes: [LiveActivityOutcome] = []
        if let problem = tenant.problem {
            outcomes = targets.map {
                LiveActivityOutcome(target: $0, status: "failed", reason: problem.message, errorCode: problem.code)
            }
        } else if let credentials = tenant.credentials {
            var byEnvironment: [APNsEnvironment: [Target]] = [:]
            for target in targets { byEnvironment[target.environment, default: []].append(target) }
            for (environment, group) in byEnvironment.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let client: APNsClient
                do {
                    client = try clients.client(team: credentials.teamId, environment: environment)
                } catch {
                    outcomes += group.map {
                        LiveActivityOutcome(
                            target: $0, status: "failed", reason: "\(error)",
                            errorCode: "apns_client_unavailable")
                    }
                    continue
                }
                var sendable: [Target] = []
                for target in group {
                    if target.bundleId ?? tenant.bundleId == nil {
                        outcomes.append(
                            LiveActivityOutcome(
                                target: target, status: "failed", reason: "no bundle id for the topic",
                                errorCode: "apns_credentials_missing"))
                    } else {
                        sendable.append(target)
                    }
                }
                let requests = sendable.map { target in
                    push.request(
                        deviceToken: target.token, bundleId: target.bundleId ?? tenant.bundleId ?? "",
                        apnsId: target.apnsId.uuidString.lowercased())
                }
                let results = await client.sendWithRetries(
                    batch: requests, credentials: credentials,
                    policy: configuration.retryPolicy)
                for (target, result) in zip(sendable, results) { outcomes.append(LiveActivityOutcome(target, result)) }
            }
        }
        try await LiveActivityLedger(postgres: postgres, logger: logger)
            .record(outcomes, tenant: entry.tenantId)
        let byDelivery = Dictionary(uniqueKeysWithValues: outcomes.map { ($0.target.deliveryId, $0) })
        return targets.compactMap { target in
            byDelivery[target.deliveryId].map { outcome in
                LiveActivityResult(
                    activityId: request.event == .start ? nil : request.activityId,
                    attributesType: request.event == .start ? request.attributesType : nil,
                    token: target.token, deliveryId: target.deliveryId, status: outcome.status,
                    apnsStatus: outcome.attempts.last?.status, reason: outcome.reason,
                    apnsId: outcome.attempts.last?.apnsId ?? target.apnsId.uuidString.lowercased())
            }
        }
    }

    static func push(_ request: LiveActivitySendRequest) -> LiveActivityPush {
        let alert = request.alert.map {
            LiveActivityPush.Alert(
                title: $0["title"]?.stringValue, body: $0["body"]?.stringValue, sound: $0["sound"]?.stringValue)
        }
        return LiveActivityPush(
            event: LiveActivityPush.Event(rawValue: request.event.rawValue) ?? .update,
            timestamp: request.timestamp, contentState: request.contentState,
            staleDate: request.staleDate, dismissalDate: request.dismissalDate, alert: alert,
            attributesType: request.attributesType, attributes: request.attributes,
            priority: request.priority)
    }

    // MARK: - Answering

    /// A request handled before: its results as the ledger has them (a delivery a dead replica
    /// left `sending` says so; the sweeper ends it).
    private func replay(_ entry: LiveActivityEntry) async throws -> LiveActivityReply {
        let request = entry.request
        let rows = try await postgres.query(
            """
            SELECT id, device_token, status, last_status, last_reason, apns_id::text FROM deliveries
            WHERE message_id = $1::uuid ORDER BY device_token
            """, [entry.messageId])
        let results = try rows.map { row in
            LiveActivityResult(
                activityId: request.event == .start ? nil : request.activityId,
                attributesType: request.event == .start ? request.attributesType : nil,
                token: try row.decode(String.self, at: 1), deliveryId: try row.decode(UUID.self, at: 0),
                status: try row.decode(String.self, at: 2), apnsStatus: try row.decode(Int?.self, at: 3),
                reason: try row.decode(String?.self, at: 4), apnsId: try row.decode(String?.self, at: 5))
        }
        return .results(messageId: entry.messageId, results)
    }

    private func answer(_ key: String, _ reply: LiveActivityReply) async throws {
        let seconds = Int(LiveActivityEntry.replyTTL.components.seconds)
        _ = try await redis.pipeline([
            [RedisArgument("LPUSH"), RedisArgument(key), RedisArgument(bytes: reply.json.jsonBytes)],
            [RedisArgument("EXPIRE"), RedisArgument(key), RedisArgument(String(seconds))]
        ])
    }
}

/// One target's outcome: the ledger row's final state and its attempts.
struct LiveActivityOutcome: Sendable {
    var target: LiveActivitySender.Target
    /// `sent`, `failed` or `invalid_token` (the delivery's status too).
    var status: String
    var reason: String?
    var errorCode: String?
    var attempts: [APNsResponse] = []
    /// APNs said the token is dead, as of this time.
    var invalidAt: Date?

    init(target: LiveActivitySender.Target, status: String, reason: String?, errorCode: String?) {
        self.target = target
        self.status = status
        self.reason = reason
        self.errorCode = errorCode
    }

    init(_ target: LiveActivitySender.Target, _ result: APNsDeliveryResult) {
        self.target = target
        attempts = result.attempts
        let last = result.attempts.last
        reason = last?.reason?.rawValue
        switch result.outcome {
        case .delivered:
            status = "sent"
        case .invalidToken(let reason, let timestamp):
            status = "invalid_token"
            self.reason = reason.rawValue
            invalidAt = timestamp ?? Date()
        case .failed(let reason):
            status = "failed"
            if let reason {
                errorCode = reason.isCredentialProblem ? "apns_credentials_invalid" : "apns_rejected"
            } else if let error = last?.transportError {
                errorCode = error.code == .invalidRequest ? "apns_credentials_invalid" : "apns_unreachable"
                self.reason = error.description
            } else {
                errorCode = "apns_unreachable"
            }
        case .retry, .renewTokenAndRetry:
            status = "failed"
            errorCode = "apns_unreachable"
        }
    }
}
