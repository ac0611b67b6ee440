import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The producers' seam: how any code that changes something a webhook reports enqueues the
/// event, inside its OWN statement or transaction, so the event is committed with the change or
/// not at all (a process that dies after its commit loses nothing: the webhooks service finds
/// the rows in `webhook_outbox`).
///
/// An event is written once per endpoint subscribed to its type, by joining the producer's rows
/// with `webhook_subscriptions` (primary key `(tenant_id, event_type, endpoint_id)`): for a tenant
/// with no endpoint wanting the type, nothing is written and the `data` expression is never
/// evaluated; a hot producer adds a `gate` so that the join is not even run then.
///
/// Three forms:
/// - `insertSQL(_:)`: SQL to put in the producer's own statement as a CTE
///   (`WITH …, webhook_events AS (\(WebhookOutbox.insertSQL(source))) <the producer's statement>`),
///   reading the producer's rows (a table, a CTE, the `RETURNING` of another CTE).
/// - `insertBatchesSQL(_:)`: the same for a batched type (`delivery.sent`): the statement's events
///   of each endpoint go in as batches of up to `batchLimit` (one outbox row each, its `data`
///   already `{"deliveries": [...]}`, sent as one request), so a hot producer writes one row per
///   100 events instead of 100.
/// - `enqueue(on:_:)`: events built in Swift, as one statement on the caller's connection (inside
///   its transaction); batched types are batched the same way.
public enum WebhookOutbox {
    /// The INSERT into the outbox for the rows `source` describes. Usable as a CTE body or alone.
    public static func insertSQL(_ source: WebhookEventSource) -> String {
        """
        INSERT INTO webhook_outbox (endpoint_id, tenant_id, event_id, event_type, occurred_at, data)
        SELECT bk_ws.endpoint_id, bk_ws.tenant_id, \(source.eventId), bk_ws.event_type, \(source.occurredAt), \(source.data)
        FROM \(source.from)
        JOIN webhook_subscriptions bk_ws ON bk_ws.tenant_id = \(source.tenantId) AND bk_ws.event_type = \(source.type)
        \(source.whereClause)
        """
    }

    /// The INSERT for the rows `source` describes, of a batched type: per endpoint, batches of up
    /// to `batchLimit` items (ordered by event id), each one outbox row holding its items as the
    /// batch's columns (`WebhookDeliveryBatch`; no JSON is built here), whose time is its newest
    /// item's and whose id (the request's `webhook-id`) is derived from its items'
    /// (`bk_webhook_event_id`), so a producer that ran twice would derive the same. Reads the
    /// items only for rows some endpoint subscribed to. Usable as a CTE body or alone; returns the
    /// number of items of each row.
    public static func insertBatchesSQL(_ source: WebhookBatchSource) -> String {
        let item = source.item
        return """
            INSERT INTO webhook_outbox (endpoint_id, tenant_id, event_id, event_type, occurred_at, \(WebhookDeliveryBatch.columnList()))
            SELECT bk_i.endpoint_id, bk_i.tenant_id,
                   bk_webhook_event_id(bk_i.event_type, min(bk_i.event_id::text) || ':' || count(*)), bk_i.event_type,
                   max(bk_i.occurred_at), array_agg(bk_i.delivery_id), array_agg(bk_i.message_id),
                   array_agg(bk_i.subscriber_id), array_agg(bk_i.device_token), array_agg(bk_i.environment)
            FROM (
                SELECT bk_ws.endpoint_id, bk_ws.tenant_id, bk_ws.event_type, \(source.eventId) AS event_id,
                       \(source.occurredAt) AS occurred_at, \(item.deliveryId) AS delivery_id, \(item.messageId) AS message_id,
                       \(item.subscriberId) AS subscriber_id, \(item.deviceToken) AS device_token,
                       \(item.environment) AS environment,
                       (row_number() OVER (PARTITION BY bk_ws.endpoint_id, bk_ws.event_type ORDER BY \(source.eventId)) - 1)
                           / \(WebhookEventType.batchLimit) AS batch
                FROM \(source.from)
                JOIN webhook_subscriptions bk_ws ON bk_ws.tenant_id = \(source.tenantId) AND bk_ws.event_type = \(source.type)
                \(WebhookEventSource.whereClause(filter: source.filter, gate: source.gate))
                ORDER BY bk_ws.endpoint_id, bk_ws.event_type, \(source.eventId)
            ) bk_i
            GROUP BY bk_i.endpoint_id, bk_i.tenant_id, bk_i.event_type, bk_i.batch
            RETURNING cardinality(batch_delivery_ids) AS items
            """
    }

    /// Enqueues `events` on `connection` (the caller's transaction, when it has one); answers the
    /// events written (one per subscribed endpoint per event; a batched type's in batches).
    @discardableResult
    public static func enqueue(on connection: PostgresConnection, _ events: [WebhookEvent]) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        return try await connection.query(enqueueSQL, parameters(events)).first?.decode(Int.self, at: 0) ?? 0
    }

    /// `enqueue` on a pooled connection (a producer with no transaction of its own).
    @discardableResult
    public static func enqueue(on postgres: PostgresClient, _ events: [WebhookEvent]) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        return try await postgres.query(enqueueSQL, parameters(events)).first?.decode(Int.self, at: 0) ?? 0
    }

    static let enqueueSQL: String = {
        let batched = WebhookEventType.allCases.filter(\.isBatched).map { "'\($0.rawValue)'" }.joined(separator: ", ")
        let single = WebhookEventSource(
            from: "e", tenantId: "e.tenant_id", type: "e.event_type", eventId: "e.event_id",
            occurredAt: "e.occurred_at", data: "e.data", filter: "e.event_type NOT IN (\(batched))")
        // A batched event's data is one item (`WebhookEvent.data`), read back into the batch's columns.
        let batch = WebhookBatchSource(
            from: "e", tenantId: "e.tenant_id", type: "e.event_type", eventId: "e.event_id",
            occurredAt: "e.occurred_at",
            item: WebhookEventData.deliverySent(
                deliveryId: "(e.data->>'deliveryId')::uuid", messageId: "(e.data->>'messageId')::uuid",
                subscriberId: "e.data->>'subscriberId'", deviceToken: "e.data->>'deviceToken'",
                environment: "e.data->>'environment'"),
            filter: "e.event_type IN (\(batched))")
        return """
            WITH e AS MATERIALIZED (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[], $5::jsonb[])
                    AS e(tenant_id, event_type, event_id, occurred_at, data)
            ), single AS (
                \(insertSQL(single))
                RETURNING 1
            ), batches AS (
                \(insertBatchesSQL(batch))
            )
            SELECT ((SELECT count(*) FROM single) + (SELECT coalesce(sum(items), 0) FROM batches))::int
            """
    }()

    static func parameters(_ events: [WebhookEvent]) -> [any PostgresEncodable] {
        [
            events.map(\.tenantId), events.map(\.type.rawValue), events.map(\.id), events.map(\.occurredAt),
            events.map(\.data.jsonString)
        ]
    }
}

/// One event built in Swift (`WebhookOutbox.enqueue`).
public struct WebhookEvent: Sendable {
    public var tenantId: UUID
    public var type: WebhookEventType
    /// The event's id: for a non-batched type, the `webhook-id` of its message. Derive it from what
    /// the event reports (a name-based UUID) where a producer may run twice.
    public var id: UUID
    public var occurredAt: Date
    /// The body's `data` (for a batched type: one item of `data.deliveries`).
    public var data: JSONValue

    public init(tenantId: UUID, type: WebhookEventType, id: UUID = UUID(), occurredAt: Date = Date(), data: JSONValue) {
        self.tenantId = tenantId
        self.type = type
        self.id = id
        self.occurredAt = occurredAt
        self.data = data
    }
}

/// The producer's rows as SQL expressions (see `WebhookOutbox.insertSQL`). Every expression may
/// use the alias of `from`; `data` (a jsonb expression, see `WebhookEventData`) is evaluated only
/// for rows some endpoint subscribed to.
public struct WebhookEventSource: Sendable {
    /// A FROM item: `receipts r`, `unnest(...) AS u(...)`.
    public var from: String
    public var tenantId: String
    /// A text expression: a type's literal (`WebhookEventSource.literal(.deliverySent)`) or one
    /// computed per row.
    public var type: String
    /// A uuid expression, the same for a row whichever endpoint gets it (not `gen_random_uuid()`):
    /// `bk_webhook_event_id('<kind>', <text naming the event>)` derives one.
    public var eventId: String
    public var occurredAt: String
    public var data: String
    /// A condition on the producer's rows (no WHERE).
    public var filter: String?
    /// A condition that names none of the producer's rows (`subscribed(tenants:to:)`), evaluated
    /// once per statement: when it is false, Postgres reads none of the rows (a one-time filter
    /// above the join), so a hot producer whose tenants have no endpoint for the type pays one
    /// probe per statement instead of one per row. Exact: it reads the statement's own snapshot.
    public var gate: String?

    public init(
        from: String, tenantId: String, type: String, eventId: String, occurredAt: String, data: String,
        filter: String? = nil, gate: String? = nil
    ) {
        self.from = from
        self.tenantId = tenantId
        self.type = type
        self.eventId = eventId
        self.occurredAt = occurredAt
        self.data = data
        self.filter = filter
        self.gate = gate
    }

    /// A type as a SQL literal.
    public static func literal(_ type: WebhookEventType) -> String { "'\(type.rawValue)'::text" }

    /// A `gate`: some endpoint of one of `tenants` (a uuid[] expression, e.g. a parameter) is
    /// subscribed to `type` (the primary key's prefix).
    public static func subscribed(tenants: String, to type: WebhookEventType) -> String {
        """
        EXISTS (SELECT 1 FROM webhook_subscriptions bk_gate
                WHERE bk_gate.tenant_id = ANY(\(tenants)) AND bk_gate.event_type = \(literal(type)))
        """
    }

    /// `filter` and `gate` as a WHERE clause (empty without either).
    var whereClause: String { Self.whereClause(filter: filter, gate: gate) }

    static func whereClause(filter: String?, gate: String?) -> String {
        let conditions = [filter, gate].compactMap { $0 }
        return conditions.isEmpty ? "" : "WHERE " + conditions.map { "(\($0))" }.joined(separator: " AND ")
    }
}

/// A batched type's rows (`delivery.sent`) as SQL expressions, for `WebhookOutbox.insertBatchesSQL`:
/// what `WebhookEventSource` says, with the item's columns (`WebhookEventData.deliverySent`) where
/// it has `data`.
public struct WebhookBatchSource: Sendable {
    public var from: String
    public var tenantId: String
    public var type: String
    /// One item's id (the delivery's); the batch's id is derived from its items'.
    public var eventId: String
    public var occurredAt: String
    public var item: WebhookEventData.DeliveryItem
    public var filter: String?
    /// See `WebhookEventSource.gate`.
    public var gate: String?

    public init(
        from: String, tenantId: String, type: String, eventId: String, occurredAt: String,
        item: WebhookEventData.DeliveryItem, filter: String? = nil, gate: String? = nil
    ) {
        self.from = from
        self.tenantId = tenantId
        self.type = type
        self.eventId = eventId
        self.occurredAt = occurredAt
        self.item = item
        self.filter = filter
        self.gate = gate
    }
}
