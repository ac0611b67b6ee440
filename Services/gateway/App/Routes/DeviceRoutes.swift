import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// APNs device tokens of a subscriber. `PUT` registers or re-registers a token (it moves to this
/// subscriber if another one had it, becomes active again and forgets an earlier APNs
/// rejection; the subscriber is created when missing, e.g. an anonymous installation). Client
/// (SDK) keys may call these routes.
enum DeviceRoutes {
    static let permissions = ["unknown", "authorized", "denied", "provisional", "ephemeral"]

    static let device = Schema.object([
        "token": Schema.string(FieldRules.deviceTokenRule, "APNs device token, lowercase hex"),
        "subscriberId": Schema.string(FieldRules.identifierRule),
        "environment": Schema.string(enumeration: ["sandbox", "production"]),
        "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule)),
        "appVersion": Schema.nullable(Schema.string(FieldRules.appVersionRule)),
        "locale": Schema.nullable(Schema.string(FieldRules.localeRule)), "timezone": Schema.nullable(Schema.timezone),
        "permission": Schema.string(enumeration: permissions),
        "active": Schema.boolean, "registeredAt": Schema.timestamp, "updatedAt": Schema.timestamp,
        "lastRejectedAt": Schema.nullable(Schema.timestamp),
        "lastRejectionReason": Schema.nullable(Schema.string("APNs reason, e.g. Unregistered or BadDeviceToken"))
    ])

    static let tokenPath: [String: TextRule] = ["id": FieldRules.identifierRule, "token": FieldRules.deviceTokenRule]

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/subscribers/{id}/devices", id: "listDevices",
                "List a subscriber's devices with whether each is active and when APNs last rejected it",
                access: .tenant(.subscribersRead, clientKeys: false), path: SubscriberRoutes.idPath,
                response: device, paginated: true,
                errors: [.notFound], handler: { g, c in try await g.listDevices(c) }),
            GatewayRoute(
                "PUT", "/v1/subscribers/{id}/devices/{token}", id: "registerDevice",
                "Register or update an APNs device token for a subscriber (201 when new)",
                access: .tenant(.subscribersWrite, clientKeys: true), path: tokenPath,
                body: Schema.object(
                    [
                        "environment": Schema.string(enumeration: ["sandbox", "production"]),
                        "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule)),
                        "appVersion": Schema.nullable(Schema.string(FieldRules.appVersionRule)),
                        "locale": Schema.nullable(Schema.string(FieldRules.localeRule)),
                        "timezone": Schema.nullable(Schema.timezone),
                        "permission": Schema.nullable(Schema.string(enumeration: permissions))
                    ], required: ["environment"]),
                response: device, handler: { g, c in try await g.registerDevice(c) }),
            GatewayRoute(
                "DELETE", "/v1/subscribers/{id}/devices/{token}", id: "deleteDevice",
                "Remove a device token from a subscriber (idempotent)",
                access: .tenant(.subscribersWrite, clientKeys: true), path: tokenPath,
                response: Schema.object(["token": Schema.string(), "deleted": Schema.boolean]),
                handler: { g, c in try await g.deleteDevice(c) })
        ]
    }

    static let columns = """
        token, subscriber_id, environment, bundle_id, app_version, locale, timezone, permission, active,
        \(isoColumn("registered_at")), \(isoColumn("updated_at")), \(isoColumn("invalidated_at")), invalid_reason
        """

    static func representation(_ row: PostgresRow) throws -> [String: JSONValue] {
        [
            "token": try row.text("token"), "subscriberId": try row.text("subscriber_id"),
            "environment": try row.text("environment"), "bundleId": try row.text("bundle_id"),
            "appVersion": try row.text("app_version"), "locale": try row.text("locale"),
            "timezone": try row.text("timezone"), "permission": try row.text("permission"),
            "active": try row.bool("active"), "registeredAt": try row.text("registered_at"),
            "updatedAt": try row.text("updated_at"), "lastRejectedAt": try row.text("invalidated_at"),
            "lastRejectionReason": try row.text("invalid_reason")
        ]
    }

    /// `device.unregistered` (source `api`, reason `deleted`) for the active devices among `rows`
    /// (columns tenant_id, token, subscriber_id, environment, active), through the webhooks seam.
    static func unregisteredEvents(from rows: String) -> String {
        WebhookOutbox.insertSQL(
            WebhookEventSource(
                from: "\(rows) bk_d", tenantId: "bk_d.tenant_id", type: WebhookEventSource.literal(.deviceUnregistered),
                eventId:
                    "bk_webhook_event_id('device.unregistered', bk_d.tenant_id || ':' || bk_d.token || ':' || now())",
                occurredAt: "now()",
                data: WebhookEventData.deviceUnregistered(
                    token: "bk_d.token", subscriberId: "bk_d.subscriber_id", environment: "bk_d.environment",
                    source: "'api'", reason: "'deleted'", at: "now()"),
                filter: "bk_d.active"))
    }

    static func token(_ context: RequestContext) throws(APIError) -> String {
        try Gateway.pathParameter(context, "token", rule: FieldRules.deviceTokenRule, problem: FieldRules.deviceToken)
            .lowercased()
    }
}

extension Gateway {
    func registerDevice(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var issues: [ValidationIssue] = []
        var subscriber = ""
        var token = ""
        do { subscriber = try SubscriberRoutes.subscriberID(context) } catch { issues += Self.issues(of: error) }
        do { token = try DeviceRoutes.token(context) } catch { issues += Self.issues(of: error) }
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["environment", "bundleId", "appVersion", "locale", "timezone", "permission"])
        let environment = v.oneOf("environment", ["sandbox", "production"], required: true)
        let bundle = v.string("bundleId", rule: FieldRules.bundleIDRule)
        let version = v.string("appVersion", rule: FieldRules.appVersionRule)
        let locale = v.string("locale", rule: FieldRules.localeRule)
        let timezone = v.string("timezone", rule: FieldRules.timezoneRule)
        let permission = v.oneOf("permission", DeviceRoutes.permissions)
        try Validator.throwIfAny(issues + v.issues)
        try await authorizeInstallation(context, subscriber: subscriber)
        let row = try await postgres.withTransaction { tx -> PostgresRow in
            try await tx.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING",
                [tenant, subscriber])
            let rows = try await tx.query(
                """
                INSERT INTO devices AS d (tenant_id, token, subscriber_id, environment, bundle_id, app_version, locale,
                                          timezone, permission)
                VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, coalesce($9, 'unknown'))
                ON CONFLICT (tenant_id, token) DO UPDATE SET
                    subscriber_id = EXCLUDED.subscriber_id, environment = EXCLUDED.environment,
                    bundle_id = EXCLUDED.bundle_id, app_version = EXCLUDED.app_version, locale = EXCLUDED.locale,
                    timezone = EXCLUDED.timezone, permission = coalesce($9, d.permission), active = true,
                    invalidated_at = NULL, invalid_reason = NULL, updated_at = now()
                RETURNING \(DeviceRoutes.columns), (xmax = 0) AS inserted
                """, [tenant, token, subscriber, environment, bundle, version, locale, timezone, permission])
            guard let row = rows.first else { throw APIError.internalError }
            return row
        }
        let inserted = try row.decode(Bool.self, named: "inserted")
        return .json(.object(try DeviceRoutes.representation(row)), status: inserted ? 201 : 200)
    }

    func deleteDevice(_ context: RequestContext) async throws -> Response {
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let token = try DeviceRoutes.token(context)
        try await authorizeInstallation(context, subscriber: subscriber)
        // The device and its device.unregistered event (when an endpoint wants it) in one statement.
        let rows = try await postgres.query(
            """
            WITH d AS (
                DELETE FROM devices WHERE tenant_id = $1::uuid AND token = $2 AND subscriber_id = $3
                RETURNING tenant_id, token, subscriber_id, environment, active),
            webhook_events AS (\(DeviceRoutes.unregisteredEvents(from: "d"))
            )
            SELECT count(*) FROM d
            """, [try context.tenant, token, subscriber])
        let deleted = try rows.first?.decode(Int.self, at: 0) ?? 0
        return .json(["token": .string(token), "deleted": .bool(deleted > 0)])
    }

    func listDevices(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let subscriber = try SubscriberRoutes.subscriberID(context)
        let page = try Page(context.request)
        let exists = try await postgres.query(
            "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2", [tenant, subscriber])
        guard !exists.isEmpty else { throw APIError.notFound("subscriber") }
        let rows = try await postgres.query(
            """
            SELECT \(DeviceRoutes.columns) FROM devices
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND ($3::text IS NULL OR token > $3)
            ORDER BY token LIMIT $4
            """, [tenant, subscriber, page.after, page.limit + 1])
        return page.response(try rows.map(DeviceRoutes.representation)) { $0["token"]?.stringValue ?? "" }
    }

    /// With a client key: `{id}` must be one of its installation's identities (403
    /// forbidden_installation). Server keys may act for any subscriber.
    func authorizeInstallation(_ context: RequestContext, subscriber: String) async throws {
        guard context.key?.kind == .client else { return }
        guard let installation = context.installation else { throw InstallationAuthenticator.required }
        _ = try await installations.authorize(installation, identity: subscriber)
    }

    /// The field issues inside a `validation_failed` error (to merge several checks into one answer).
    static func issues(of error: APIError) -> [ValidationIssue] {
        guard error.code == .validationFailed, let details = error.details?.arrayValue else {
            return [ValidationIssue(path: "", message: error.message)]
        }
        return details.map {
            ValidationIssue(path: $0["path"]?.stringValue ?? "", message: $0["message"]?.stringValue ?? "")
        }
    }
}
