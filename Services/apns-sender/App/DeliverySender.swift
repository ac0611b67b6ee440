import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitWire
import Foundation

/// Sends one chunk of deliveries (a `bk:deliveries` entry) and writes the ledger in batches.
///
/// 1. Claim: ONE statement moves the chunk's `queued` deliveries to `sending` (with this
///    replica's name, the time, and the apns-id every attempt will carry: kept if the delivery
///    already has one) and returns them; rows in any other status are skipped, so a redelivered
///    or duplicated chunk never sends a device twice. In the same statement one `delivery_claims`
///    row records the claimed ids: if this replica dies before step 4, another replica's sweeper
///    takes the row over after `staleSending` and sends its deliveries again (`resend`), under
///    the same `apns-id` and `apns-collapse-id`, with an attempt of unknown outcome first.
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
        var invalidation: (tenant: UUID, token: String, at: Date, reason: String)?
        /// Set on a re-send: the replica whose attempt's answer was lost with it. The ledger gets
        /// that attempt first, of unknown outcome (status 0), then this one's.
        var lostWith: String?
    }

    /// A chunk a dead replica had claimed, taken over by this one (`takeOverStaleClaims`).
    struct LostChunk: Sendable {
        var claimID: String?
        var lostWith: String
        var tenantId: UUID
        var messageId: UUID
        var deliveries: [Claimed]
    }

    func handle(_ chunk: DeliveryChunk) async throws {
        let prepared = try await prepare(tenant: chunk.tenantId, message: chunk.messageId)
        let started = ContinuousClock.now
        let (claimID, claimed) = try await claim(chunk)
        metrics.claim.observe(ContinuousClock.now - started)
        guard !claimed.isEmpty else { return }
        try await sendAndRecord(
            claimed, prepared, tenant: chunk.tenantId, claimID: claimID, lostWith: nil, started: started)
    }

    /// Sends a dead replica's chunk again (already claimed by this replica: `takeOverStaleClaims`).
    func resend(_ lost: LostChunk) async throws {
        let prepared = try await prepare(tenant: lost.tenantId, message: lost.messageId)
        try await sendAndRecord(
            lost.deliveries, prepared, tenant: lost.tenantId, claimID: lost.claimID,
            lostWith: lost.lostWith, started: ContinuousClock.now)
    }

    /// What a chunk's sending needs: the tenant's credentials and the prepared message, or why
    /// it cannot be sent.
    struct Prepared: Sendable {
        var tenant: TenantAPNs
        var message: PreparedMessage?
        var unsendable: String?
    }

    private func prepare(tenant id: UUID, message messageId: UUID) async throws -> Prepared {
        let tenant = try await credentials.get(id)
        var prepared = Prepared(tenant: tenant)
        if tenant.problem == nil, let bundleId = tenant.bundleId {
            do {
                prepared.message = try await messages.get(messageId, tenant: id, bundleId: bundleId)
                if prepared.message == nil { prepared.unsendable = "the message does not exist" }
            } catch let error as UnsendableMessage {
                prepared.unsendable = error.description
            }
        }
        return prepared
    }

    private func sendAndRecord(
        _ claimed: [Claimed], _ prepared: Prepared, tenant: UUID, claimID: String?,
        lostWith: String?, started: ContinuousClock.Instant
    ) async throws {
        var outcomes = await outcomes(of: claimed, prepared, tenant: tenant)
        if let lostWith {
            for index in outcomes.indices { outcomes[index].lostWith = lostWith }
        }
        try await record(outcomes, claimID: claimID, lostMessage: prepared.message, started: started)
    }

    /// One message's claimed deliveries, to send through their tenant's clients.
    struct Group: Sendable {
        var claimed: [Claimed]
        var prepared: Prepared
        var tenant: UUID
    }

    /// Sends the deliveries of many messages at once (`DirectMessages`: one claim row for all of
    /// them): each tenant's pushes go out as one batch per (team, environment) client, whatever
    /// message they belong to; then ONE ledger statement records every outcome. `groups` are in
    /// the order the messages were made: a device named by several of them gets their pushes in
    /// that order, one round after the other (a run's "again" before its "after").
    func sendAndRecord(_ groups: [Group], claimID: String?, started: ContinuousClock.Instant) async throws {
        let sendStarted = ContinuousClock.now
        let now = Date()
        var outcomes: [Outcome] = []
        typealias Batch = (credentials: APNsCredentials, items: [(Claimed, APNsRequest)])
        var rounds: [[UUID: Batch]] = []
        var earlier: [String: Int] = [:]  // token -> pushes of this batch before
        for group in groups {
            if let ended = Self.endedUnsent(group.claimed, group.prepared, now: now) {
                outcomes += ended
                continue
            }
            guard let message = group.prepared.message, let apns = group.prepared.tenant.credentials else { continue }
            for delivery in group.claimed {
                let round = earlier[delivery.token, default: 0]
                earlier[delivery.token] = round + 1
                if round == rounds.count { rounds.append([:]) }
                rounds[round][group.tenant, default: (apns, [])].items.append((delivery, message.template))
            }
        }
        for round in rounds {
            outcomes += await withTaskGroup(of: [Outcome].self) { tasks in
                for (tenant, batch) in round {
                    tasks.addTask { await send(batch.items, credentials: batch.credentials, tenant: tenant) }
                }
                var all: [Outcome] = []
                for await some in tasks { all += some }
                return all
            }
        }
        if !rounds.isEmpty { metrics.send.observe(ContinuousClock.now - sendStarted) }
        try await record(outcomes, claimID: claimID, lostMessage: nil, started: started)
    }

    /// How one message's claimed deliveries end: sent through APNs, or at once without a push
    /// (`endedUnsent`).
    private func outcomes(of claimed: [Claimed], _ prepared: Prepared, tenant: UUID) async -> [Outcome] {
        if let ended = Self.endedUnsent(claimed, prepared, now: Date()) { return ended }
        guard let message = prepared.message, let apns = prepared.tenant.credentials else { return [] }
        let sendStarted = ContinuousClock.now
        defer { metrics.send.observe(ContinuousClock.now - sendStarted) }
        return await send(claimed.map { ($0, message.template) }, credentials: apns, tenant: tenant)
    }

    /// The outcomes of deliveries that end without a push: the tenant cannot send, the message
    /// cannot be built, it expired. nil when they are to be sent (message and credentials present).
    static func endedUnsent(_ claimed: [Claimed], _ prepared: Prepared, now: Date) -> [Outcome]? {
        if let problem = prepared.tenant.problem {
            return claimed.map {
                Outcome(
                    claimed: $0, status: .failed, lastReason: problem.message, errorCode: problem.code, attempts: [])
            }
        }
        if let unsendable = prepared.unsendable {
            return claimed.map {
                Outcome(
                    claimed: $0, status: .failed, lastReason: unsendable, errorCode: "message_invalid", attempts: [])
            }
        }
        if let message = prepared.message, message.isExpired(now: now) {
            return claimed.map { Outcome(claimed: $0, status: .expired, errorCode: "message_expired", attempts: []) }
        }
        if prepared.message == nil || prepared.tenant.credentials == nil {
            return claimed.map {
                Outcome(claimed: $0, status: .failed, errorCode: "apns_credentials_missing", attempts: [])
            }
        }
        return nil
    }

    // MARK: - Claim

    /// The checks on tenant, message and status are wrapped in `IS TRUE` on purpose: they must
    /// not be index conditions. Otherwise, while `deliveries` statistics are stale (a fan-out just
    /// inserted the message's rows), the planner may scan the message's rows for every chunk
    /// (O(audience) per chunk) instead of reading 100 rows by primary key.
    ///
    /// The UPDATE claims the `queued` rows only: a row `sending` belongs to a replica (alive, or
    /// dead and then taken over by a sweeper through its claim row). No index of `deliveries`
    /// covers a column changed here, so these are HOT updates (migration 0009). The same
    /// statement inserts the chunk's `delivery_claims` row (how a sweeper finds a chunk whose
    /// replica stopped mid-send); `record` deletes it with the outcomes.
    private func claim(_ chunk: DeliveryChunk) async throws -> (claimID: String?, deliveries: [Claimed]) {
        let rows = try await postgres.query(
            """
            WITH c AS (
                UPDATE deliveries SET status = 'sending', sending_by = $3, sending_at = now(),
                    apns_id = coalesce(apns_id, gen_random_uuid()), updated_at = now()
                WHERE id = ANY($1::uuid[])
                  AND (tenant_id = $2::uuid AND message_id = $4::uuid AND status = 'queued') IS TRUE
                RETURNING id, device_token, environment, apns_id, attempt_count
            ), claim AS (
                INSERT INTO delivery_claims (delivery_ids, sending_by)
                SELECT array_agg(id), $3 FROM c HAVING count(*) > 0
                RETURNING id
            )
            SELECT c.id, c.device_token, c.environment, c.apns_id, c.attempt_count, (SELECT id FROM claim)
            FROM c
            """, [chunk.deliveryIds.arrayParameter, chunk.tenantId, instance, chunk.messageId])
        // Ids stay text (PostgreSQL's lowercase form): they only go back to it and into `apns-id`.
        let claimed = try rows.map { row in
            Claimed(
                id: try row.decode(String.self, at: 0), token: try row.decode(String.self, at: 1),
                environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 2)) ?? .production,
                apnsId: try row.decode(String.self, at: 3), attemptCount: try row.decode(Int.self, at: 4))
        }
        return (try rows.first?.decode(String?.self, at: 5), claimed)
    }

    // MARK: - Send

    /// One batch per environment (a chunk is almost always one): the first attempts go out
    /// together through the (team, environment) client, retries per delivery (`RetryPolicy`).
    /// Each delivery is sent as its message's request `template` with its own token and apns-id.
    private func send(
        _ items: [(Claimed, APNsRequest)], credentials: APNsCredentials, tenant: UUID
    ) async -> [Outcome] {
        var byEnvironment: [APNsEnvironment: [(Claimed, APNsRequest)]] = [:]
        for item in items { byEnvironment[item.0.environment, default: []].append(item) }
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(items.count)
        for (environment, batch) in byEnvironment.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let client: APNsClient
            do {
                client = try clients.client(team: credentials.teamId, environment: environment)
            } catch {
                logger.error("apns client could not be made", metadata: ["error": "\(error)"])
                outcomes += batch.map {
                    Outcome(
                        claimed: $0.0, status: .failed, lastReason: "\(error)", errorCode: "apns_client_unavailable",
                        attempts: [])
                }
                continue
            }
            let requests = batch.map { delivery, template in
                var request = template
                request.deviceToken = delivery.token
                request.apnsId = delivery.apnsId
                return request
            }
            let results = await client.sendWithRetries(
                batch: requests, credentials: credentials,
                policy: configuration.retryPolicy)
            for ((delivery, _), result) in zip(batch, results) {
                outcomes.append(Self.outcome(delivery, result, tenant: tenant))
            }
        }
        return outcomes
    }

    static func outcome(_ delivery: Claimed, _ result: APNsDeliveryResult, tenant: UUID) -> Outcome {
        let last = result.attempts.last
        var outcome = Outcome(
            claimed: delivery, status: .failed, lastStatus: last.map(\.status),
            lastReason: last?.reason?.rawValue, attempts: result.attempts)
        switch result.outcome {
        case .delivered:
            outcome.status = .sent
        case .invalidToken(let reason, let timestamp):
            outcome.status = .invalidToken
            outcome.lastReason = reason.rawValue
            outcome.invalidation = (tenant, delivery.token, timestamp ?? Date(), reason.rawValue)
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
    ///
    /// A re-sent delivery (`lostWith`) gets, before its own attempts, the dead replica's attempt:
    /// status 0, the request that replica sent (the same payload and headers: the same `apns-id`
    /// and collapse id; only the token's `iat` may have differed), and an error saying its answer
    /// was lost.
    private func record(
        _ outcomes: [Outcome], claimID: String?, lostMessage message: PreparedMessage?,
        started: ContinuousClock.Instant
    ) async throws {
        let recording = ContinuousClock.now
        try await writeLedger(outcomes, claimID: claimID, lostMessage: message)
        let done = ContinuousClock.now
        metrics.record.observe(done - recording)
        metrics.total.observe(done - started)
        metrics.deliveries.increment(by: outcomes.count)
        metrics.requests.increment(by: outcomes.reduce(0) { $0 + $1.attempts.count })
    }

    private func writeLedger(_ outcomes: [Outcome], claimID: String?, lostMessage message: PreparedMessage?)
        async throws
    {
        let attemptCount = outcomes.reduce(0) { $0 + $1.attempts.count + ($1.lostWith == nil ? 0 : 1) }
        var aId = PostgresArrayText(capacity: 2 + attemptCount * 39),
            aNumber = PostgresArrayText(capacity: 2 + attemptCount * 2)
        var aPayload = PostgresArrayText(capacity: 2 + attemptCount * 2),
            aHeaders = PostgresArrayText(capacity: 2 + attemptCount * 300)
        var aStatus = PostgresArrayText(capacity: 2 + attemptCount * 4),
            aReason = PostgresArrayText(capacity: 2 + attemptCount * 5)
        var aApnsId = PostgresArrayText(capacity: 2 + attemptCount * 39),
            aLatency = PostgresArrayText(capacity: 2 + attemptCount * 3)
        var aError = PostgresArrayText(capacity: 2 + attemptCount * 5)
        var uId = PostgresArrayText(capacity: 2 + outcomes.count * 39),
            uStatus = PostgresArrayText(capacity: 2 + outcomes.count * 7)
        var uAttempts = PostgresArrayText(capacity: 2 + outcomes.count * 2),
            uLast = PostgresArrayText(capacity: 2 + outcomes.count * 4)
        var uReason = PostgresArrayText(capacity: 2 + outcomes.count * 5),
            uCode = PostgresArrayText(capacity: 2 + outcomes.count * 5)
        // The payload is the same for (almost) every attempt of a chunk: send each distinct one once
        // and an index per attempt (1-based, as SQL arrays are).
        var payloads = PostgresArrayText(capacity: 256)
        var payloadIndex: [[UInt8]: Int] = [:]
        var lastPayload: (bytes: [UInt8], index: Int)?
        var headerJSON = LedgerHeaders()
        for outcome in outcomes {
            let earlier = outcome.lostWith == nil ? 0 : 1
            if let lostWith = outcome.lostWith {
                aId.append(outcome.claimed.id)
                aNumber.append(outcome.claimed.attemptCount + 1)
                let payload = outcome.attempts.first?.payload ?? message?.template.payload ?? []
                if let known = payloadIndex[payload] {
                    aPayload.append(known)
                } else {
                    let next = payloadIndex.count + 1
                    payloadIndex[payload] = next
                    payloads.append(utf8: payload)
                    aPayload.append(next)
                }
                aHeaders.append(
                    utf8: headerJSON.json(
                        outcome.attempts.first?.requestHeaders
                            ?? Self.lostHeaders(message, apnsId: outcome.claimed.apnsId)))
                aStatus.append(0)
                aReason.appendNull()
                aApnsId.append(outcome.claimed.apnsId)
                aLatency.append(0)
                aError.append(
                    "unknown: the answer was lost with replica \(lostWith), which stopped mid-send; sent again with the same apns-id and apns-collapse-id"
                )
            }
            for (index, attempt) in outcome.attempts.enumerated() {
                aId.append(outcome.claimed.id)
                aNumber.append(outcome.claimed.attemptCount + earlier + index + 1)
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
            uAttempts.append(outcome.claimed.attemptCount + earlier + outcome.attempts.count)
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
            aLatency.value, aError.value, uId.value, uStatus.value, uAttempts.value, uLast.value, uReason.value,
            uCode.value,
            payloads.value, claimID
        ]
        try await retryingLedgerWrite(logger: logger) {
            if invalid.isEmpty {
                try await postgres.execute(ledgerSQL, ledgerParameters)
                return
            }
            try await postgres.withTransaction { tx in
                try await tx.execute(ledgerSQL, ledgerParameters)
                // Not when the device registered again after APNs's timestamp (updated_at moves then).
                try await tx.execute(
                    """
                    UPDATE devices d SET active = false, invalidated_at = u.at, invalid_reason = u.reason
                    FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[]) AS u(tenant, token, at, reason)
                    WHERE d.tenant_id = u.tenant AND d.token = u.token AND d.updated_at <= u.at
                    """,
                    [
                        invalid.map(\.tenant), invalid.map(\.token), invalid.map(\.at), invalid.map(\.reason)
                    ])
            }
        }
    }

    /// The headers of a lost attempt when the re-send made none (the message expired or the
    /// credentials went since): the message's request as built, the token redacted.
    static func lostHeaders(_ message: PreparedMessage?, apnsId: String) -> HTTPHeaders {
        guard var request = message?.template else { return HTTPHeaders() }
        request.apnsId = apnsId
        return request.headers(authorization: "bearer <redacted>")
    }

    // MARK: - Take-over of a dead replica's chunks

    /// Takes over up to `limit` chunks whose claim row is older than `staleSending` (their
    /// replica stopped before recording them) and sends their deliveries still `sending` again
    /// (`resend`). One statement moves each claim row to this replica (`FOR UPDATE SKIP LOCKED`:
    /// two sweepers never take the same one) and renews its deliveries' `sending_by`/`sending_at`;
    /// if this replica dies too, the row goes stale again and a third one takes it. A claim row
    /// whose deliveries all ended is deleted. Returns how many deliveries were sent again.
    @discardableResult
    func takeOverStaleClaims(limit: Int = 50) async throws -> Int {
        let rows = try await postgres.query(
            """
            WITH stale AS (
                SELECT id, sending_by FROM delivery_claims WHERE claimed_at < now() - make_interval(secs => $1)
                ORDER BY claimed_at LIMIT $3 FOR UPDATE SKIP LOCKED
            ), moved AS (
                UPDATE delivery_claims c SET sending_by = $2, claimed_at = now() FROM stale WHERE c.id = stale.id
                RETURNING c.id, c.delivery_ids, stale.sending_by AS lost_with
            ), taken AS (
                UPDATE deliveries d SET sending_by = $2, sending_at = now(), updated_at = now()
                FROM moved WHERE d.id = ANY(moved.delivery_ids) AND d.status = 'sending'
                RETURNING moved.id AS claim_id, d.id, d.tenant_id, d.message_id, d.device_token, d.environment,
                          d.apns_id, d.attempt_count
            )
            SELECT moved.id, moved.lost_with, taken.id, taken.tenant_id, taken.message_id, taken.device_token,
                   taken.environment, taken.apns_id, taken.attempt_count
            FROM moved LEFT JOIN taken ON taken.claim_id = moved.id
            ORDER BY moved.id, taken.tenant_id, taken.message_id
            """, [configuration.staleSending.seconds, instance, limit])
        guard !rows.isEmpty else { return 0 }
        var empty: [UUID] = []
        var chunks: [LostChunk] = []
        for row in rows {
            let claimID = try row.decode(String.self, at: 0)
            guard let id = try row.decode(String?.self, at: 2) else {
                if let id = UUID(uuidString: claimID) { empty.append(id) }
                continue
            }
            let tenant = try row.decode(UUID.self, at: 3), message = try row.decode(UUID.self, at: 4)
            let delivery = Claimed(
                id: id, token: try row.decode(String.self, at: 5),
                environment: APNsEnvironment(rawValue: try row.decode(String.self, at: 6)) ?? .production,
                apnsId: try row.decode(String.self, at: 7), attemptCount: try row.decode(Int.self, at: 8))
            if let last = chunks.last, last.claimID == claimID, last.tenantId == tenant, last.messageId == message {
                chunks[chunks.count - 1].deliveries.append(delivery)
            } else {
                chunks.append(
                    LostChunk(
                        claimID: claimID, lostWith: try row.decode(String.self, at: 1),
                        tenantId: tenant, messageId: message, deliveries: [delivery]))
            }
        }
        if !empty.isEmpty {
            try await postgres.execute("DELETE FROM delivery_claims WHERE id = ANY($1::uuid[])", [empty.arrayParameter])
        }
        // A claim row spans one chunk (one tenant and message), except those migration 0009 made
        // per replica: only the last part of such a row deletes it when recorded.
        for index in chunks.indices where index + 1 < chunks.count && chunks[index + 1].claimID == chunks[index].claimID
        {
            chunks[index].claimID = nil
        }
        let total = chunks.reduce(0) { $0 + $1.deliveries.count }
        logger.warning(
            "re-sending deliveries a stopped replica had claimed",
            metadata: ["count": String(total), "chunks": String(chunks.count)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in chunks { group.addTask { try await resend(chunk) } }
            try await group.waitForAll()
        }
        return total
    }
}
