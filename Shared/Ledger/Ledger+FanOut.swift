import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// A message's fan-out into chunks of devices, page by page (apns-sender's `FanOut` runs it).
extension Ledger {
    /// Where a message's fan-out stands when it (re)starts.
    public struct FanOutStart: Sendable {
        public var target: JSONValue
        public var environment: String?
        public var afterSubscriber: String?
        public var afterToken: String?
        /// The message's creation time (one `now` for an expression's `within:` windows).
        public var createdAt: Date
        /// What the fan-out counted so far (`fanout_count`).
        public var counted: Int
    }

    /// Moves a `queued` or `fanning_out` message to `fanning_out` and answers where its fan-out
    /// stands; nil when it is done, failed or unknown (nothing to do).
    public func beginFanOut(message: UUID, tenant: UUID) async throws -> FanOutStart? {
        let rows = try await postgres.query(
            """
            UPDATE messages SET status = 'fanning_out', updated_at = now()
            WHERE id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid"))
              AND tenant_id = $2::uuid AND status IN ('queued', 'fanning_out')
            RETURNING target, environment, fanout_after_subscriber, fanout_after_token, created_at, fanout_count
            """, [message, tenant])
        guard let row = rows.first else { return nil }
        return FanOutStart(
            target: try row.decode(JSONValue.self, at: 0), environment: try row.decode(String?.self, at: 1),
            afterSubscriber: try row.decode(String?.self, at: 2), afterToken: try row.decode(String?.self, at: 3),
            createdAt: try row.decode(Date.self, at: 4), counted: try row.decode(Int.self, at: 5))
    }

    /// One page: its devices, the chunks written, its last key, and whether this fan-out wrote it
    /// (false: another fan-out of the message moved the position first; this one stops).
    public struct FanOutPage: Sendable {
        public var devices: Int
        public var chunks: [UUID]
        public var lastSubscriber: String?
        public var lastToken: String?
        public var written = false
    }

    /// What one page reads and where the message must be for it to be written.
    public struct PageRequest: Sendable {
        public var target: MessageTarget
        public var tenant: UUID
        public var message: UUID
        public var environment: String?
        /// The keyset position to read after (nil: from the start).
        public var afterSubscriber: String?
        public var afterToken: String?
        public var limit: Int
        public var chunkSize: Int
        /// The subscriber to record as the last one read (an expression's page of subscriber ids,
        /// some of them without devices); nil records the page's last device.
        public var position: String?
        /// The position the message must be at (the one this fan-out read).
        public var expected: (subscriber: String?, token: String?)
        /// What the page counts for `fanout_count` (nil: its devices; an expression's page, its
        /// subscribers).
        public var read: Int?

        public init(
            target: MessageTarget, tenant: UUID, message: UUID, environment: String?, afterSubscriber: String?,
            afterToken: String?, limit: Int, chunkSize: Int, position: String?,
            expected: (subscriber: String?, token: String?), read: Int? = nil
        ) {
            self.target = target
            self.tenant = tenant
            self.message = message
            self.environment = environment
            self.afterSubscriber = afterSubscriber
            self.afterToken = afterToken
            self.limit = limit
            self.chunkSize = chunkSize
            self.position = position
            self.expected = expected
            self.read = read
        }
    }

    /// Writes one page's chunks (`push`, queued) and the message's new position in one statement
    /// (see `pageSQL`).
    public func writePage(_ page: PageRequest) async throws -> FanOutPage {
        let rows = try await postgres.query(
            Self.pageSQL(page.target),
            Self.pageParameters(
                page.target, tenant: page.tenant, message: page.message, environment: page.environment,
                afterSubscriber: page.afterSubscriber, afterToken: page.afterToken, limit: page.limit)
                + [page.chunkSize, page.position, page.expected.subscriber, page.expected.token, page.read])
        guard let row = rows.first else { return FanOutPage(devices: 0, chunks: []) }
        return FanOutPage(
            devices: try row.decode(Int.self, at: 0), chunks: try row.decode([UUID]?.self, at: 1) ?? [],
            lastSubscriber: try row.decode(String?.self, at: 2), lastToken: try row.decode(String?.self, at: 3),
            written: try row.decode(Bool.self, at: 4))
    }

    /// Ends a fan-out: the message is `fanned_out` with its audience size, then completed at once
    /// when nothing of it is pending any more (`completeIfDone`, after the commit: its last chunks
    /// may be recorded at the same moment). Answers whether it completed here.
    @discardableResult
    public func finishFanOut(message: UUID, audience: Int) async throws -> Bool {
        try await postgres.execute(
            """
            UPDATE messages SET status = 'fanned_out', updated_at = now(), audience_size = $2
            WHERE id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid")) AND status = 'fanning_out'
            """, [message, audience])
        do {
            return try await completeIfDone([message]).contains(message)
        } catch {
            // Committed: the outbox sweeper completes it (`completeStragglers`).
            logger.warning("fanned-out message not completed yet", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Ends a message `failed` with `code` (`invalid_target`, a tenant's credential problem),
    /// before any of its deliveries exists. Its `message.completed` webhook event (status
    /// `failed`, with the error) is enqueued in the same statement, once: only the statement
    /// that moves it out of `queued` / `fanning_out` writes one.
    public func failMessage(_ message: UUID, code: String, _ text: String) async throws {
        try await postgres.execute(Self.failMessageSQL, [message, code, text])
    }

    static let failMessageSQL = """
        WITH failed AS (
            UPDATE messages SET status = 'failed', error_code = $2, error_message = $3, updated_at = now()
            WHERE id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid"))
              AND status IN ('queued', 'fanning_out')
            RETURNING id, message_time, tenant_id, kind, error_code, error_message, updated_at
        ), failed_events AS (
            \(MessageCompletion.events(from: "failed c", status: .failed, at: "c.updated_at", written: nil))
        )
        SELECT count(*) FROM failed
        """

    /// $1 tenant, $2 ids/topic, $3 environment, $4/$5 last key, $6 limit, $7 message, $8 chunk
    /// size, $9 the position to record (NULL: the page's last device), $10/$11 the position the
    /// message must be at, $12 what the page counts for `fanout_count` (NULL: its devices; an
    /// expression's page, its subscribers). Answers one row: devices in the page, the chunk ids,
    /// the last subscriber and token, and whether the page was written.
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
                WHERE id = $7::uuid AND \(LedgerTime.prune("message_time", id: "$7::uuid")) AND (EXISTS (SELECT 1 FROM page) OR $9::text IS NOT NULL)
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
        case .expression: selector = [String]()  // never paged directly: see FanOut.fanOutExpression
        }
        return [tenant, selector, environment, afterSubscriber, afterToken, limit, message]
    }
}
