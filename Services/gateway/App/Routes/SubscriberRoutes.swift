import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Subscribers by the tenant's own ids: `PUT` upserts (attributes are merged key by key, a null
/// value removes a key; `timezone` and `locale` are set when present, null clears them), `GET`,
/// `DELETE` (idempotent; erases the person everywhere: `Eraser`, docs/data-lifecycle.md) and the list.
/// `GET` and `PUT` by id are batched across concurrent requests (`SubscriberBatches`).
enum SubscriberRoutes {
    static let subscriber = Schema.object([
        "id": Schema.string(FieldRules.identifierRule), "attributes": Schema.anyObject,
        "timezone": Schema.nullable(Schema.timezone), "locale": Schema.nullable(Schema.string(FieldRules.localeRule)),
        "anonymous": Schema.boolean, "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])

    /// `{id}`: the tenant's own subscriber id.
    static let idPath: [String: TextRule] = ["id": FieldRules.identifierRule]

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/subscribers", id: "listSubscribers",
                "List subscribers in id order (search with ?prefix=: the ids starting with it)",
                access: .tenant(.subscribersRead, clientKeys: false),
                query: [
                    QueryParameter(
                        "prefix", "Only subscribers whose id starts with this text (no control characters)",
                        schema: [
                            "anyOf": [
                                ["type": "string", "maxLength": 0],
                                Schema.string(FieldRules.identifierRule)
                            ]
                        ])
                ],
                response: subscriber, paginated: true,
                handler: { g, c in try await g.listSubscribers(c) }),
            GatewayRoute(
                "PUT", "/v1/subscribers/{id}", id: "upsertSubscriber",
                "Create or update a subscriber by your own id (201 when created)",
                access: .tenant(.subscribersWrite, clientKeys: false), path: idPath,
                body: Schema.object([
                    "attributes": Schema.nullable(
                        Schema.object(
                            [:], additional: true,
                            description: "Merged into the stored attributes; null removes a key")),
                    "timezone": Schema.nullable(Schema.timezone),
                    "locale": Schema.nullable(Schema.string(FieldRules.localeRule, "BCP 47 tag, e.g. en-US"))
                ]), bodyOptional: true,
                response: subscriber, handler: { g, c in try await g.upsertSubscriber(c) },
                deferred: { g, c, done in g.upsertSubscriber(c, done) }),
            GatewayRoute(
                "GET", "/v1/subscribers/{id}", id: "getSubscriber", "Read a subscriber",
                access: .tenant(.subscribersRead, clientKeys: false), path: idPath, response: subscriber,
                errors: [.notFound],
                handler: { g, c in try await g.getSubscriber(c) },
                deferred: { g, c, done in g.getSubscriber(c, done) }),
            GatewayRoute(
                "DELETE", "/v1/subscribers/{id}", id: "deleteSubscriber",
                """
                Erase a subscriber everywhere (idempotent): devices, aliases, installations, topic subscriptions, \
                Live Activities and push-to-start tokens, events, receipts, workflow runs (cancelled first), digests; \
                in the ledger their deliveries, stored requests and webhook events are kept without their id and \
                device tokens, so counts stay. 200 when done within the request's time; 202 when it goes on in the \
                background (poll GET /v1/erasures/{id}). Again for an erased id: the latest erasure, deleted false
                """,
                access: .tenant(.subscribersWrite, clientKeys: false), path: idPath,
                response: ErasureRoutes.deletion, otherStatuses: [202],
                handler: { g, c in try await g.deleteSubscriber(c) }),
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/topics", id: "listSubscriberTopics",
                "The topics a subscriber is subscribed to, in key order",
                access: .tenant(.subscribersRead, clientKeys: false), path: idPath,
                response: Schema.object([
                    "key": Schema.string(FieldRules.keyRule),
                    "name": Schema.nullable(Schema.string(FieldRules.nameRule)),
                    "subscribedAt": Schema.timestamp
                ]),
                paginated: true, errors: [.notFound], handler: { g, c in try await g.listSubscriberTopics(c) })
        ]
    }

    static let columns = """
        id, attributes, timezone, locale, anonymous, \(isoColumn("created_at")), \(isoColumn("updated_at"))
        """

    /// A subscriber row as a JSON object, for lists: the very document `GET`/`PUT` answer
    /// (`encodedRepresentation`), parsed back, so the two can never disagree on a field.
    static func representation(_ row: PostgresRow) throws -> [String: JSONValue] {
        guard case .object(let object) = try JSONValue.parse(encodedRepresentation(row)) else {
            throw APIError.internalError
        }
        return object
    }

    static func subscriberID(_ context: RequestContext, _ name: String = "id") throws(APIError) -> String {
        try Gateway.pathParameter(context, name, rule: FieldRules.identifierRule)
    }
}

extension Gateway {
    func upsertSubscriber(_ context: RequestContext) async throws -> Response {
        let written = try await subscriberBatches.put(try Self.subscriberPatch(context))
        return Self.upserted(written)
    }

    /// The same, answering through `done` (the request joins a write batch with no task of its own).
    func upsertSubscriber(_ context: RequestContext, _ done: @escaping @Sendable (Result<Response, any Error>) -> Void)
    {
        do {
            let patch = try Self.subscriberPatch(context)
            subscriberBatches.writes.submit(key: patch.key, patch) { result in
                done(result.map(Self.upserted))
            }
        } catch {
            done(.failure(error))
        }
    }

    /// The validated `PUT` body.
    static func subscriberPatch(_ context: RequestContext) throws -> SubscriberBatches.Patch {
        let tenant = try context.tenant
        let id = try SubscriberRoutes.subscriberID(context)
        let body = try context.request.jsonBodyIfPresent()
        var v = Validator(body, allowed: ["attributes", "timezone", "locale"], requireBody: false)
        let attributes = v.object("attributes")
        let timezone = v.string("timezone", rule: FieldRules.timezoneRule)
        let locale = v.string("locale", rule: FieldRules.localeRule)
        try v.check()
        return SubscriberBatches.Patch(
            key: .init(tenant: tenant, id: id), attributes: attributes, timezone: timezone,
            locale: locale, hasTimezone: v.has("timezone"), hasLocale: v.has("locale"))
    }

    static func upserted(_ written: SubscriberBatches.Written) -> Response {
        .json(encodedData: written.json, status: written.inserted ? 201 : 200)
    }

    func getSubscriber(_ context: RequestContext) async throws -> Response {
        let id = try SubscriberRoutes.subscriberID(context)
        return try Self.subscriberFound(try await subscriberBatches.get(.init(tenant: try context.tenant, id: id)))
            .get()
    }

    /// The same, answering through `done` (the request joins a read batch with no task of its own).
    func getSubscriber(_ context: RequestContext, _ done: @escaping @Sendable (Result<Response, any Error>) -> Void) {
        do {
            let key = SubscriberBatches.Key(tenant: try context.tenant, id: try SubscriberRoutes.subscriberID(context))
            subscriberBatches.reads.submit(key: key, key) { result in done(result.flatMap(Self.subscriberFound)) }
        } catch {
            done(.failure(error))
        }
    }

    static func subscriberFound(_ json: [UInt8]?) -> Result<Response, any Error> {
        guard let json else { return .failure(APIError.notFound("subscriber")) }
        return .success(.json(encodedData: json))
    }

    /// Erases the subscriber (`Eraser`): what fits in the request's budget now, the rest in the
    /// background (`202`). Waits for runs being cancelled as long as the budget lasts.
    func deleteSubscriber(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try SubscriberRoutes.subscriberID(context)
        let deadline = ContinuousClock.now + configuration.erasure.requestBudget
        let started = try await eraser.start(tenantId: tenant, subscriberId: id, apiKeyId: context.key?.id)
        guard var record = started.record else { throw APIError.internalError }
        if !record.completed {
            while try await eraser.advance(record.id, until: deadline, wait: true) == .waiting,
                ContinuousClock.now + .milliseconds(50) < deadline
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            record = try await eraser.read(record.id, tenantId: tenant) ?? record
        }
        return .json(
            ["id": .string(id), "deleted": .bool(started.deleted), "erasure": record.json],
            status: record.completed ? 200 : 202)
    }

    func listSubscribers(_ context: RequestContext) async throws -> Response {
        let page = try Page(context.request)
        var prefix: String?
        if let raw = context.request.query["prefix"], !raw.isEmpty {
            if let problem = FieldRules.identifierRule.problem(with: raw) {
                try Validator.throwIfAny([ValidationIssue(path: "prefix", message: problem)])
            }
            prefix = raw
        }
        // Ids are COLLATE "C" (code point order): the ids starting with the prefix are one range
        // of the primary key, from the prefix up to the prefix followed by the last code point.
        let rows = try await postgres.query(
            """
            SELECT \(SubscriberRoutes.columns) FROM subscribers
            WHERE tenant_id = $1::uuid AND ($2::text IS NULL OR id > $2)
              AND ($4::text IS NULL OR (id >= $4 AND id < $4 || chr(1114111) AND starts_with(id, $4)))
            ORDER BY id LIMIT $3
            """, [try context.tenant, page.after, page.limit + 1, prefix])
        return page.response(try rows.map(SubscriberRoutes.representation)) { $0["id"]?.stringValue ?? "" }
    }
}

extension Gateway {
    func listSubscriberTopics(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let id = try SubscriberRoutes.subscriberID(context)
        let page = try Page(context.request)
        let exists = try await postgres.query(
            "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2", [tenant, id])
        guard !exists.isEmpty else { throw APIError.notFound("subscriber") }
        let rows = try await postgres.query(
            """
            SELECT s.topic_key, t.name, \(isoColumn("s.created_at", as: "created_at")) FROM topic_subscriptions s
            JOIN topics t ON t.tenant_id = s.tenant_id AND t.key = s.topic_key
            WHERE s.tenant_id = $1::uuid AND s.subscriber_id = $2 AND ($3::text IS NULL OR s.topic_key > $3)
            ORDER BY s.topic_key LIMIT $4
            """, [tenant, id, page.after, page.limit + 1])
        let items = try rows.map { row -> [String: JSONValue] in
            ["key": try row.text("topic_key"), "name": try row.text("name"), "subscribedAt": try row.text("created_at")]
        }
        return page.response(items) { $0["key"]?.stringValue ?? "" }
    }
}
