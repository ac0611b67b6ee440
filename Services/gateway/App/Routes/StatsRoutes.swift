import BuzzKitContracts
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Aggregates for an overview (the dashboard's first page), computed in Postgres at request time.
///
/// - `GET /v1/stats/messages?window=24h|7d`: the messages created in the window, their deliveries
///   by status, the funnel sent → delivered → opened (all three in recipients: per message, each
///   subscriber with a `sent` delivery once however many devices, then the receipts its devices
///   reported, summed over the window's messages), sends per hour
///   (24 h) or per day (7 d), and the failed, expired and invalid-token deliveries by reason.
///   Read through `messages_tenant_recent` and `deliveries_message_id`: a window's deliveries are
///   scanned once, no index is added to the ledger.
/// - `GET /v1/stats/events`: events per hour over the last 24 hours (by `occurred_at`, UTC hours)
///   and per name, reserved (`$…`) names marked. The names are found by a loose scan of
///   `events_name_time` (at most `maxEventNames`), then each name's window is one index range.
enum StatsRoutes {
    static let windows: [String: (interval: String, bucket: String, buckets: Int)] = [
        "24h": ("24 hours", "hour", 24), "7d": ("7 days", "day", 7)
    ]
    static let maxEventNames = 500
    static let maxFailureReasons = 20

    static let count = Schema.integer
    static let messageStats = Schema.object([
        "window": Schema.string(enumeration: ["24h", "7d"]), "since": Schema.timestamp, "until": Schema.timestamp,
        "messages": count, "deliveries": Schema.object([:], additional: true, description: "Deliveries by status"),
        "funnel": Schema.object(
            ["sent": count, "delivered": count, "opened": count],
            description:
                "Recipients (per message, distinct subscribers, summed over the messages): with a sent delivery, then reporting delivered, then opened; deliveries count devices"
        ),
        "series": Schema.array(Schema.object(["at": Schema.timestamp, "sent": count, "failed": count])),
        "failures": Schema.array(Schema.object(["reason": Schema.string(), "status": Schema.string(), "count": count]))
    ])
    static let eventStats = Schema.object([
        "since": Schema.timestamp, "until": Schema.timestamp, "total": count,
        "hours": Schema.array(Schema.object(["at": Schema.timestamp, "count": count])),
        "names": Schema.array(Schema.object(["name": Schema.string(), "count": count, "reserved": Schema.boolean]))
    ])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/stats/messages", id: "messageStats",
                "Sends over a window (24h or 7d): deliveries by status, the sent → delivered → opened funnel, sends over time, failures by reason",
                access: .tenant(.messagesRead, clientKeys: false),
                query: [
                    QueryParameter(
                        "window", "The window, ending now (empty or absent: 24h)",
                        schema: ["enum": ["", "24h", "7d"]])
                ],
                response: messageStats, handler: { g, c in try await g.messageStats(c) }),
            GatewayRoute(
                "GET", "/v1/stats/events", id: "eventStats",
                "Events per hour over the last 24 hours, and per name",
                access: .tenant(.subscribersRead, clientKeys: false), response: eventStats,
                handler: { g, c in try await g.eventStats(c) })
        ]
    }
}

extension Gateway {
    func messageStats(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let name = context.request.query["window"].flatMap { $0.isEmpty ? nil : $0 } ?? "24h"
        guard let window = StatsRoutes.windows[name] else {
            try Validator.throwIfAny([ValidationIssue(path: "window", message: "must be one of: 24h, 7d")])
            return .json(nil)
        }
        let bounds = try await postgres.query(
            """
            SELECT to_json(now() - $1::interval)#>>'{}' AS since, to_json(now())#>>'{}' AS until,
                   (SELECT count(*) FROM messages WHERE tenant_id = $2::uuid AND created_at >= now() - $1::interval) AS messages
            """, [window.interval, tenant])
        guard let bound = bounds.first else { throw APIError.internalError }
        // One pass over the window's deliveries: by status and bucket, plus the sent subscribers.
        let byBucket = try await postgres.query(
            """
            SELECT to_char(date_trunc($3, coalesce(d.sent_at, d.updated_at) AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00:00"Z"') AS at,
                   d.status, count(*) AS n
            FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.message_time = m.message_time
            WHERE m.tenant_id = $1::uuid AND m.created_at >= now() - $2::interval
            GROUP BY 1, 2
            """, [tenant, window.interval, window.bucket])
        let funnel = try await postgres.query(
            """
            WITH recent AS (SELECT id, message_time FROM messages WHERE tenant_id = $1::uuid AND created_at >= now() - $2::interval)
            SELECT (SELECT count(*) FROM (SELECT DISTINCT d.message_id, d.subscriber_id FROM recent m
                                          JOIN deliveries d ON d.message_id = m.id AND d.message_time = m.message_time WHERE d.status = 'sent') s) AS sent,
                   coalesce(sum(r.delivered), 0)::bigint AS delivered, coalesce(sum(r.opened), 0)::bigint AS opened
            FROM recent m JOIN message_receipt_counts r ON r.tenant_id = $1::uuid AND r.message_id = m.id::text
            """, [tenant, window.interval])
        let failures = try await postgres.query(
            """
            SELECT coalesce(d.last_reason, d.error_code, d.status) AS reason, d.status, count(*) AS n
            FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.message_time = m.message_time
            WHERE m.tenant_id = $1::uuid AND m.created_at >= now() - $2::interval
              AND d.status IN ('failed', 'expired', 'invalid_token')
            GROUP BY 1, 2 ORDER BY 3 DESC, 1 LIMIT $3
            """, [tenant, window.interval, StatsRoutes.maxFailureReasons])
        let labels = try await postgres.query(
            """
            SELECT to_char(b, 'YYYY-MM-DD"T"HH24:00:00"Z"') FROM generate_series(
                date_trunc($1, now() AT TIME ZONE 'UTC') - ($2::int - 1) * ('1 ' || $1)::interval,
                date_trunc($1, now() AT TIME ZONE 'UTC'), ('1 ' || $1)::interval) AS b
            """, [window.bucket, window.buckets])

        var byStatus: [String: Int64] = [:]
        var sent: [String: Int64] = [:]
        var failed: [String: Int64] = [:]
        for row in byBucket {
            let at = try row.decode(String.self, named: "at")
            let status = try row.decode(String.self, named: "status")
            let n = try row.decode(Int64.self, named: "n")
            byStatus[status, default: 0] += n
            switch DeliveryStatus(rawValue: status) {
            case .sent?: sent[at, default: 0] += n
            case .failed?, .expired?, .invalidToken?: failed[at, default: 0] += n
            case .queued?, .sending?, .suppressed?, nil: break
            }
        }
        var deliveries: [String: JSONValue] = [:]
        for status in MessageRoutes.deliveryStatuses { deliveries[status] = .int(byStatus[status] ?? 0) }
        let series: [JSONValue] = try labels.map { row in
            let at = try row.decode(String.self, at: 0)
            return ["at": .string(at), "sent": .int(sent[at] ?? 0), "failed": .int(failed[at] ?? 0)]
        }
        let funnelRow = funnel.first
        return .json([
            "window": .string(name), "since": try bound.text("since"), "until": try bound.text("until"),
            "messages": .int(try bound.decode(Int64.self, named: "messages")),
            "deliveries": .object(deliveries),
            "funnel": [
                "sent": .int(try funnelRow?.decode(Int64.self, named: "sent") ?? 0),
                "delivered": .int(try funnelRow?.decode(Int64.self, named: "delivered") ?? 0),
                "opened": .int(try funnelRow?.decode(Int64.self, named: "opened") ?? 0)
            ],
            "series": .array(series),
            "failures": .array(
                try failures.map { row in
                    [
                        "reason": try row.text("reason"), "status": try row.text("status"),
                        "count": .int(try row.decode(Int64.self, named: "n"))
                    ]
                })
        ])
    }

    func eventStats(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let rows = try await postgres.query(
            """
            WITH RECURSIVE names (name, n) AS (
                (SELECT name, 1 FROM events WHERE tenant_id = $1::uuid ORDER BY name LIMIT 1)
                UNION ALL
                SELECT (SELECT e.name FROM events e WHERE e.tenant_id = $1::uuid AND e.name > names.name ORDER BY e.name LIMIT 1),
                       names.n + 1
                FROM names WHERE names.name IS NOT NULL AND names.n < $2
            ), since AS (SELECT date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '23 hours' AS at)
            SELECT names.name, to_char(date_trunc('hour', e.occurred_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00:00"Z"') AS at,
                   count(*) AS n
            FROM names, since, LATERAL (SELECT occurred_at FROM events e WHERE e.tenant_id = $1::uuid AND e.name = names.name
                                        AND e.occurred_at >= since.at AND e.occurred_at < now() + interval '1 day') e
            WHERE names.name IS NOT NULL
            GROUP BY 1, 2
            """, [tenant, StatsRoutes.maxEventNames])
        let labels = try await postgres.query(
            """
            SELECT to_char(b, 'YYYY-MM-DD"T"HH24:00:00"Z"'), to_json(now())#>>'{}' FROM generate_series(
                date_trunc('hour', now() AT TIME ZONE 'UTC') - interval '23 hours', date_trunc('hour', now() AT TIME ZONE 'UTC'),
                interval '1 hour') AS b
            """)
        var perHour: [String: Int64] = [:]
        var perName: [String: Int64] = [:]
        var total: Int64 = 0
        for row in rows {
            let n = try row.decode(Int64.self, named: "n")
            perHour[try row.decode(String.self, named: "at"), default: 0] += n
            perName[try row.decode(String.self, named: "name"), default: 0] += n
            total += n
        }
        let hours: [JSONValue] = try labels.map { row in
            let at = try row.decode(String.self, at: 0)
            return ["at": .string(at), "count": .int(perHour[at] ?? 0)]
        }
        let names: [JSONValue] = perName.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map {
            entry in
            ["name": .string(entry.key), "count": .int(entry.value), "reserved": .bool(entry.key.hasPrefix("$"))]
        }
        return .json([
            "since": hours.first?["at"] ?? .null, "until": .string(try labels.first?.decode(String.self, at: 1) ?? ""),
            "total": .int(total), "hours": .array(hours), "names": .array(names)
        ])
    }
}
