import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Sends one chunk of deliveries (a `bk:deliveries` entry) and writes the ledger in batches.
///
/// 1. Claim: ONE statement moves the chunk's `queued` deliveries to `sending` (with this
///    replica's name, the time, and the apns-id every attempt will carry) and returns them; rows
///    in any other status are skipped, so a redelivered or duplicated chunk never sends a device
///    twice. In the same statement, rows left `sending` by a replica longer than `staleSending`
///    become `failed` / `sender_lost` (see "Guarantees" in the README of this service), and
///    one `delivery_claims` row records the claimed ids (found by the sweeper if this replica
///    stops before step 4).
/// 2. Expired message: `expired` without sending. Tenant without usable credentials: `failed`
///    with `apns_credentials_missing` / `apns_credentials_invalid` (no APNs call, no retry).
/// 3. Send every claimed delivery at once through the (team, environment) client: the first
///    attempts as ONE batch (`APNsClient.sendWithRetries(batch:)`), then `RetryPolicy` retries
///    for the deliveries that need them.
/// 4. Record: ONE statement inserts every attempt, sets every final status and deletes the
///    chunk's claim row; ONE more
///    deactivates devices APNs called invalid (unless registered again after APNs's timestamp).
struct DeliverySender: Sendable {
    let postgres: PostgresClient
    let credentials: TenantCredentialStore
    let messages: PreparedMessageCache
    let clients: APNsClientPool
    let configuration: SenderConfiguration
    let instance: String
    let logger: Logger
    var metrics: SenderMetrics = .unregistered()

    struct Claimed: Sendable {
        /// The delivery's uuid as PostgreSQL prints it (lowercase): only ever sent back to it.
        var id: String
        var token: String
        var environment: APNsEnvironment
        /// Lowercase uuid text, as sent in `apns-id`.
        var apnsId: String
        var attemptCount: Int
    }

    /// A delivery's end: final status and the attempts that led there.
    struct Outcome: Sendable {
        var claimed: Claimed
        var status: DeliveryStatus
        var lastStatus: Int?
        var lastReason: String?
        var errorCode: String?
        var attempts: [APNsResponse]
        var invalidation: (token: String, at: Date, reason: String)?
    }

    func handle(_ chunk: DeliveryChunk) async throws {
        let tenant = try await credentials.get(chunk.tenantId)
        var message: PreparedMessage?
        var unsendable: String?
        if tenant.problem == nil, let bundleId = tenant.bundleId {
            do {
                message = try await messages.get(chunk.messageId, tenant: chunk.tenantId, bundleId: bundleId)
                if message == nil { unsendable = "the message does not exist" }
            } catch let error as UnsendableMessage {
                unsendable = error.description
            }
        }
        let started = ContinuousClock.now
        let (claimID, claimed) = try await claim(chunk)
        let claimedAt = ContinuousClock.now
        metrics.claim.observe(claimedAt - started)
        guard !claimed.isEmpty else { return }
        let now = Date()
        var outcomes: [Outcome]
        if let problem = tenant.problem {
            outcomes = claimed.map { Outcome(claimed: $0, status: .failed, lastReason: problem.message, errorCode: problem.code, attempts: []) }
        } else if let unsendable {
            outcomes = claimed.map { Outcome(claimed: $0, status: .failed, lastReason: unsendable, errorCode: "message_invalid", attempts: []) }
        } else if let message, message.isExpired(now: now) {
            outcomes = claimed.map { Outcome(claimed: $0, status: .expired, errorCode: "message_expired", attempts: []) }
        } else if let message, let apns = tenant.credentials {
            outcomes = await send(claimed, message: message, credentials: apns, tenant: chunk.tenantId)
            metrics.send.observe(ContinuousClock.now - claimedAt)
        } else {
            outcomes = claimed.map { Outcome(claimed: $0, status: .failed, errorCode: "apns_credentials_missing", attempts: []) }
        }
        let recording = ContinuousClock.now
        try await record(outcomes, tenant: chunk.tenantId, claimID: claimID)
        let done = ContinuousClock.now
        metrics.record.observe(done - recording)
        metrics.total.observe(done - started)
        metrics.deliveries.increment(by: outcomes.count)
        metrics.requests.increment(by: outcomes.reduce(0) { $0 + $1.attempts.count })
    }

    // MARK: - Claim

    /// The checks on tenant, message and status are wrapped in `IS TRUE` on purpose: they must
    /// not be index conditions. Otherwise, while `deliveries` statistics are stale (a fan-out just
    /// inserted the message's rows), the planner may scan the message's rows for every chunk
    /// (O(audience) per chunk) instead of reading 100 rows by primary key.
    ///
    /// One UPDATE both claims the `queued` rows and ends the ones left `sending` longer than
    /// `staleSending` (failed / sender_lost), so each row is looked up once; no index of
    /// `deliveries` covers a column changed here, so these are HOT updates (migration 0009).
    /// The same statement inserts the chunk's `delivery_claims` row (how the sweeper finds a
    /// chunk whose replica stopped mid-send); `record` deletes it with the outcomes.
    private func claim(_ chunk: DeliveryChunk) async throws -> (claimID: String?, deliveries: [Claimed]) {
        let rows = try await postgres.query("""
            WITH c AS (
                UPDATE deliveries SET
                    status = CASE WHEN status = 'queued' THEN 'sending' ELSE 'failed' END,
                    error_code = CASE WHEN status = 'queued' THEN error_code ELSE 'sender_lost' END,
                    last_reason = CASE WHEN status = 'queued' THEN last_reason ELSE coalesce(last_reason,
                        'the sending replica stopped mid-send; not re-sent to avoid a duplicate') END,
                    sending_by = CASE WHEN status = 'queued' THEN $3 ELSE sending_by END,
                    sending_at = CASE WHEN status = 'queued' THEN now() ELSE sending_at END,
                    apns_id = CASE WHEN status = 'queued' THEN coalesce(apns_id, gen_random_uuid()) ELSE apns_id END,
                    updated_at = now()
                WHERE id = ANY($1::uuid[])
                  AND (tenant_id = $2::uuid AND message_id = $5::uuid AND (status = 'queued'
                       OR (status = 'sending' AND sending_at < now() - make_interval(secs => $4)))) IS TRUE
                RETURNING id, device_token, environment, apns_id, attempt_count, status
            ), claim AS (
                INSERT INTO delivery_claims (delivery_ids, sending_by)
                SELECT array_agg(id), $3 FROM c WHERE status = 'sending' HAVING count(*) > 0
                RETURNING id
            )
            SELECT c.id, c.device_token, c.environment, c.apns_id, c.attempt_count, (SELECT id FROM claim)
            FROM c WHERE c.status = 'sending'
            """, [chunk.deliveryIds.arrayParameter, chunk.tenantId, instance, configuration.staleSending.seconds,
                  chunk.messageId])
        // Ids stay text (PostgreSQL's lowercase form): they only go back to it and into `apns-id`.
        let claimed = try rows.map { row in
            Claimed(id: try row.decode(String.self, at: 0), token: try row.decode(String.self, at: 1),
                    environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 2)) ?? .production,
                    apnsId: try row.decode(String.self, at: 3), attemptCount: try row.decode(Int.self, at: 4))
        }
        return (try rows.first?.decode(String?.self, at: 5), claimed)
    }

    // MARK: - Send

    /// One batch per environment (a chunk is almost always one): the first attempts go out
    /// together through the (team, environment) client, retries per delivery (`RetryPolicy`).
    private func send(_ claimed: [Claimed], message: PreparedMessage, credentials: APNsCredentials,
                      tenant: UUID) async -> [Outcome] {
        var byEnvironment: [APNsEnvironment: [Claimed]] = [:]
        for delivery in claimed { byEnvironment[delivery.environment, default: []].append(delivery) }
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(claimed.count)
        for (environment, deliveries) in byEnvironment.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let client: APNsClient
            do {
                client = try clients.client(team: credentials.teamId, environment: environment)
            } catch {
                logger.error("apns client could not be made", metadata: ["error": "\(error)"])
                outcomes += deliveries.map {
                    Outcome(claimed: $0, status: .failed, lastReason: "\(error)", errorCode: "apns_client_unavailable", attempts: [])
                }
                continue
            }
            let requests = deliveries.map { delivery in
                var request = message.template
                request.deviceToken = delivery.token
                request.apnsId = delivery.apnsId
                return request
            }
            let results = await client.sendWithRetries(batch: requests, credentials: credentials,
                                                       policy: configuration.retryPolicy)
            for (delivery, result) in zip(deliveries, results) { outcomes.append(Self.outcome(delivery, result)) }
        }
        return outcomes
    }

    static func outcome(_ delivery: Claimed, _ result: APNsDeliveryResult) -> Outcome {
        let last = result.attempts.last
        var outcome = Outcome(claimed: delivery, status: .failed, lastStatus: last.map(\.status),
                              lastReason: last?.reason?.rawValue, attempts: result.attempts)
        switch result.outcome {
        case .delivered:
            outcome.status = .sent
        case .invalidToken(let reason, let timestamp):
            outcome.status = .invalidToken
            outcome.lastReason = reason.rawValue
            outcome.invalidation = (delivery.token, timestamp ?? Date(), reason.rawValue)
        case .failed(let reason):
            if let reason {
                outcome.errorCode = reason.isCredentialProblem ? "apns_credentials_invalid" : "apns_rejected"
            } else if let error = last?.transportError {
                outcome.errorCode = error.code == .invalidRequest ? "apns_credentials_invalid" : "apns_unreachable"
                outcome.lastReason = error.description
            } else {
                outcome.errorCode = "apns_unreachable"
            }
        case .retry, .renewTokenAndRetry:
            outcome.errorCode = "apns_unreachable"  // not returned by sendWithRetries; kept total
        }
        return outcome
    }

    // MARK: - Record (batched)

    /// `attempt_count` is written as a total (not an increment), so a retried write that had in
    /// fact committed changes nothing; attempts are `ON CONFLICT DO NOTHING` for the same reason.
    private func record(_ outcomes: [Outcome], tenant: UUID, claimID: String?) async throws {
        let attemptCount = outcomes.reduce(0) { $0 + $1.attempts.count }
        var aId = PostgresArrayText(capacity: 2 + attemptCount * 39), aNumber = PostgresArrayText(capacity: 2 + attemptCount * 2)
        var aPayload = PostgresArrayText(capacity: 2 + attemptCount * 2), aHeaders = PostgresArrayText(capacity: 2 + attemptCount * 300)
        var aStatus = PostgresArrayText(capacity: 2 + attemptCount * 4), aReason = PostgresArrayText(capacity: 2 + attemptCount * 5)
        var aApnsId = PostgresArrayText(capacity: 2 + attemptCount * 39), aLatency = PostgresArrayText(capacity: 2 + attemptCount * 3)
        var aError = PostgresArrayText(capacity: 2 + attemptCount * 5)
        var uId = PostgresArrayText(capacity: 2 + outcomes.count * 39), uStatus = PostgresArrayText(capacity: 2 + outcomes.count * 7)
        var uAttempts = PostgresArrayText(capacity: 2 + outcomes.count * 2), uLast = PostgresArrayText(capacity: 2 + outcomes.count * 4)
        var uReason = PostgresArrayText(capacity: 2 + outcomes.count * 5), uCode = PostgresArrayText(capacity: 2 + outcomes.count * 5)
        // The payload is the same for (almost) every attempt of a chunk: send each distinct one once
        // and an index per attempt (1-based, as SQL arrays are).
        var payloads = PostgresArrayText(capacity: 256)
        var payloadIndex: [[UInt8]: Int] = [:]
        var lastPayload: (bytes: [UInt8], index: Int)?
        var headerJSON = LedgerHeaders()
        for outcome in outcomes {
            for (index, attempt) in outcome.attempts.enumerated() {
                aId.append(outcome.claimed.id)
                aNumber.append(outcome.claimed.attemptCount + index + 1)
                if let last = lastPayload, last.bytes == attempt.payload {  // shared storage: O(1)
                    aPayload.append(last.index)
                } else if let known = payloadIndex[attempt.payload] {
                    lastPayload = (attempt.payload, known)
                    aPayload.append(known)
                } else {
                    let next = payloadIndex.count + 1
                    payloadIndex[attempt.payload] = next
                    payloads.append(utf8: attempt.payload)
                    lastPayload = (attempt.payload, next)
                    aPayload.append(next)
                }
                aHeaders.append(utf8: headerJSON.json(attempt.requestHeaders))
                aStatus.append(attempt.status)
                aReason.append(attempt.reason?.rawValue)
                aApnsId.append(attempt.apnsId)
                aLatency.append(attempt.latencyMilliseconds)
                aError.append(attempt.transportError?.description)
            }
            uId.append(outcome.claimed.id)
            uStatus.append(outcome.status.rawValue)
            uAttempts.append(outcome.claimed.attemptCount + outcome.attempts.count)
            uLast.append(outcome.lastStatus)
            uReason.append(outcome.lastReason)
            uCode.append(outcome.errorCode)
        }
        let invalid = outcomes.compactMap(\.invalidation)
        let ledgerSQL = """
            WITH attempts AS (
                INSERT INTO delivery_attempts (delivery_id, attempt, payload, headers, status, reason, apns_id, latency_ms, error)
                SELECT a.id, a.n, ($16::text[])[a.p], a.h, a.s, a.r, a.apns_id, a.l, a.e
                FROM unnest($1::uuid[], $2::int[], $3::int[], $4::json[], $5::int[], $6::text[],
                            $7::text[], $8::int[], $9::text[]) AS a(id, n, p, h, s, r, apns_id, l, e)
                ON CONFLICT DO NOTHING
            ), claim AS (
                DELETE FROM delivery_claims WHERE id = $17::uuid
            )
            UPDATE deliveries d SET status = u.status, attempt_count = u.attempts,
                last_status = u.last_status, last_reason = u.last_reason, error_code = u.error_code,
                sent_at = CASE WHEN u.status = 'sent' THEN now() ELSE d.sent_at END, updated_at = now()
            FROM unnest($10::uuid[], $11::text[], $12::int[], $13::int[], $14::text[], $15::text[])
                AS u(id, status, attempts, last_status, last_reason, error_code)
            WHERE d.id = u.id
            """
        let ledgerParameters: [any PostgresEncodable] = [
            aId.value, aNumber.value, aPayload.value, aHeaders.value, aStatus.value, aReason.value, aApnsId.value,
            aLatency.value, aError.value, uId.value, uStatus.value, uAttempts.value, uLast.value, uReason.value, uCode.value,
            payloads.value, claimID,
        ]
        try await withRetries {
            if invalid.isEmpty {
                try await postgres.execute(ledgerSQL, ledgerParameters)
                return
            }
            try await postgres.withTransaction { tx in
                try await tx.execute(ledgerSQL, ledgerParameters)
                // Not when the device registered again after APNs's timestamp (updated_at moves then).
                try await tx.execute("""
                    UPDATE devices d SET active = false, invalidated_at = u.at, invalid_reason = u.reason
                    FROM unnest($2::text[], $3::timestamptz[], $4::text[]) AS u(token, at, reason)
                    WHERE d.tenant_id = $1::uuid AND d.token = u.token AND d.updated_at <= u.at
                    """, [tenant, invalid.map(\.token), invalid.map(\.at), invalid.map(\.reason)])
            }
        }
    }

    /// The ledger write after a send must not be lost to a blip: up to 5 tries, 0.2 s to 3.2 s apart.
    private func withRetries(_ body: () async throws -> Void) async throws {
        var delay = Duration.milliseconds(200)
        for attempt in 1...5 {
            do {
                try await body()
                return
            } catch {
                if attempt == 5 { throw error }
                logger.warning("ledger write failed, retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay *= 2
            }
        }
    }
}
