import BuzzKitHTTPServer
import BuzzKitRetention
import BuzzKitWire
import Foundation

/// `GET /v1/retention`: how long the deployment keeps each kind of data and the oldest it still
/// holds, as the owners' last retention passes recorded it (migration 0026, `RetentionStatus`;
/// docs/data-lifecycle.md). Deployment-wide, the same for every tenant; the dashboard's Overview
/// shows it. `messages` stands for the whole ledger (messages, deliveries, stored requests: they
/// are dropped together, a week at a time).
enum RetentionRoutes {
    static let table = Schema.object(
        [
            "table": Schema.string(
                "The table a retention applies to",
                enumeration: ["events", "idempotency_records", "messages", "webhook_attempts", "workflow_runs"]),
            "retentionSeconds": ["type": "integer", "minimum": 0, "description": "The retention in force"],
            "retentionDays": ["type": "number", "minimum": 0, "description": "The same, in days"],
            "oldestKept": Schema.nullable(
                Schema.adding(
                    ["description": "The oldest data there can be (the oldest partition's start); null: none"],
                    to: Schema.timestamp)),
            "partitions": Schema.integer,
            "partitionsAhead": Schema.integer,
            "partitionsKept": Schema.adding(
                ["description": "Partitions past their time kept for what they still hold (live runs and sends)"],
                to: Schema.integer),
            "droppedLastPass": Schema.integer,
            "checkedAt": Schema.timestamp
        ],
        required: [
            "table", "retentionSeconds", "retentionDays", "oldestKept", "partitions", "partitionsAhead",
            "partitionsKept", "droppedLastPass", "checkedAt"
        ])

    static let answer = Schema.object(
        ["tables": Schema.array(table)], required: ["tables"],
        description: "One entry per table whose owner has run a retention pass")

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/retention", id: "getRetention",
                "How long the deployment keeps events, workflow runs and webhook attempts, and the oldest it holds",
                access: .tenant(.settingsRead, clientKeys: false), response: answer,
                handler: { g, c in try await g.getRetention(c) })
        ]
    }

    static func json(_ status: RetentionStatus) -> JSONValue {
        let seconds = Int(status.retention.components.seconds)
        return [
            "table": .string(status.table), "retentionSeconds": .int(Int64(seconds)),
            "retentionDays": .double(Double(seconds) / 86_400),
            "oldestKept": status.oldestKept.map { .string(EventTimestamp.format($0)) } ?? .null,
            "partitions": .int(Int64(status.partitions)), "partitionsAhead": .int(Int64(status.partitionsAhead)),
            "partitionsKept": .int(Int64(status.partitionsKept)),
            "droppedLastPass": .int(Int64(status.droppedLastPass)),
            "checkedAt": .string(EventTimestamp.format(status.checkedAt))
        ]
    }
}

extension Gateway {
    func getRetention(_ context: RequestContext) async throws -> Response {
        _ = try context.tenant
        let statuses = try await RetentionStatus.all(on: postgres)
        return .json(["tables": .array(statuses.map(RetentionRoutes.json))])
    }
}
