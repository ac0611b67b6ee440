import BuzzKitAudience
import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitPush
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// Expands one message (a `bk:messages` entry) into deliveries, page by page.
///
/// Per page of `pageSize` devices (keyset on (subscriber_id, token)): ONE statement inserts the
/// page's deliveries (`ON CONFLICT (message_id, device_token) DO NOTHING`) and returns the id of
/// every delivery of the page, new or already there; ONE pipelined XADD puts them on
/// `bk:deliveries` in chunks of `chunkSize`; ONE update records the page's last key. A crash
/// resumes at the recorded key: the page in progress is read again, finds its rows, and its
/// chunks go out again, which the delivery side ignores for deliveries no longer `queued`.
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
            RETURNING target, environment, fanout_after_subscriber, fanout_after_token, created_at
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
                after: afterSubscriber, now: sentAt)
            return
        }
        while true {
            let pageStarted = ContinuousClock.now
            defer { metrics.fanoutPage.observe(ContinuousClock.now - pageStarted) }
            let page = try await postgres.query(
                Self.pageSQL(target),
                Self.pageParameters(
                    target, tenant: tenant, message: message, environment: environment,
                    afterSubscriber: afterSubscriber, afterToken: afterToken, limit: pageSize))
            var ids: [UUID] = []
            ids.reserveCapacity(page.count)
            // nil: a concurrent fan-out of the same message inserted it (and queues it itself).
            for r in page { if let id = try r.decode(UUID?.self, at: 2) { ids.append(id) } }
            try await enqueue(ids, message: message, tenant: tenant)
            if page.count < pageSize {
                try await finish(message)
                return
            }
            let last = page[page.count - 1]
            afterSubscriber = try last.decode(String.self, at: 0)
            afterToken = try last.decode(String.self, at: 1)
            try await postgres.execute(
                """
                UPDATE messages SET fanout_after_subscriber = $2, fanout_after_token = $3,
                    fanout_count = fanout_count + $4, updated_at = now()
                WHERE id = $1::uuid
                """, [message, afterSubscriber, afterToken, page.count])
        }
    }

    /// An expression audience, streamed: the compiled SQL runs ONCE through a server-side cursor
    /// (`AudienceCursor`, one `now` for the whole send: the message's creation time, so `within:`
    /// windows do not move between pages or after a restart); each page of subscriber ids has its
    /// devices inserted and queued like a `to` list, then its last id is recorded, so a crash
    /// resumes after it (the statement runs again from there: `AudienceQuery.all(after:)`).
    private func fanOutExpression(
        _ text: String, message: UUID, tenant: UUID, environment: String?, after: String?,
        now: Date
    ) async throws {
        let expression: AudienceExpression
        do {
            expression = try AudienceExpression.parse(text)
        } catch {
            try await fail(message, code: "invalid_target", "the stored expression does not parse: \(error)")
            return
        }
        let query = AudienceQuery.all(expression, tenantId: tenant, after: after, now: now)
        try await AudienceCursor.stream(
            query, configuration: postgres.configuration, logger: logger,
            pageSize: max(1, pageSize / 2)
        ) { subscribers in
            let pageStarted = ContinuousClock.now
            defer { metrics.fanoutPage.observe(ContinuousClock.now - pageStarted) }
            let page = try await postgres.query(
                Self.pageSQL(.subscribers(subscribers)),
                Self.pageParameters(
                    .subscribers(subscribers), tenant: tenant, message: message, environment: environment,
                    afterSubscriber: nil, afterToken: nil, limit: Int(Int32.max)))
            var ids: [UUID] = []
            ids.reserveCapacity(page.count)
            for r in page { if let id = try r.decode(UUID?.self, at: 2) { ids.append(id) } }
            try await enqueue(ids, message: message, tenant: tenant)
            try await postgres.execute(
                """
                UPDATE messages SET fanout_after_subscriber = $2, fanout_count = fanout_count + $3, updated_at = now()
                WHERE id = $1::uuid
                """, [message, subscribers[subscribers.count - 1], subscribers.count])
        }
        try await finish(message)
    }

    /// Puts `ids` on `bk:deliveries` in chunks of `chunkSize`, with one pipelined XADD.
    private func enqueue(_ ids: [UUID], message: UUID, tenant: UUID) async throws {
        guard !ids.isEmpty else { return }
        var entries: [[(String, [UInt8])]] = []
        var start = 0
        while start < ids.count {
            let slice = Array(ids[start..<min(start + chunkSize, ids.count)])
            entries.append(DeliveryChunk(tenantId: tenant, messageId: message, deliveryIds: slice).fields)
            start += chunkSize
        }
        try await redis.xaddBatch(deliveries.rawValue, entries: entries)
    }

    private func finish(_ message: UUID) async throws {
        try await postgres.execute(
            """
            UPDATE messages SET status = 'fanned_out', updated_at = now(),
                audience_size = (SELECT count(*) FROM deliveries WHERE message_id = $1::uuid)
            WHERE id = $1::uuid
            """, [message])
        logger.info("message fanned out", metadata: ["message.id": message.lowercasedText])
    }

    private func fail(_ message: UUID, code: String, _ text: String) async throws {
        try await postgres.execute(
            """
            UPDATE messages SET status = 'failed', error_code = $2, error_message = $3, updated_at = now() WHERE id = $1::uuid
            """, [message, code, text])
    }

    /// $1 tenant, $2 ids/topic, $3 environment, $4/$5 last key, $6 limit, $7 message.
    ///
    /// A row already there (a resumed page) is looked up by (message_id, device_token) only when
    /// the insert skipped it (`coalesce` evaluates the subquery lazily). A plain LEFT JOIN on
    /// `deliveries` let the planner, with stale statistics mid-fan-out, read every delivery of
    /// the message for every page (O(audience) per page).
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
                \(source)
                  AND d.active AND ($3::text IS NULL OR d.environment = $3::text)
                  AND ($4::text IS NULL OR (d.subscriber_id, d.token) > ($4::text, $5::text))
                ORDER BY d.subscriber_id, d.token LIMIT $6
            ), inserted AS (
                INSERT INTO deliveries (id, tenant_id, message_id, device_token, subscriber_id, environment)
                SELECT gen_random_uuid(), $1::uuid, $7::uuid, token, subscriber_id, environment FROM page
                ON CONFLICT (message_id, device_token) DO NOTHING
                RETURNING id, device_token
            )
            SELECT p.subscriber_id, p.token,
                coalesce(i.id, (SELECT e.id FROM deliveries e WHERE e.message_id = $7::uuid AND e.device_token = p.token)) AS id
            FROM page p
            LEFT JOIN inserted i ON i.device_token = p.token
            ORDER BY p.subscriber_id, p.token
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
