import BuzzKitAudience
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// Saved segments (a named expression of the audience language, validated and compiled when
/// saved) and audience previews. Counts and member lists are resolved in Postgres with the SQL of
/// `AudienceQuery`, never by loading subscribers into memory.
enum SegmentRoutes {
    /// Subscriber ids returned by a preview.
    static let sampleSize = 10

    static let segment = Schema.object([
        "key": Schema.string(FieldRules.keyRule), "name": Schema.string(FieldRules.nameRule), "where": Schema.string(),
        "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])
    /// `where`: an expression of the audience language, parsed when saved or sent.
    static let whereRule = TextRule.length(1, AudienceLimits.default.maxLength)
    static let whereSchema = Schema.custom(
        format: "buzzkit-audience-expression",
        """
        An expression of the audience language (the README's grammar), 1 to \(AudienceLimits.default.maxLength) \
        characters; one that does not parse or breaks a limit is 422 validation_failed with its line and column
        """, example: #"plan == "pro" and did("app.opened", within: "7d")"#)
    static let keyPath = TopicRoutes.keyPath

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/segments", id: "listSegments", "List saved segments in key order",
                access: .tenant(.subscribersRead, clientKeys: false), response: segment, paginated: true,
                handler: { g, c in try await g.listSegments(c) }),
            GatewayRoute(
                "PUT", "/v1/segments/{key}", id: "upsertSegment",
                "Create or replace a saved segment (201 when created); the expression is validated at save time",
                access: .tenant(.subscribersWrite, clientKeys: false), path: keyPath,
                body: Schema.object(
                    ["name": Schema.string(FieldRules.nameRule), "where": whereSchema],
                    required: ["name", "where"]),
                response: segment, errors: [.validationFailed], handler: { g, c in try await g.upsertSegment(c) }),
            GatewayRoute(
                "GET", "/v1/segments/{key}", id: "getSegment", "Read a saved segment",
                access: .tenant(.subscribersRead, clientKeys: false), path: keyPath, response: segment,
                errors: [.notFound], handler: { g, c in try await g.getSegment(c) }),
            GatewayRoute(
                "DELETE", "/v1/segments/{key}", id: "deleteSegment", "Delete a saved segment (idempotent)",
                access: .tenant(.subscribersWrite, clientKeys: false), path: keyPath,
                response: Schema.object(["key": Schema.string(FieldRules.keyRule), "deleted": Schema.boolean]),
                handler: { g, c in try await g.deleteSegment(c) }),
            GatewayRoute(
                "GET", "/v1/segments/{key}/count", id: "countSegment", "The number of subscribers in a segment now",
                access: .tenant(.subscribersRead, clientKeys: false), path: keyPath,
                response: Schema.object(["key": Schema.string(FieldRules.keyRule), "count": Schema.integer]),
                errors: [.notFound], handler: { g, c in try await g.countSegment(c) }),
            GatewayRoute(
                "GET", "/v1/segments/{key}/subscribers", id: "listSegmentSubscribers",
                "The subscribers in a segment now, in id order",
                access: .tenant(.subscribersRead, clientKeys: false), path: keyPath,
                response: Schema.object(["subscriberId": Schema.string(FieldRules.identifierRule)]), paginated: true,
                errors: [.notFound], handler: { g, c in try await g.listSegmentSubscribers(c) }),
            GatewayRoute(
                "POST", "/v1/audience/preview", id: "previewAudience",
                "Count an expression's audience and return a sample of subscriber ids, sending nothing",
                access: .tenant(.subscribersRead, clientKeys: false),
                body: Schema.object(["where": whereSchema], required: ["where"]),
                response: Schema.object(["count": Schema.integer, "sample": Schema.array(Schema.string())]),
                errors: [.validationFailed], handler: { g, c in try await g.previewAudience(c) })
        ]
    }

    static func key(_ context: RequestContext) throws(APIError) -> String {
        try Gateway.pathParameter(context, "key", rule: FieldRules.keyRule)
    }

    /// Parses `where`; a syntax or limit problem is 422 `validation_failed` with line and column.
    static func expression(_ text: String) throws(APIError) -> AudienceExpression {
        do {
            return try AudienceExpression.parse(text)
        } catch {
            throw error.apiError(field: "where")
        }
    }

    /// Reads `where` from a validated body (required string).
    static func whereText(_ v: inout Validator) -> String? {
        v.string("where", required: true, rule: whereRule)
    }
}

extension Gateway {
    func upsertSegment(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let key = try SegmentRoutes.key(context)
        var v = Validator(try context.request.jsonBody(), allowed: ["name", "where"])
        let name = v.string("name", required: true, rule: FieldRules.nameRule)
        let text = SegmentRoutes.whereText(&v)
        try v.check()
        guard let name, let text else { throw APIError.internalError }
        // Compiling never fails once parsed; doing it here proves the stored text is usable.
        _ = AudienceQuery.count(try SegmentRoutes.expression(text), tenantId: tenant, now: Date())
        let rows = try await postgres.query(
            """
            INSERT INTO segments AS s (tenant_id, key, name, expression) VALUES ($1::uuid, $2, $3, $4)
            ON CONFLICT (tenant_id, key) DO UPDATE SET name = EXCLUDED.name, expression = EXCLUDED.expression,
                updated_at = now()
            RETURNING key, name, expression, \(isoColumn("created_at")), \(isoColumn("updated_at")), (xmax = 0) AS inserted
            """, [tenant, key, name, text])
        guard let row = rows.first else { throw APIError.internalError }
        return .json(try segmentJSON(row), status: try row.decode(Bool.self, named: "inserted") ? 201 : 200)
    }

    func listSegments(_ context: RequestContext) async throws -> Response {
        let page = try Page(context.request)
        let rows = try await postgres.query(
            """
            SELECT key, name, expression, \(isoColumn("created_at")), \(isoColumn("updated_at"))
            FROM segments WHERE tenant_id = $1::uuid AND ($2::text IS NULL OR key > $2) ORDER BY key LIMIT $3
            """, [try context.tenant, page.after, page.limit + 1])
        let items = try rows.map { row -> [String: JSONValue] in
            guard case .object(let object) = try segmentJSON(row) else { throw APIError.internalError }
            return object
        }
        return page.response(items) { $0["key"]?.stringValue ?? "" }
    }

    func getSegment(_ context: RequestContext) async throws -> Response {
        .json(try segmentJSON(try await segmentRow(context)))
    }

    func deleteSegment(_ context: RequestContext) async throws -> Response {
        let key = try SegmentRoutes.key(context)
        let deleted = try await postgres.execute(
            "DELETE FROM segments WHERE tenant_id = $1::uuid AND key = $2",
            [try context.tenant, key])
        return .json(["key": .string(key), "deleted": .bool(deleted > 0)])
    }

    func countSegment(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let row = try await segmentRow(context)
        let expression = try SegmentRoutes.expression(try row.decode(String.self, named: "expression"))
        let count = try await audienceCount(expression, tenant: tenant)
        return .json(["key": try row.text("key"), "count": .int(count)])
    }

    func listSegmentSubscribers(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let page = try Page(context.request)
        let row = try await segmentRow(context)
        let expression = try SegmentRoutes.expression(try row.decode(String.self, named: "expression"))
        let query = AudienceQuery.page(
            expression, tenantId: tenant, after: page.after, limit: page.limit + 1, now: Date())
        let rows = try await audienceRows(query)
        let items = try rows.map { row -> [String: JSONValue] in
            ["subscriberId": .string(try row.decode(String.self, at: 0))]
        }
        return page.response(items) { $0["subscriberId"]?.stringValue ?? "" }
    }

    func previewAudience(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var v = Validator(try context.request.jsonBody(), allowed: ["where"])
        let text = SegmentRoutes.whereText(&v)
        try v.check()
        guard let text else { throw APIError.internalError }
        let expression = try SegmentRoutes.expression(text)
        let now = Date()
        let count = try await audienceCount(expression, tenant: tenant, now: now)
        let query = AudienceQuery.page(
            expression, tenantId: tenant, after: nil, limit: SegmentRoutes.sampleSize, now: now)
        let sample = try await audienceRows(query).map { JSONValue.string(try $0.decode(String.self, at: 0)) }
        return .json(["count": .int(count), "sample": .array(sample)])
    }

    private func segmentRow(_ context: RequestContext) async throws -> PostgresRow {
        let rows = try await postgres.query(
            """
            SELECT key, name, expression, \(isoColumn("created_at")), \(isoColumn("updated_at"))
            FROM segments WHERE tenant_id = $1::uuid AND key = $2
            """, [try context.tenant, try SegmentRoutes.key(context)])
        guard let row = rows.first else { throw APIError.notFound("segment") }
        return row
    }

    private func segmentJSON(_ row: PostgresRow) throws -> JSONValue {
        [
            "key": try row.text("key"), "name": try row.text("name"), "where": try row.text("expression"),
            "createdAt": try row.text("created_at"), "updatedAt": try row.text("updated_at")
        ]
    }

    private func audienceCount(_ expression: AudienceExpression, tenant: UUID, now: Date = Date()) async throws -> Int64
    {
        let query = AudienceQuery.count(expression, tenantId: tenant, now: now)
        guard let row = try await audienceRows(query).first else { throw APIError.internalError }
        return try row.decode(Int64.self, at: 0)
    }

    /// Runs an audience statement in a transaction with the planner settings it was measured with.
    private func audienceRows(_ query: AudienceSQL) async throws -> PostgresRows {
        try await postgres.withTransaction { tx in
            try await tx.execute(AudienceQuery.settings)
            return try await tx.query(query.sql, query.parameters)
        }
    }
}
