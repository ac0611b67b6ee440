import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// `POST/GET /v1/tenants`, `GET/PATCH /v1/tenants/{id}`: a workspace's tenants with their APNs
/// credentials and quiet hours. The .p8 key is validated, sealed with AES-256-GCM (bound to the
/// tenant id) and never returned: responses say only whether one is configured.
enum TenantRoutes {
    static let apnsFields: Set<String> = ["teamId", "keyId", "privateKey", "bundleId", "environment"]

    /// The APNs credentials, given as a whole (a change replaces them; `environment` absent keeps the current one).
    static let apnsInput = Schema.object(
        [
            "teamId": Schema.string(FieldRules.appleIDRule, "Apple team id"),
            "keyId": Schema.string(FieldRules.appleIDRule, "APNs auth key id"),
            "privateKey": Schema.custom(
                format: "buzzkit-p8-private-key",
                """
                The .p8 file's PEM text (-----BEGIN PRIVATE KEY-----...), an EC P-256 private key of at most \
                \(FieldRules.privateKeyRule.maxLength) characters; anything else is 422. Write-only
                """),
            "bundleId": Schema.string(FieldRules.bundleIDRule, "The app's bundle id (the APNs topic)"),
            "environment": Schema.nullable(
                Schema.string("Default APNs environment", enumeration: ["sandbox", "production"]))
        ], required: ["teamId", "keyId", "privateKey", "bundleId"])
    static let quietHours = Schema.object(
        [
            "start": Schema.string(FieldRules.wallClockRule, "Local wall-clock time HH:MM"),
            "end": Schema.string(FieldRules.wallClockRule, "Local wall-clock time HH:MM")
        ],
        required: ["start", "end"])
    static let idPath: [String: TextRule] = ["id": .uuid]

    static let tenant = Schema.object([
        "id": Schema.uuid, "workspaceId": Schema.uuid, "name": Schema.string(FieldRules.nameRule),
        "apns": Schema.object([
            "teamId": Schema.nullable(Schema.string(FieldRules.appleIDRule)),
            "keyId": Schema.nullable(Schema.string(FieldRules.appleIDRule)),
            "bundleId": Schema.nullable(Schema.string(FieldRules.bundleIDRule)),
            "environment": Schema.string(enumeration: ["sandbox", "production"]),
            "privateKeyConfigured": Schema.boolean
        ]),
        "quietHours": Schema.nullable(quietHours),
        "defaultTimezone": Schema.nullable(
            Schema.adding(
                ["description": "IANA zone for subscribers without one (else UTC)"],
                to: Schema.timezone)),
        "createdAt": Schema.timestamp, "updatedAt": Schema.timestamp
    ])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/tenants", id: "createTenant", "Create a tenant (one app) in the key's workspace",
                access: .workspace(.tenantsWrite),
                body: Schema.object(
                    [
                        "name": Schema.string(FieldRules.nameRule), "apns": Schema.nullable(apnsInput),
                        "quietHours": Schema.nullable(quietHours),
                        "defaultTimezone": Schema.nullable(Schema.timezone)
                    ], required: ["name"]),
                response: tenant, status: 201, handler: { g, c in try await g.createTenant(c) }),
            GatewayRoute(
                "GET", "/v1/tenants", id: "listTenants", "List the workspace's tenants",
                access: .workspace(.tenantsWrite), response: tenant, paginated: true,
                handler: { g, c in try await g.listTenants(c) }),
            GatewayRoute(
                "GET", "/v1/tenants/{id}", id: "getTenant", "Read a tenant", access: .workspace(.tenantsWrite),
                path: idPath, response: tenant, errors: [.tenantNotFound], handler: { g, c in try await g.getTenant(c) }
            ),
            GatewayRoute(
                "PATCH", "/v1/tenants/{id}", id: "updateTenant",
                "Change a tenant: name, APNs credentials (null removes them), quiet hours and default time zone (null removes one)",
                access: .workspace(.tenantsWrite), path: idPath,
                body: Schema.object([
                    "name": Schema.nullable(Schema.string(FieldRules.nameRule)),
                    "apns": Schema.nullable(apnsInput),
                    "quietHours": Schema.nullable(quietHours),
                    "defaultTimezone": Schema.nullable(Schema.timezone)
                ]),
                response: tenant, errors: [.tenantNotFound], handler: { g, c in try await g.updateTenant(c) })
        ]
    }

    static let columns = """
        id, workspace_id, name, apns_team_id, apns_key_id, (apns_private_key IS NOT NULL) AS has_key, apns_bundle_id,
        apns_environment, quiet_hours_start, quiet_hours_end, default_timezone, \(isoColumn("created_at")),
        \(isoColumn("updated_at"))
        """

    static func representation(_ row: PostgresRow) throws -> [String: JSONValue] {
        let start = try row.text("quiet_hours_start")
        let end = try row.text("quiet_hours_end")
        return [
            "id": try row.uuid("id"), "workspaceId": try row.uuid("workspace_id"), "name": try row.text("name"),
            "apns": [
                "teamId": try row.text("apns_team_id"), "keyId": try row.text("apns_key_id"),
                "bundleId": try row.text("apns_bundle_id"), "environment": try row.text("apns_environment"),
                "privateKeyConfigured": try row.bool("has_key")
            ],
            "quietHours": start.isNull ? .null : ["start": start, "end": end],
            "defaultTimezone": try row.text("default_timezone"),
            "createdAt": try row.text("created_at"), "updatedAt": try row.text("updated_at")
        ]
    }
}

/// A tenant's stored settings, merged from a create or patch body.
struct TenantSettings: Sendable {
    var name: String = ""
    var teamID: String?
    var keyID: String?
    var sealedKey: Data?
    var bundleID: String?
    var environment: String = "production"
    var quietStart: String?
    var quietEnd: String?
    var defaultTimezone: String?
}

extension Gateway {
    func createTenant(_ context: RequestContext) async throws -> Response {
        let workspace = try context.workspaceID
        let id = UUID()
        var settings = TenantSettings()
        try readTenant(context.request, into: &settings, tenantID: id, creating: true)
        let rows = try await postgres.query(
            """
            INSERT INTO tenants (id, workspace_id, name, apns_team_id, apns_key_id, apns_private_key, apns_bundle_id,
                                 apns_environment, quiet_hours_start, quiet_hours_end, default_timezone)
            VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING \(TenantRoutes.columns)
            """,
            [
                id, workspace, settings.name, settings.teamID, settings.keyID, settings.sealedKey, settings.bundleID,
                settings.environment, settings.quietStart, settings.quietEnd, settings.defaultTimezone
            ])
        guard let row = rows.first else { throw APIError.internalError }
        return .json(.object(try TenantRoutes.representation(row)), status: 201)
    }

    func listTenants(_ context: RequestContext) async throws -> Response {
        let page = try Page(context.request)
        let rows = try await postgres.query(
            """
            SELECT \(TenantRoutes.columns) FROM tenants
            WHERE workspace_id = $1::uuid AND ($2::uuid IS NULL OR id > $2::uuid) ORDER BY id LIMIT $3
            """, [try context.workspaceID, page.after.flatMap(UUID.init(uuidString:)), page.limit + 1])
        return page.response(try rows.map(TenantRoutes.representation)) { $0["id"]?.stringValue ?? "" }
    }

    func getTenant(_ context: RequestContext) async throws -> Response {
        let id = try Self.uuidParameter(context, "id", notFound: TenantResolver.notFound)
        let rows = try await postgres.query(
            "SELECT \(TenantRoutes.columns) FROM tenants WHERE id = $1::uuid AND workspace_id = $2::uuid",
            [id, try context.workspaceID])
        guard let row = rows.first else { throw TenantResolver.notFound }
        return .json(.object(try TenantRoutes.representation(row)))
    }

    func updateTenant(_ context: RequestContext) async throws -> Response {
        let id = try Self.uuidParameter(context, "id", notFound: TenantResolver.notFound)
        let workspace = try context.workspaceID
        let request = context.request
        let row = try await postgres.withTransaction { tx -> PostgresRow in
            let current = try await tx.query(
                """
                SELECT name, apns_team_id, apns_key_id, apns_private_key, apns_bundle_id, apns_environment,
                       quiet_hours_start, quiet_hours_end, default_timezone
                FROM tenants WHERE id = $1::uuid AND workspace_id = $2::uuid FOR UPDATE
                """, [id, workspace])
            guard let existing = current.first else { throw TenantResolver.notFound }
            var settings = TenantSettings(
                name: try existing.decode(String.self, at: 0), teamID: try existing.decode(String?.self, at: 1),
                keyID: try existing.decode(String?.self, at: 2), sealedKey: try existing.decode(Data?.self, at: 3),
                bundleID: try existing.decode(String?.self, at: 4),
                environment: try existing.decode(String.self, at: 5),
                quietStart: try existing.decode(String?.self, at: 6),
                quietEnd: try existing.decode(String?.self, at: 7),
                defaultTimezone: try existing.decode(String?.self, at: 8))
            try readTenant(request, into: &settings, tenantID: id, creating: false)
            let rows = try await tx.query(
                """
                UPDATE tenants SET name = $2, apns_team_id = $3, apns_key_id = $4, apns_private_key = $5,
                    apns_bundle_id = $6, apns_environment = $7, quiet_hours_start = $8, quiet_hours_end = $9,
                    default_timezone = $10, updated_at = now()
                WHERE id = $1::uuid RETURNING \(TenantRoutes.columns)
                """,
                [
                    id, settings.name, settings.teamID, settings.keyID, settings.sealedKey, settings.bundleID,
                    settings.environment, settings.quietStart, settings.quietEnd, settings.defaultTimezone
                ])
            guard let row = rows.first else { throw TenantResolver.notFound }
            return row
        }
        return .json(.object(try TenantRoutes.representation(row)))
    }

    /// Validates a create or patch body (every problem at once) and merges it into `settings`.
    func readTenant(_ request: Request, into settings: inout TenantSettings, tenantID: UUID, creating: Bool) throws {
        let body = try request.jsonBodyIfPresent()
        var v = Validator(body, allowed: ["name", "apns", "quietHours", "defaultTimezone"])
        if let name = v.string("name", required: creating, rule: FieldRules.nameRule) { settings.name = name }
        if v.has("apns") && v.isNull("apns") && !creating {
            settings.teamID = nil
            settings.keyID = nil
            settings.sealedKey = nil
            settings.bundleID = nil
        } else if let apns = v.object("apns") {
            var a = Validator(apns, allowed: TenantRoutes.apnsFields, prefix: "apns.")
            // The credentials are one set: a change gives all four (environment may stay as it is).
            let required = true
            if let team = a.string("teamId", required: required, rule: FieldRules.appleIDRule) {
                settings.teamID = team
            }
            if let key = a.string("keyId", required: required, rule: FieldRules.appleIDRule) { settings.keyID = key }
            if let bundle = a.string("bundleId", required: required, rule: FieldRules.bundleIDRule) {
                settings.bundleID = bundle
            }
            if let environment = a.oneOf("environment", ["sandbox", "production"]) {
                settings.environment = environment
            }
            if let pem = a.string("privateKey", required: required, rule: FieldRules.privateKeyRule) {
                do {
                    _ = try ES256PrivateKey(pem: pem)
                    settings.sealedKey = Data(
                        try sealer.seal(
                            Array(pem.utf8),
                            associatedData: Array(tenantID.lowercasedText.utf8)))
                } catch {
                    a.add("privateKey", "must be the PEM text of an APNs .p8 key (an EC P-256 private key)")
                }
            }
            v.merge(a)
        }
        if v.has("quietHours") && v.isNull("quietHours") {
            settings.quietStart = nil
            settings.quietEnd = nil
        } else if let hours = v.object("quietHours") {
            var q = Validator(hours, allowed: ["start", "end"], prefix: "quietHours.")
            let start = q.string("start", required: true, rule: FieldRules.wallClockRule)
            let end = q.string("end", required: true, rule: FieldRules.wallClockRule)
            if let start, let end {
                settings.quietStart = start
                settings.quietEnd = end
            }
            v.merge(q)
        }
        if v.has("defaultTimezone") && v.isNull("defaultTimezone") {
            settings.defaultTimezone = nil
        } else if let zone = v.string("defaultTimezone", rule: FieldRules.timezoneRule) {
            settings.defaultTimezone = zone
        }
        try v.check()
    }
}
