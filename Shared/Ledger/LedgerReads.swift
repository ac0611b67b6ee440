import BuzzKitContracts

/// Read fragments over the ledger's tables that more than one place needs, so how pending
/// deliveries are kept (`delivery_chunks`) is known here alone: the gateway's message and delivery
/// routes run them. Every fragment yields the columns of a `deliveries` row.
public enum LedgerReads {
    /// A pending device's status: `queued` until a replica claims its chunk, `sending` after.
    static let pendingStatus = """
        CASE WHEN k.sending_by IS NULL THEN '\(DeliveryStatus.queued.rawValue)' ELSE '\(DeliveryStatus.sending.rawValue)' END
        """

    /// A message's deliveries, recorded and pending: `deliveries` rows (each written once, with its
    /// outcome) and the devices of the chunks still to send, with the columns `id, message_id,
    /// subscriber_id, device_token, environment, status, attempt_count, apns_id, last_status,
    /// last_reason, error_code, sent_at, created_at, updated_at, suppressed_reason`. `$1` the message, `$2` its
    /// tenant. A message's own chunks come by `delivery_chunks_message`; the few direct batches
    /// (several messages each) by `delivery_chunks_direct`.
    public static let deliveriesSQL = """
        SELECT id, message_id, subscriber_id, device_token, environment, status, attempt_count, apns_id, last_status,
               last_reason, error_code, sent_at, created_at, updated_at, suppressed_reason
        FROM deliveries
        WHERE message_id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid")) AND tenant_id = $2::uuid
        UNION ALL
        SELECT bk_delivery_id(u.m, u.t), u.m, u.s, u.t, u.e, \(pendingStatus), 0, bk_delivery_id(u.m, u.t),
               NULL::int, NULL::text, NULL::text, NULL::timestamptz, k.created_at, coalesce(k.claimed_at, k.created_at),
               NULL::text
        FROM delivery_chunks k
        CROSS JOIN LATERAL unnest(k.message_ids, k.tokens, k.subscriber_ids, k.environments) AS u(m, t, s, e)
        WHERE (k.message_id = $1::uuid OR (k.message_id IS NULL AND k.tenant_id = $2::uuid)) AND u.m = $1::uuid
        """

    /// One pending delivery (a device of a chunk not recorded yet), by its id (`bk_delivery_id` of
    /// message and token), with the columns of `deliveriesSQL`. `$1` the delivery, `$2` its tenant.
    public static let pendingDeliverySQL = """
        SELECT * FROM (
            SELECT bk_delivery_id(u.m, u.t) AS id, u.m AS message_id, u.s AS subscriber_id, u.t AS device_token,
                   u.e AS environment, \(pendingStatus) AS status, 0 AS attempt_count, bk_delivery_id(u.m, u.t) AS apns_id,
                   NULL::int AS last_status, NULL::text AS last_reason, NULL::text AS error_code,
                   NULL::timestamptz AS sent_at, k.created_at, coalesce(k.claimed_at, k.created_at) AS updated_at,
                   NULL::text AS suppressed_reason
            FROM delivery_chunks k
            CROSS JOIN LATERAL unnest(k.message_ids, k.tokens, k.subscriber_ids, k.environments) AS u(m, t, s, e)
            WHERE k.tenant_id = $2::uuid
        ) d WHERE id = $1::uuid LIMIT 1
        """

    /// A message's delivery counts by status as a JSON object, recorded and pending (see
    /// `deliveriesSQL`), for the message whose id and `message_time` are the SQL expressions
    /// `message` and `messageTime` (its week: the deliveries are read from that partition alone).
    public static func countsSQL(message: String, messageTime: String) -> String {
        """
        (SELECT coalesce(jsonb_object_agg(c.status, c.n), '{}'::jsonb) FROM (
            SELECT status, sum(n)::bigint AS n FROM (
                SELECT d.status, count(*) AS n FROM deliveries d
                WHERE d.message_id = \(message) AND d.message_time = \(messageTime) GROUP BY d.status
                UNION ALL
                SELECT \(pendingStatus), sum(cardinality(k.tokens))
                FROM delivery_chunks k WHERE k.message_id = \(message) GROUP BY 1
                UNION ALL
                SELECT \(pendingStatus), count(*)
                FROM delivery_chunks k CROSS JOIN LATERAL unnest(k.message_ids) AS u(id)
                WHERE k.message_id IS NULL AND u.id = \(message) GROUP BY 1
            ) parts GROUP BY status) c)
        """
    }
}
