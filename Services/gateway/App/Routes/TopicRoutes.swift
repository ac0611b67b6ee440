import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Topics and their subscribers. Adding subscribers takes up to 1000 ids per call, creates the
/// subscribers that do not exist yet and is idempotent.
enum TopicRoutes {
    static let maxIDsPerCall = 1000

    static let topic = Schema.object([
        "key": Schema.string(FieldRules.keyRule), "name": Schema.nullable(Schema.string(FieldRules.nameRule)),
        "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])
    static let subscription = Schema.object([
        "subscriberId": Schema.string(FieldRules.identifierRule),
        "subscribedAt": Schema.timestamp
    ])
    static let keyPath: [String: TextRule] = ["key": FieldRules.keyRule]
    static let keyAndIDPath: [String: TextRule] = ["key": FieldRules.keyRule, "id": FieldRules.identifierRule]

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "PUT", "/v1/topics/{key}", id: "upsertTopic", "Create or rename a topic (201 when created)",
                access: .tenant(.subscribersWrite, clientKeys: false), path: keyPath,
                body: Schema.object(["name": Schema.nullable(Schema.string(FieldRules.nameRule))]), bodyOptional: true,
                response: topic, handler: { g, c in try await g.upsertTopic(c) }),
            GatewayRoute(
                "POST", "/v1/topics/{key}/subscribers", id: "addTopicSubscribers",
                "Subscribe up to 1000 subscribers to a topic (idempotent; missing subscribers are created)",
                access: .tenant(.subscribersWrite, clientKeys: false), path: keyPath,
                body: Schema.object(
                    [
                        "ids": Schema.array(
                            Schema.string(FieldRules.identifierRule), minItems: 1,
                            maxItems: maxIDsPerCall)
                    ], required: ["ids"]),
                response: Schema.object([
                    "topic": Schema.string(FieldRules.keyRule), "requested": Schema.integer,
                    "added": Schema.integer
                ]),
                errors: [.notFound], handler: { g, c in try await g.addTopicSubscribers(c) }),
            GatewayRoute(
                "GET", "/v1/topics/{key}/subscribers", id: "listTopicSubscribers", "List a topic's subscribers",
                access: .tenant(.subscribersRead, clientKeys: false), path: keyPath, response: subscription,
                paginated: true, errors: [.notFound], handler: { g, c in try await g.listTopicSubscribers(c) }),
            GatewayRoute(
                "DELETE", "/v1/topics/{key}/subscribers/{id}", id: "removeTopicSubscriber",
                "Unsubscribe a subscriber from a topic (idempotent)",
                access: .tenant(.subscribersWrite, clientKeys: false), path: keyAndIDPath,
                response: Schema.object([
                    "topic": Schema.string(), "subscriberId": Schema.string(),
                    "deleted": Schema.boolean
                ]),
                handler: { g, c in try await g.removeTopicSubscriber(c) })
        ]
    }

    static func key(_ context: RequestContext) throws(APIError) -> String {
        try Gateway.pathParameter(context, "key", rule: FieldRules.keyRule)
    }
}

extension Gateway {
    func upsertTopic(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try TopicRoutes.key(context)
        var v = Validator(try context.request.jsonBodyIfPresent(), allowed: ["name"], requireBody: false)
        let name = v.string("name", rule: FieldRules.nameRule)
        try v.check()
        let rows = try await postgres.query(
            """
            INSERT INTO topics AS t (tenant_id, key, name) VALUES ($1::uuid, $2, $3)
            ON CONFLICT (tenant_id, key) DO UPDATE SET name = CASE WHEN $4 THEN EXCLUDED.name ELSE t.name END,
                updated_at = now()
            RETURNING key, name, \(isoColumn("created_at")), \(isoColumn("updated_at")), (xmax = 0) AS inserted
            """, [tenant, key, name, v.has("name")])
        guard let row = rows.first else { throw APIError.internalError }
        let json: JSONValue = [
            "key": try row.text("key"), "name": try row.text("name"),
            "createdAt": try row.text("created_at"), "updatedAt": try row.text("updated_at")
        ]
        return .json(json, status: try row.decode(Bool.self, named: "inserted") ? 201 : 200)
    }

    func addTopicSubscribers(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try TopicRoutes.key(context)
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["ids"])
        var ids: [String] = []
        if let raw = body["ids"], !raw.isNull {
            if let list = raw.arrayValue, !list.isEmpty, list.count <= TopicRoutes.maxIDsPerCall {
                for (index, item) in list.enumerated() {
                    guard let id = item.stringValue, FieldRules.identifierRule.accepts(id) else {
                        v.add("ids[\(index)]", "must be a subscriber id (1 to 256 characters, no control characters)")
                        continue
                    }
                    ids.append(id)
                }
            } else {
                v.add("ids", "must be an array of 1 to \(TopicRoutes.maxIDsPerCall) subscriber ids")
            }
        } else {
            v.add("ids", "is required")
        }
        try v.check()
        let unique = Array(Set(ids))
        let added = try await postgres.withTransaction { tx -> Int in
            let topic = try await tx.query(
                "SELECT 1 FROM topics WHERE tenant_id = $1::uuid AND key = $2", [tenant, key])
            guard !topic.isEmpty else { throw APIError.notFound("topic") }
            try await tx.execute(
                """
                INSERT INTO subscribers (tenant_id, id) SELECT $1::uuid, unnest($2::text[]) ON CONFLICT DO NOTHING
                """, [tenant, unique])
            return try await tx.execute(
                """
                INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id)
                SELECT $1::uuid, $2, unnest($3::text[]) ON CONFLICT DO NOTHING
                """, [tenant, key, unique])
        }
        return .json(["topic": .string(key), "requested": .int(Int64(unique.count)), "added": .int(Int64(added))])
    }

    func listTopicSubscribers(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try TopicRoutes.key(context)
        let page = try Page(context.request)
        let topic = try await postgres.query(
            "SELECT 1 FROM topics WHERE tenant_id = $1::uuid AND key = $2", [tenant, key])
        guard !topic.isEmpty else { throw APIError.notFound("topic") }
        let rows = try await postgres.query(
            """
            SELECT subscriber_id, \(isoColumn("created_at")) FROM topic_subscriptions
            WHERE tenant_id = $1::uuid AND topic_key = $2 AND ($3::text IS NULL OR subscriber_id > $3)
            ORDER BY subscriber_id LIMIT $4
            """, [tenant, key, page.after, page.limit + 1])
        let items = try rows.map { row -> [String: JSONValue] in
            ["subscriberId": try row.text("subscriber_id"), "subscribedAt": try row.text("created_at")]
        }
        return page.response(items) { $0["subscriberId"]?.stringValue ?? "" }
    }

    func removeTopicSubscriber(_ context: RequestContext) async throws -> Response {
        let key = try TopicRoutes.key(context)
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let deleted = try await postgres.execute(
            "DELETE FROM topic_subscriptions WHERE tenant_id = $1::uuid AND topic_key = $2 AND subscriber_id = $3",
            [try context.tenant, key, subscriber])
        return .json(["topic": .string(key), "subscriberId": .string(subscriber), "deleted": .bool(deleted > 0)])
    }
}
