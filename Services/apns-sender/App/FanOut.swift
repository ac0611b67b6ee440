import BuzzKitAudience
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// Expands one message (a `bk:messages` entry) into chunks of devices, page by page.
///
/// Per page of `pageSize` devices (keyset on (subscriber_id, token)): ONE statement writes the
/// page's chunks of `chunkSize` devices (`delivery_chunks`, queued) and records the page's last key
/// and the devices counted so far in the message row, so a crash resumes after the last page
/// written and never writes a device twice; then ONE pipelined XADD puts the chunks on
/// `bk:deliveries`. A crash between the two leaves chunks without an entry: the outbox sweeper
/// finds such orphans and adds them (`ChunkStore.orphans`). The message ends `fanned_out` with its
/// audience size (`fanout_count`).
struct FanOut: Sendable {
    let postgres: PostgresClient
    let redis: RedisClient
    let credentials: TenantCredentialStore
    let deliveries: StreamName
    let pageSize: Int
    let chunkSize: Int
    let logger: Logger
    var metrics: SenderMetrics = .unregistered()

    func handle(_ entry: MessageEntry) async throws {
        let message = entry.messageId, tenant = entry.tenantId
        let rows = try await postgres.query(
            """
            UPDATE messages SET status = 'fanning_out', updated_at = now()
            WHERE id = $1::uuid AND tenant_id = $2::uuid AND status IN ('queued', 'fanning_out')
            RETURNING target, environment, fanout_after_subscriber, fanout_after_token, created_at, fanout_devices
            """, [message, tenant])
        guard let row = rows.first else { return }  // done, failed or unknown: nothing to do
        guard let target = MessageTarget(json: try row.decode(JSONValue.self, at: 0)) else {
            try await fail(message, code: "invalid_target", "the stored target cannot be read")
            return
        }
        let environment = try row.decode(String?.self, at: 1)
        var afterSubscriber = try row.decode(String?.self, at: 2)
        var afterToken = try row.decode(String?.self, at: 3)
        let apns = try await credentials.get(tenant)
        if let problem = apns.problem {
            try await fail(message, code: problem.code, problem.message)
            logger.warning(
                "message failed: tenant cannot send",
                metadata: [
                    "message.id": message.lowercasedText, "tenant": tenant.lowercasedText, "error.code": problem.code
                ])
            return
        }
        if case .expression(let text, _) = target {
            let sentAt = try row.decode(Date.self, at: 4)
            try await fanOutExpression(
                text, message: message, tenant: tenant, environment: environment,
                after: afterSubscriber, now: sentAt, counted: try row.decode(Int.self, at: 5))
            return
        }
        var counted = try row.decode(Int.self, at: 5)
        while true {
            let pageStarted = ContinuousClock.now
            defer { metrics.fanoutPage.observe(ContinuousClock.now - pageStarted) }
            let page = try await writePage(
                target, tenant: tenant, message: message, environment: environment,
                afterSubscriber: afterSubscriber, afterToken: afterToken, limit: pageSize, position: nil,
                expected: (afterSubscriber, afterToken))
            if page.devices > 0 && !page.written { return }  // another fan-out of it is ahead
            try await enqueue(page.chunks, tenant: tenant)
            counted += page.devices
            if page.devices < pageSize {
                try await finish(message, audience: counted)
                return
            }
            afterSubscriber = page.lastSubscriber
            afterToken = page.lastToken
        }
    }

    /// An expression audience, streamed: the compiled SQL runs ONCE through a server-side cursor
    /// (`AudienceCursor`, one `now` for the whole send: the message's creation time, so `within:`
    /// windows do not move between pages or after a restart); each page of subscriber ids has its
    /// devices inserted and queued like a `to` list, then its last id is recorded, so a crash
    /// resumes after it (the statement runs again from there: `AudienceQuery.all(after:)`).
    private func fanOutExpression(
        _ text: String, message: UUID, tenant: UUID, environment: String?, after: String?,
        now: Date, counted: Int
    ) async throws {
        let expression: AudienceExpression
        do {
            expression = try AudienceExpression.parse(text)
        } catch {
            try await fail(message, code: "invalid_target", "the stored expression does not parse: \(error)")
            return
        }
        let query = AudienceQuery.all(expression, tenantId: tenant, after: after, now: now)
        var counted = counted
        var position = after
        do {
            try await AudienceCursor.stream(
                query, configuration: postgres.configuration, logger: logger,
                pageSize: max(1, pageSize / 2)
            ) { subscribers in
                let pageStarted = ContinuousClock.now
                defer { metrics.fanoutPage.observe(ContinuousClock.now - pageStarted) }
                let last = subscribers[subscribers.count - 1]
                let page = try await writePage(
                    .subscribers(subscribers), tenant: tenant, message: message, environment: environment,
                    afterSubscriber: nil, afterToken: nil, limit: Int(Int32.max), position: last,
                    expected: (position, nil), read: subscribers.count)
                if !page.written { throw Overtaken() }
                try await enqueue(page.chunks, tenant: tenant)
                counted += page.devices
                position = last
            }
        } catch is Overtaken {
            return  // another fan-out of the message is ahead
        }
        try await finish(message, audience: counted)
    }

    /// Puts the chunks on `bk:deliveries`, with one pipelined XADD.
    private func enqueue(_ chunks: [UUID], tenant: UUID) async throws {
        guard !chunks.isEmpty else { return }
        try await redis.xaddBatch(
            deliveries.rawValue, entries: chunks.map { DeliveryChunk(tenantId: tenant, chunkId: $0).fields })
    }

    private func finish(_ message: UUID, audience: Int) async throws {
        try await postgres.execute(
            """
            UPDATE messages SET status = 'fanned_out', updated_at = now(), audience_size = $2 WHERE id = $1::uuid
            """, [message, audience])
        logger.info("message fanned out", metadata: ["message.id": message.lowercasedText])
    }

    /// One page: its devices, the chunks written, its last key, and whether this fan-out wrote it
    /// (false: another fan-out of the message moved the position first; this one stops).
    struct Page {
        var devices: Int
        var chunks: [UUID]
        var lastSubscriber: String?
        var lastToken: String?
        var written = false
    }

    /// Another fan-out of the message moved its position: this one stops (see `pageSQL`).
    struct Overtaken: Error {}

    /// Writes one page's chunks and the message's new position in one statement (see the type).
    /// `position`: the subscriber to record as the last one read (an expression's page of
    /// subscriber ids, some of them without devices); nil records the page's last device.
    private func writePage(
        _ target: MessageTarget, tenant: UUID, message: UUID, environment: String?, afterSubscriber: String?,
        afterToken: String?, limit: Int, position: String?, expected: (String?, String?), read: Int? = nil
    ) async throws -> Page {
        let rows = try await postgres.query(
            Self.pageSQL(target),
            Self.pageParameters(
                target, tenant: tenant, message: message, environment: environment,
                afterSubscriber: afterSubscriber, afterToken: afterToken, limit: limit)
                + [chunkSize, position, expected.0, expected.1, read])
        guard let row = rows.first else { return Page(devices: 0, chunks: []) }
        return Page(
            devices: try row.decode(Int.self, at: 0), chunks: try row.decode([UUID]?.self, at: 1) ?? [],
            lastSubscriber: try row.decode(String?.self, at: 2), lastToken: try row.decode(String?.self, at: 3),
            written: try row.decode(Bool.self, at: 4))
    }

    private func fail(_ message: UUID, code: String, _ text: String) async throws {
        try await postgres.execute(
            """
            UPDATE messages SET status = 'failed', error_code = $2, error_message = $3, updated_at = now() WHERE id = $1::uuid
            """, [message, code, text])
    }

    /// $1 tenant, $2 ids/topic, $3 environment, $4/$5 last key, $6 limit, $7 message, $8 chunk
    /// size, $9 the position to record (NULL: the page's last device), $10/$11 the position the
    /// message must be at, $12 what the page counts for `fanout_count` (NULL: its devices; an
    /// expression's page, its subscribers). Answers one row: devices in the page, the chunk ids, the last subscriber
    /// and token, and whether the page was written.
    ///
    /// The chunk rows and the message's position are written by the same statement: a page is
    /// either written with its position or not at all, so a resumed fan-out never writes a device
    /// twice. The position moves only from where this fan-out read it (`$10`, `$11`): when two
    /// fan-outs of one message run at once (a redelivered entry, the outbox sweeper's), the row
    /// lock orders them and the second finds the position moved and writes nothing. The arrays of
    /// a chunk (about 10 kB for 100 devices) go to TOAST, compressed.
    static func pageSQL(_ target: MessageTarget) -> String {
        let source: String
        switch target {
        case .subscribers, .expression:  // an expression is resolved to pages of subscriber ids first
            source = """
                SELECT d.subscriber_id, d.token, d.environment FROM devices d
                WHERE d.tenant_id = $1::uuid AND d.subscriber_id = ANY($2::text[])
                """
        case .topic:
            source = """
                SELECT d.subscriber_id, d.token, d.environment
                FROM topic_subscriptions s JOIN devices d ON d.tenant_id = s.tenant_id AND d.subscriber_id = s.subscriber_id
                WHERE s.tenant_id = $1::uuid AND s.topic_key = $2 AND ($4::text IS NULL OR s.subscriber_id >= $4::text)
                """
        }
        return """
            WITH page AS MATERIALIZED (
                SELECT p.*, (row_number() OVER (ORDER BY p.subscriber_id, p.token) - 1) / $8 AS chunk
                FROM (
                    \(source)
                      AND d.active AND ($3::text IS NULL OR d.environment = $3::text)
                      AND ($4::text IS NULL OR (d.subscriber_id, d.token) > ($4::text, $5::text))
                    ORDER BY d.subscriber_id, d.token LIMIT $6
                ) p
            ), last AS (
                SELECT subscriber_id, token FROM page ORDER BY subscriber_id DESC, token DESC LIMIT 1
            ), position AS (
                UPDATE messages SET fanout_after_subscriber = coalesce($9::text, (SELECT subscriber_id FROM last)),
                    fanout_after_token = CASE WHEN $9::text IS NULL THEN (SELECT token FROM last) END,
                    fanout_count = fanout_count + coalesce($12::int, (SELECT count(*) FROM page)::int),
                    fanout_devices = fanout_devices + (SELECT count(*) FROM page), updated_at = now()
                WHERE id = $7::uuid AND (EXISTS (SELECT 1 FROM page) OR $9::text IS NOT NULL)
                  AND fanout_after_subscriber IS NOT DISTINCT FROM $10::text
                  AND fanout_after_token IS NOT DISTINCT FROM $11::text
                RETURNING id
            ), chunks AS (
                INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments)
                SELECT gen_random_uuid(), $1::uuid, $7::uuid, array_fill($7::uuid, ARRAY[count(*)::int]),
                       array_agg(token ORDER BY subscriber_id, token), array_agg(subscriber_id ORDER BY subscriber_id, token),
                       array_agg(environment ORDER BY subscriber_id, token)
                FROM page WHERE EXISTS (SELECT 1 FROM position) GROUP BY chunk
                RETURNING id
            )
            SELECT (SELECT count(*)::int FROM page), (SELECT array_agg(id) FROM chunks),
                   (SELECT subscriber_id FROM last), (SELECT token FROM last), EXISTS (SELECT 1 FROM position)
            """
    }

    static func pageParameters(
        _ target: MessageTarget, tenant: UUID, message: UUID, environment: String?,
        afterSubscriber: String?, afterToken: String?, limit: Int
    ) -> [any PostgresEncodable] {
        let selector: any PostgresEncodable
        switch target {
        case .subscribers(let ids): selector = ids
        case .topic(let key): selector = key
        case .expression: selector = [String]()  // never paged directly: see fanOutExpression
        }
        return [tenant, selector, environment, afterSubscriber, afterToken, limit, message]
    }
}
