import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitWebhooks
import Foundation

/// One claimed chunk and how each of its devices ended, to record.
public struct ChunkRecord: Sendable {
    public var chunk: ClaimedChunk
    public var outcomes: [DeliveryOutcome]

    public init(chunk: ClaimedChunk, outcomes: [DeliveryOutcome]) {
        self.chunk = chunk
        self.outcomes = outcomes
    }
}

/// Where a token APNs called invalid is deactivated, in the transaction that records it.
public enum TokenRegistry: Sendable {
    /// Push devices (`devices.active = false`), unless the device registered again after APNs's
    /// timestamp.
    case devices
    /// Live Activity tokens (`token_status = 'invalid'` on the activity or the push-to-start
    /// token), unless registered again after APNs's timestamp.
    case liveActivities
}

extension Ledger {
    /// Records chunks a replica holds: ONE statement inserts each device's delivery once, with its
    /// outcome and every attempt in the one attempt format (`AttemptLog`; `apns_id` NULL: the
    /// delivery's id is its apns-id), stores each distinct request once (`delivery_payloads`: the
    /// payload bytes and the headers, apns-id as `{apns-id}`), deletes the chunks, and completes
    /// the messages that no pending chunk holds any more (`MessageCompletion`). Tokens APNs called
    /// invalid are deactivated in the same transaction (`registry`). Answers the messages it
    /// completed.
    ///
    /// A chunk taken over from a stopped replica (`lost`) gets, before each device's own attempts,
    /// that replica's attempt: status 0, the same request (from the re-send's first attempt, or
    /// `templates[message]` when the re-send made none), sent when that replica claimed the
    /// chunk, with an error saying its answer was lost.
    ///
    /// Safe to repeat: the insert is plain (no speculative insertion); only if a delivery exists
    /// already (another replica recorded the same taken-over chunk first, or the sweeper recorded a
    /// stale Live Activity request as lost) is it redone with `ON CONFLICT DO NOTHING`, keeping
    /// what was recorded first. Retried on a blip, since the sends already happened.
    ///
    /// Webhooks: each delivery inserted enqueues its `delivery.sent` or `delivery.failed`
    /// (`deliveryEvents`), each message completed its `message.completed` (`MessageCompletion`),
    /// in the same statement; a delivery that existed already enqueues nothing. A fan-out chunk
    /// (`completion: .afterCommit`) whose tenants have no endpoint for `delivery.sent` or
    /// `delivery.failed` is first tried with the statement without those events (`quietSQL`),
    /// unless a replica's earlier record lately found one (`DeliveryEventEndpoints`); that
    /// statement writes nothing when it finds such an endpoint, and the full one runs.
    ///
    /// `completion: .afterCommit` (a fan-out chunk's record, whose caller runs `completeIfDone`
    /// after the commit whatever this answers): the statement completes nothing and answers no
    /// message. Without the completing `UPDATE` over the partitioned `messages` (pruned by the
    /// week's bounds, so planned again for every chunk) and its events, the statement reads no
    /// partitioned table, and Postgres keeps one generic plan for it instead of planning it per
    /// chunk; the test after the commit is one index probe for all of a fan-out's chunks but its
    /// last.
    @discardableResult
    public func record(
        _ records: [ChunkRecord], instance: String, registry: TokenRegistry = .devices,
        templates: [UUID: APNsRequest] = [:], completion: RecordCompletion = .inStatement
    ) async throws -> Set<UUID> {
        guard !records.isEmpty else { return [] }
        let write = Self.recordWrite(records, instance: instance, templates: templates, completion: completion)
        return try await retryingLedgerWrite(logger: logger) {
            guard !write.invalid.isEmpty else {
                if write.completion == .afterCommit, write.deliveries > 0,
                    !deliveryEventEndpoints.lately(write.tenants), try await recordQuietly(write)
                {
                    return []
                }
                do {
                    return try Self.completed(
                        try await postgres.query(
                            Self.recordSQL(tolerant: false, completion: write.completion), write.parameters))
                } catch let error as PostgresError where error.code == .uniqueViolation {
                    return try Self.completed(
                        try await postgres.query(
                            Self.recordSQL(tolerant: true, completion: write.completion), write.parameters))
                }
            }
            return try await postgres.withTransaction { tx in
                try await Self.record(write, registry: registry, inTransaction: tx)
            }
        }
    }

    /// `record` inside a transaction of the caller's (a test holding it open to record two
    /// chunks at once): the tolerant statement, then the invalidations, no retry.
    @discardableResult
    public static func record(
        _ records: [ChunkRecord], instance: String, registry: TokenRegistry = .devices,
        templates: [UUID: APNsRequest] = [:], completion: RecordCompletion = .inStatement,
        inTransaction tx: PostgresConnection
    ) async throws -> Set<UUID> {
        guard !records.isEmpty else { return [] }
        return try await record(
            recordWrite(records, instance: instance, templates: templates, completion: completion), registry: registry,
            inTransaction: tx)
    }

    /// The statement's parameters and the tokens to deactivate.
    struct RecordWrite: Sendable {
        var parameters: [any PostgresEncodable]
        var invalid: [Invalidation]
        var completion = RecordCompletion.inStatement
        /// The chunks' tenants, and how many deliveries the write inserts.
        var tenants: [UUID] = []
        var deliveries = 0
    }

    /// A fan-out chunk's record without the deliveries' webhook events, when no endpoint of its
    /// tenants wants them (`recordQuietSQL`). Answers false, having written nothing, when the
    /// statement found such an endpoint in its snapshot (or found every delivery recorded
    /// already): the full statement is then run, and the tenants are remembered as having one
    /// (`DeliveryEventEndpoints`), so their next chunks go to it at once.
    private func recordQuietly(_ write: RecordWrite) async throws -> Bool {
        let inserted: Int
        do {
            inserted = try await postgres.execute(Self.recordQuietSQL(tolerant: false), write.parameters)
        } catch let error as PostgresError where error.code == .uniqueViolation {
            inserted = try await postgres.execute(Self.recordQuietSQL(tolerant: true), write.parameters)
        }
        if inserted == 0 { deliveryEventEndpoints.note(write.tenants) }
        return inserted > 0
    }

    struct Invalidation: Sendable {
        var tenant: UUID
        var token: String
        var at: Date
        var reason: String
    }

    static func completed(_ rows: PostgresRows) throws -> Set<UUID> {
        Set(try rows.map { try $0.decode(UUID.self, at: 0) })
    }

    private static func record(_ write: RecordWrite, registry: TokenRegistry, inTransaction tx: PostgresConnection)
        async throws -> Set<UUID>
    {
        let done = try completed(
            try await tx.query(recordSQL(tolerant: true, completion: write.completion), write.parameters))
        guard !write.invalid.isEmpty else { return done }
        let parameters: [any PostgresEncodable] = [
            write.invalid.map(\.tenant), write.invalid.map(\.token), write.invalid.map(\.at),
            write.invalid.map(\.reason)
        ]
        switch registry {
        case .devices:
            // Not when the device registered again after APNs's timestamp (updated_at moves then).
            // The devices that were active get device.unregistered (the webhooks' outbox seam).
            try await tx.execute(
                """
                WITH was_active AS (
                    SELECT d.tenant_id, d.token FROM devices d
                    JOIN unnest($1::uuid[], $2::text[]) AS u(tenant_id, token)
                        ON d.tenant_id = u.tenant_id AND d.token = u.token
                    WHERE d.active
                ), d AS (
                    UPDATE devices d SET active = false, invalidated_at = u.at, invalid_reason = u.reason
                    FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[]) AS u(tenant_id, token, at, reason)
                    WHERE d.tenant_id = u.tenant_id AND d.token = u.token AND d.updated_at <= u.at
                    RETURNING d.tenant_id, d.token, d.subscriber_id, d.environment, u.at, u.reason
                )
                \(unregisteredEvents)
                """, parameters)
        case .liveActivities:
            for table in ["live_activities", "live_activity_start_tokens"] {
                try await tx.execute(
                    """
                    UPDATE \(table) t SET token_status = 'invalid', token_invalidated_at = u.at, token_invalid_reason = u.reason
                    FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[]) AS u(tenant_id, token, at, reason)
                    WHERE t.tenant_id = u.tenant_id AND t.token = u.token AND t.updated_at <= u.at
                    """, parameters)
            }
        }
        return done
    }

    /// `device.unregistered` (source `apns`, APNs's reason) for the devices of `d` that were active.
    static let unregisteredEvents = WebhookOutbox.insertSQL(
        WebhookEventSource(
            from: "d", tenantId: "d.tenant_id", type: WebhookEventSource.literal(.deviceUnregistered),
            eventId: "bk_webhook_event_id('device.unregistered', d.tenant_id || ':' || d.token || ':' || d.at)",
            occurredAt: "d.at",
            data: WebhookEventData.deviceUnregistered(
                token: "d.token", subscriberId: "d.subscriber_id", environment: "d.environment", source: "'apns'",
                reason: "d.reason", at: "d.at"),
            filter: "(d.tenant_id, d.token) IN (SELECT tenant_id, token FROM was_active)"))

    static func recordSQL(tolerant: Bool, completion: RecordCompletion = .inStatement) -> String {
        switch completion {
        case .inStatement: tolerant ? recordTolerant : recordPlain
        case .afterCommit: tolerant ? recordTolerantUncompleted : recordPlainUncompleted
        }
    }

    /// The record of a fan-out chunk (`.afterCommit`) without the deliveries' events: see `quietSQL`.
    static func recordQuietSQL(tolerant: Bool) -> String { tolerant ? recordTolerantQuiet : recordPlainQuiet }

    private static let tolerantConflict = "ON CONFLICT (id, message_time) DO NOTHING"
    private static let recordPlain = recordSQL(onConflict: "", completes: true)
    private static let recordTolerant = recordSQL(onConflict: tolerantConflict, completes: true)
    private static let recordPlainUncompleted = recordSQL(onConflict: "", completes: false)
    private static let recordTolerantUncompleted = recordSQL(onConflict: tolerantConflict, completes: false)
    private static let recordPlainQuiet = quietSQL(onConflict: "")
    private static let recordTolerantQuiet = quietSQL(onConflict: tolerantConflict)

    /// $1-$4 the distinct requests (id, message, payload, headers), $5 the chunks, $6 their
    /// tenants, $7 this replica, $8-$20 one element per delivery (id, its chunk's position in $5
    /// from 1, message, token, subscriber, environment, status, attempt count, last status, last
    /// reason, error code, first request, attempts), $21 the messages of the deliveries, $22 each
    /// delivery's suppression reason (NULL unless `suppressed`), $23-$32 the value of each
    /// collapsible column of them when it is empty (`CollapsibleColumn`: chunk position, message,
    /// environment, status, attempt count, last status, last reason, error code, first request,
    /// suppression reason), $33-$34 the times $21 are filed between (`LedgerTime.Range`).
    /// Answers the messages completed (`completes`; else nothing, and there are no $33-$34).
    /// Each message's `message_time` is worked out once (`times`) and joined to its rows.
    static func recordSQL(onConflict: String, completes: Bool) -> String {
        let completion =
            completes
            ? """
            , \(MessageCompletion.cte(
                match: "m.id = ANY($21::uuid[]) AND \(LedgerTime.prune("m.message_time", lower: "$33", upper: "$34"))",
                recorded: "$5::uuid[]",
                written: "(SELECT u.id, u.message AS message_id, u.status FROM \(deliveryRows) u) AS w"))
            SELECT id FROM completed
            """
            : """

            SELECT NULL::uuid LIMIT 0
            """
        return """
            WITH \(recordedRows(onConflict: onConflict, gate: nil)), recorded AS (
                \(deliveriesInsert(onConflict: onConflict, gate: nil))
                RETURNING \(deliveryReturning)
            ), \(deliveryEvents(recorded: "recorded", tenants: "$6::uuid[]"))\(completion)
            """
    }

    /// `recordSQL(completes: false)` without the deliveries' webhook events (`deliveryEvents`):
    /// no `RETURNING` kept for them and no outbox inserts planned, set up and torn down for every
    /// chunk of a tenant that has no endpoint wanting `delivery.sent` or `delivery.failed` (the
    /// usual send). Exact as the full statement's gates are: the statement looks for such an
    /// endpoint of the chunks' tenants in its own snapshot (`quiet`, once), and when there is one
    /// it writes nothing at all (no request, no delivery, no chunk deleted): the caller sees no
    /// row inserted and runs the full statement, whose own snapshot sees the endpoint too. So an
    /// endpoint gets the events of every delivery recorded by a statement that starts after its
    /// subscription committed, whichever statement the sender tried first. The top statement is
    /// the deliveries' INSERT: its row count is the answer.
    static func quietSQL(onConflict: String) -> String {
        let subscribed = [WebhookEventType.deliverySent, .deliveryFailed].map {
            WebhookEventSource.subscribed(tenants: "$6::uuid[]", to: $0)
        }
        return """
            WITH quiet AS MATERIALIZED (
                SELECT NOT (\(subscribed.joined(separator: " OR "))) AS yes
            ), \(recordedRows(onConflict: onConflict, gate: "(SELECT yes FROM quiet)"))
            \(deliveriesInsert(onConflict: onConflict, gate: "(SELECT yes FROM quiet)"))
            """
    }

    /// The record's CTEs before the deliveries: `times` (each message's `message_time`), the
    /// distinct requests inserted, the chunks deleted; each write only when `gate` holds.
    private static func recordedRows(onConflict: String, gate: String?) -> String {
        """
        times AS MATERIALIZED (
            \(LedgerTime.messageTimes("$21::uuid[]"))
        ), requests AS (
            INSERT INTO delivery_payloads (id, message_id, message_time, payload, headers)
            SELECT r.id, r.message, t.message_time, r.payload, r.headers
            FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::json[]) AS r(id, message, payload, headers)
            JOIN times t ON t.id = r.message\(gate.map { "\n    WHERE \($0)" } ?? "")
            ON CONFLICT (id, message_time) DO NOTHING
        ), chunks AS (
            DELETE FROM delivery_chunks WHERE id = ANY($5::uuid[])\(gate.map { " AND \($0)" } ?? "")
        )
        """
    }

    /// The deliveries' INSERT (no `RETURNING`), only when `gate` holds.
    private static func deliveriesInsert(onConflict: String, gate: String?) -> String {
        """
        INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id, environment,
                                status, attempt_count, apns_id, last_status, last_reason, error_code, sending_by,
                                sent_at, payload_id, attempts, suppressed_reason)
        SELECT u.id, ($6::uuid[])[u.chunk], u.message, t.message_time, u.token, u.subscriber, u.environment, u.status, u.attempts,
               NULL, u.last_status, u.last_reason, u.error_code, $7, CASE WHEN u.status = 'sent' THEN now() END,
               u.payload, u.log, u.suppressed
        FROM \(deliveryRows) u
        JOIN times t ON t.id = u.message\(gate.map { "\nWHERE \($0)" } ?? "")
        \(onConflict)
        """
    }

    /// The deliveries of $8-$22 as rows (a subquery, columns `id`, `chunk`, `message`, `token`,
    /// `subscriber`, `environment`, `status`, `attempts`, `last_status`, `last_reason`,
    /// `error_code`, `payload`, `log`, `suppressed`), each collapsible column's empty array padded
    /// with its value ($23-$32).
    static let deliveryRows = """
        (SELECT u.id, coalesce(u.chunk, $23::int) AS chunk, coalesce(u.message, $24::uuid) AS message, u.token,
                u.subscriber, coalesce(u.environment, $25::text) AS environment, coalesce(u.status, $26::text) AS status,
                coalesce(u.attempts, $27::int) AS attempts, coalesce(u.last_status, $28::int) AS last_status,
                coalesce(u.last_reason, $29::text) AS last_reason, coalesce(u.error_code, $30::text) AS error_code,
                coalesce(u.payload, $31::uuid) AS payload, u.log, coalesce(u.suppressed, $32::text) AS suppressed
         FROM unnest($8::uuid[], $9::int[], $10::uuid[], $11::text[], $12::text[], $13::text[], $14::text[],
                     $15::int[], $16::int[], $17::text[], $18::text[], $19::uuid[], $20::json[], $22::text[])
             AS u(id, chunk, message, token, subscriber, environment, status, attempts, last_status, last_reason,
                  error_code, payload, log, suppressed))
        """

    // MARK: - Building the parameters

    static func recordWrite(
        _ records: [ChunkRecord], instance: String, templates: [UUID: APNsRequest],
        completion: RecordCompletion = .inStatement
    ) -> RecordWrite {
        let count = records.reduce(0) { $0 + $1.outcomes.count }
        var rows = DeliveryRows(capacity: count)
        var requests = RequestRows()
        var chunkIds = PostgresArrayText()
        var tenants = PostgresArrayText()
        var messages: [UUID] = []
        var seen = Set<UUID>()
        var invalid: [Invalidation] = []
        for (position, record) in records.enumerated() {
            chunkIds.append(record.chunk.id)
            tenants.append(record.chunk.tenantId)
            for outcome in record.outcomes {
                let device = outcome.device
                if seen.insert(device.messageId).inserted { messages.append(device.messageId) }
                var log = AttemptLog(deliveryId: device.deliveryId)
                if let lost = record.chunk.lost {
                    let sent = outcome.attempts.first
                    let payload = sent?.payload ?? templates[device.messageId]?.payload ?? []
                    let headers =
                        sent?.requestHeaders
                        ?? lostHeaders(templates[device.messageId], apnsId: device.deliveryId)
                    log.append(
                        payload: requests.id(message: device.messageId, payload: payload, headers: headers),
                        sentAt: lost.claimedAt, status: 0, reason: nil, apnsId: device.deliveryId, latency: 0,
                        error:
                            "unknown: the answer was lost with replica \(lost.replica), which stopped mid-send; sent again with the same apns-id and apns-collapse-id"
                    )
                }
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
                    invalid.append(
                        Invalidation(
                            tenant: record.chunk.tenantId, token: device.token, at: invalidation.at,
                            reason: invalidation.reason))
                }
            }
        }
        var messageIds = PostgresArrayText(capacity: 2 + messages.count * 37)
        for message in messages { messageIds.append(message) }
        var parameters: [any PostgresEncodable] =
            [
                requests.ids.value, requests.messages.value, requests.payloads.value, requests.headerTexts.value,
                chunkIds.value, tenants.value, instance
            ] + rows.arrays + [messageIds.value, rows.suppressed.array] + rows.uniformValues
        if completion == .inStatement {
            let range = LedgerTime.Range(of: messages)
            parameters += [range.lower, range.upper]
        }
        return RecordWrite(
            parameters: parameters, invalid: invalid, completion: completion, tenants: records.map(\.chunk.tenantId),
            deliveries: count)
    }

    /// The headers of a lost attempt when the re-send made none: the message's request as built,
    /// the token redacted.
    static func lostHeaders(_ template: APNsRequest?, apnsId: String) -> HTTPHeaders {
        guard var request = template else { return HTTPHeaders() }
        request.apnsId = apnsId
        return request.headers(authorization: "bearer <redacted>")
    }

    /// The per-delivery arrays ($8-$20, $22), the collapsible ones with their values ($23-$32).
    struct DeliveryRows {
        var id = PostgresArrayText(), token = PostgresArrayText(), subscriber = PostgresArrayText()
        var log = PostgresArrayText()
        var chunk = CollapsibleColumn<Int>(), message = CollapsibleColumn<UUID>()
        var environment = CollapsibleColumn<String>(), status = CollapsibleColumn<String>()
        var attempts = CollapsibleColumn<Int>(), lastStatus = CollapsibleColumn<Int>()
        var lastReason = CollapsibleColumn<String>(), errorCode = CollapsibleColumn<String>()
        var payload = CollapsibleColumn<UUID>(), suppressed = CollapsibleColumn<String>()

        init(capacity: Int) {
            id = PostgresArrayText(capacity: 2 + capacity * 37)
            token = PostgresArrayText(capacity: 2 + capacity * 68)
            subscriber = PostgresArrayText(capacity: 2 + capacity * 12)
            log = PostgresArrayText(capacity: 2 + capacity * 56)
        }

        mutating func append(_ outcome: DeliveryOutcome, chunk position: Int, log attemptLog: AttemptLog) {
            id.append(outcome.device.deliveryId)
            chunk.append(position)
            message.append(outcome.device.messageId)
            token.append(outcome.device.token)
            subscriber.append(outcome.device.subscriberId)
            environment.append(outcome.device.environment)
            status.append(outcome.status.rawValue)
            attempts.append(attemptLog.count)
            lastStatus.append(outcome.lastStatus)
            lastReason.append(outcome.lastReason)
            errorCode.append(outcome.errorCode?.rawValue)
            payload.append(attemptLog.firstPayload)
            log.append(utf8: attemptLog.bytes)
            suppressed.append(outcome.suppressedReason?.rawValue)
        }

        /// $8-$20.
        var arrays: [any PostgresEncodable] {
            [
                id.value, chunk.array, message.array, token.value, subscriber.value, environment.array, status.array,
                attempts.array, lastStatus.array, lastReason.array, errorCode.array, payload.array, log.value
            ]
        }

        /// $23-$32.
        var uniformValues: [any PostgresEncodable] {
            [
                chunk.uniform, message.uniform, environment.uniform, status.uniform, attempts.uniform,
                lastStatus.uniform, lastReason.uniform, errorCode.uniform, payload.uniform, suppressed.uniform
            ]
        }
    }
}

/// Where a record's messages are completed (`Ledger.record`).
public enum RecordCompletion: Sendable {
    /// In the record's own statement (a direct batch's messages, a Live Activity request's: each
    /// lies wholly in its chunk).
    case inStatement
    /// By the caller's `completeIfDone` after the commit (a fan-out chunk's message).
    case afterCommit
}
