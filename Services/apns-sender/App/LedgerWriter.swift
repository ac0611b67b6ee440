import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// How one device's delivery ended: its status and the attempts that led there.
struct DeliveryOutcome: Sendable {
    var device: ChunkDevice
    var status: DeliveryStatus
    var lastStatus: Int?
    var lastReason: String?
    var errorCode: String?
    var attempts: [APNsResponse]
    /// APNs called the token invalid (410, BadDeviceToken): since when, and why.
    var invalidation: (at: Date, reason: String)?
}

/// Records a chunk: ONE statement inserts each of its deliveries once, with its outcome and every
/// attempt (`deliveries.attempts`; `apns_id` NULL: the delivery's id is its apns-id), stores each distinct request once (`delivery_payloads`: the
/// payload bytes and the headers, apns-id as `{apns-id}`), and deletes the chunk (migration 0016).
/// Tokens APNs called invalid are deactivated in the same transaction (unless the device
/// registered again after APNs's timestamp).
///
/// A chunk taken over from a stopped replica (`lostWith`) gets, before each device's own attempts,
/// that replica's attempt: status 0, the same request, an error saying its answer was lost.
///
/// The insert is plain (no speculative insertion); only if a delivery exists already (another
/// replica recorded the same taken-over chunk first) is it redone with `ON CONFLICT DO NOTHING`,
/// keeping what was recorded first.
struct LedgerWriter: Sendable {
    let postgres: PostgresClient
    let instance: String
    let logger: Logger

    /// `messages`: the prepared messages of the chunk, for the headers of a lost attempt when the
    /// re-send made none (the message expired, the credentials went).
    func record(_ chunk: ClaimedChunk, _ outcomes: [DeliveryOutcome], messages: [UUID: PreparedMessage]) async throws {
        var rows = Rows(capacity: outcomes.count)
        var requests = RequestRows()
        for outcome in outcomes {
            var log = AttemptLog(deliveryId: outcome.device.deliveryId)
            if let lostWith = chunk.lostWith {
                let sent = outcome.attempts.first
                let payload = sent?.payload ?? messages[outcome.device.messageId]?.template.payload ?? []
                let headers =
                    sent?.requestHeaders
                    ?? Self.lostHeaders(messages[outcome.device.messageId], apnsId: outcome.device.deliveryId)
                log.append(
                    payload: requests.id(message: outcome.device.messageId, payload: payload, headers: headers),
                    status: 0, reason: nil, apnsId: outcome.device.deliveryId, latency: 0,
                    error:
                        "unknown: the answer was lost with replica \(lostWith), which stopped mid-send; sent again with the same apns-id and apns-collapse-id"
                )
            }
            for attempt in outcome.attempts {
                log.append(
                    payload: requests.id(
                        message: outcome.device.messageId, payload: attempt.payload, headers: attempt.requestHeaders),
                    status: attempt.status, reason: attempt.reason?.rawValue, apnsId: attempt.apnsId,
                    latency: attempt.latencyMilliseconds, error: attempt.transportError?.description)
            }
            rows.append(outcome, log: log)
        }
        let invalid = outcomes.compactMap { outcome in
            outcome.invalidation.map { (outcome.device.token, $0.at, $0.reason) }
        }
        let parameters: [any PostgresEncodable] =
            [
                requests.ids.value, requests.messages.value, requests.payloads.value, requests.headerTexts.value,
                chunk.id,
                chunk.tenantId, instance
            ] + rows.parameters
        let tolerant = Self.recordSQL(onConflict: "ON CONFLICT (id) DO NOTHING")
        try await retryingLedgerWrite(logger: logger) {
            if invalid.isEmpty {
                do {
                    try await postgres.execute(Self.recordSQL(onConflict: ""), parameters)
                } catch let error as PostgresError where error.code == .uniqueViolation {
                    try await postgres.execute(tolerant, parameters)
                }
                return
            }
            try await postgres.withTransaction { tx in
                try await tx.execute(tolerant, parameters)
                // Not when the device registered again after APNs's timestamp (updated_at moves then).
                // The devices that were active get device.unregistered (the webhooks seam).
                try await tx.execute(
                    """
                    WITH was_active AS (
                        SELECT token FROM devices WHERE tenant_id = $1::uuid AND token = ANY ($2::text[]) AND active
                    ), d AS (
                        UPDATE devices d SET active = false, invalidated_at = u.at, invalid_reason = u.reason
                        FROM unnest($2::text[], $3::timestamptz[], $4::text[]) AS u(token, at, reason)
                        WHERE d.tenant_id = $1::uuid AND d.token = u.token AND d.updated_at <= u.at
                        RETURNING d.tenant_id, d.token, d.subscriber_id, d.environment, u.at, u.reason
                    )
                    \(Self.unregisteredEvents)
                    """, [chunk.tenantId, invalid.map(\.0), invalid.map(\.1), invalid.map(\.2)])
            }
        }
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
            filter: "d.token IN (SELECT token FROM was_active)"))

    /// $1-$4 the distinct requests (id, message, payload, headers), $5 the chunk, $6 its tenant,
    /// $7 this replica, $8-$19 one element per delivery.
    static func recordSQL(onConflict: String) -> String {
        """
        WITH requests AS (
            INSERT INTO delivery_payloads (id, message_id, payload, headers)
            SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::json[])
            ON CONFLICT (id) DO NOTHING
        ), chunk AS (
            DELETE FROM delivery_chunks WHERE id = $5::uuid
        )
        INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment, status,
                                attempt_count, apns_id, last_status, last_reason, error_code, sending_by, sent_at,
                                payload_id, attempts)
        SELECT u.id, $6::uuid, u.message, u.token, u.subscriber, u.environment, u.status, u.attempts, NULL,
               u.last_status, u.last_reason, u.error_code, $7, CASE WHEN u.status = 'sent' THEN now() END,
               u.payload, u.log
        FROM unnest($8::uuid[], $9::uuid[], $10::text[], $11::text[], $12::text[], $13::text[], $14::int[],
                    $15::int[], $16::text[], $17::text[], $18::uuid[], $19::json[])
            AS u(id, message, token, subscriber, environment, status, attempts, last_status, last_reason, error_code,
                 payload, log)
        \(onConflict)
        """
    }

    /// The headers of a lost attempt when the re-send made none: the message's request as built,
    /// the token redacted.
    static func lostHeaders(_ message: PreparedMessage?, apnsId: String) -> HTTPHeaders {
        guard var request = message?.template else { return HTTPHeaders() }
        request.apnsId = apnsId
        return request.headers(authorization: "bearer <redacted>")
    }

    // MARK: - Building the parameters

    /// The distinct requests of a chunk (one per message, normally): name-based ids, so the same
    /// request recorded by two chunks is one row.
    struct RequestRows {
        var ids = PostgresArrayText(), messages = PostgresArrayText()
        var payloads = PostgresArrayText(), headerTexts = PostgresArrayText(capacity: 512)
        private var added = Set<UUID>()
        private var last: (message: UUID, payload: [UInt8], headers: [UInt8], id: UUID)?
        private var writer = LedgerHeaders()

        /// The id of this request, adding it to the rows the first time. Consecutive attempts of
        /// one message's request (a fan-out chunk) are recognised by comparing with the last one;
        /// otherwise the id is the digest of the request (no hashing of the bytes into a table).
        mutating func id(message: UUID, payload: [UInt8], headers: HTTPHeaders) -> UUID {
            let template = writer.template(headers)
            if let last, last.message == message, last.payload == payload, last.headers == template { return last.id }
            var name = Array("payload:\(message.lowercasedText):".utf8)
            name += Hex.string(Digest.sha256(payload + [0x0A] + template)).utf8
            let id = UUID.nameBased(String(decoding: name, as: UTF8.self))
            last = (message, payload, template, id)
            if added.insert(id).inserted {
                ids.append(id)
                messages.append(message)
                payloads.append(utf8: payload)
                headerTexts.append(utf8: template)
            }
            return id
        }
    }

    /// One delivery's attempts as the compact JSON array `deliveries.attempts` holds: `n` number,
    /// `s` status, `l` latency (ms), and only when they say something: `r` reason, `e` error, `a`
    /// the apns-id APNs answered with when it differs from the delivery's (or null when none came),
    /// `p` the request when it differs from the delivery's first.
    struct AttemptLog {
        let deliveryId: String
        var json = JSONWriter(capacity: 64)
        var count = 0
        var firstPayload: UUID?

        init(deliveryId: String) {
            self.deliveryId = deliveryId
            json.raw("[")
        }

        mutating func append(payload: UUID, status: Int, reason: String?, apnsId: String?, latency: Int, error: String?)
        {
            if count > 0 { json.raw(",") }
            count += 1
            if firstPayload == nil { firstPayload = payload }
            json.raw("{\"n\":")
            json.int(count)
            json.raw(",\"s\":")
            json.int(status)
            json.raw(",\"l\":")
            json.int(latency)
            if let reason {
                json.raw(",\"r\":")
                json.string(reason)
            }
            if let error {
                json.raw(",\"e\":")
                json.string(error)
            }
            if apnsId != deliveryId {
                json.raw(",\"a\":")
                if let apnsId { json.string(apnsId) } else { json.raw("null") }
            }
            if payload != firstPayload {
                json.raw(",\"p\":\"")
                json.rawBytes(payload.lowercasedText.utf8)
                json.raw("\"")
            }
            json.raw("}")
        }

        var bytes: [UInt8] { json.bytes + [UInt8(ascii: "]")] }
    }

    /// The per-delivery arrays ($8-$19).
    struct Rows {
        var id = PostgresArrayText(), message = PostgresArrayText(), token = PostgresArrayText()
        var subscriber = PostgresArrayText(), environment = PostgresArrayText(), status = PostgresArrayText()
        var attempts = PostgresArrayText(), lastStatus = PostgresArrayText(), lastReason = PostgresArrayText()
        var errorCode = PostgresArrayText(), payload = PostgresArrayText(), log = PostgresArrayText()

        init(capacity: Int) {
            token = PostgresArrayText(capacity: 2 + capacity * 68)
            log = PostgresArrayText(capacity: 2 + capacity * 40)
        }

        mutating func append(_ outcome: DeliveryOutcome, log attemptLog: AttemptLog) {
            id.append(outcome.device.deliveryId)
            message.append(outcome.device.messageId)
            token.append(outcome.device.token)
            subscriber.append(outcome.device.subscriberId)
            environment.append(outcome.device.environment)
            status.append(outcome.status.rawValue)
            attempts.append(attemptLog.count)
            lastStatus.append(outcome.lastStatus)
            lastReason.append(outcome.lastReason)
            errorCode.append(outcome.errorCode)
            if let first = attemptLog.firstPayload { payload.append(first) } else { payload.appendNull() }
            log.append(utf8: attemptLog.bytes)
        }

        var parameters: [any PostgresEncodable] {
            [
                id.value, message.value, token.value, subscriber.value, environment.value, status.value,
                attempts.value, lastStatus.value, lastReason.value, errorCode.value, payload.value, log.value
            ]
        }
    }
}
