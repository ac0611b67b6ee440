import BuzzKitHTTPServer
import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// The tenant's workflow settings as a workflow reads them.
struct WorkflowSettings: Sendable {
    var quietHours: QuietHours?
    var defaultTimeZone: String?
}

/// `GET/PATCH /v1/settings`: quiet hours and the default time zone (workflows), the default
/// category and the frequency caps (the send policy), and whether an identity secret is set;
/// `POST /v1/settings/identity-secret` makes a new one (shown once).
enum SettingsRoutes {
    /// At most this many caps (each decision walks them for every subscriber it counts).
    static let maxCaps = 10
    /// A cap's largest limit.
    static let maxCapLimit = 1_000_000

    static let cap = Schema.object(
        [
            "category": Schema.nullable(
                CategoryRoutes.reference("A category's key; null or absent: every non-critical push")),
            "limit": ["type": "integer", "minimum": 1, "maximum": .int(Int64(maxCapLimit))],
            "window": Schema.string(
                "The rolling window the cap counts over", enumeration: CapWindow.allCases.map(\.rawValue))
        ], required: ["limit", "window"],
        description: "At most limit pushes to a subscriber within the window (counted once per message)")

    static let settings = Schema.object(
        [
            "quietHours": Schema.nullable(TenantRoutes.quietHours),
            "defaultTimezone": Schema.nullable(
                Schema.adding(
                    ["description": "IANA zone for subscribers without one (else UTC)"],
                    to: Schema.timezone)),
            "defaultCategory": Schema.nullable(
                Schema.string(
                    FieldRules.keyRule, "The category of a message that names none (null: only the global opt-out)")),
            "frequencyCaps": Schema.array(cap, maxItems: maxCaps),
            "identityVerification": Schema.object(
                [
                    "configured": Schema.boolean, "createdAt": Schema.nullable(Schema.timestamp),
                    "previousValidUntil": Schema.nullable(Schema.timestamp)
                ], required: ["configured", "createdAt", "previousValidUntil"],
                description: "Whether the tenant has an identity secret (never shown again after its creation)")
        ],
        required: ["quietHours", "defaultTimezone", "defaultCategory", "frequencyCaps", "identityVerification"])

    static let settingsPatch = Schema.object(
        [
            "quietHours": Schema.nullable(TenantRoutes.quietHours),
            "defaultTimezone": Schema.nullable(Schema.timezone),
            "defaultCategory": Schema.nullable(
                CategoryRoutes.reference("The category of a message that names none (null: none)")),
            "frequencyCaps": Schema.array(cap, maxItems: maxCaps)
        ],
        description:
            "Members left out keep their value; null removes one; frequencyCaps replaces the caps as a whole ([] removes them)"
    )

    static let secret = Schema.object(
        [
            "secret": Schema.string(
                "The identity secret (shown once): sign a subscriber id with HMAC-SHA256 keyed with this text"),
            "createdAt": Schema.timestamp,
            "previousValidUntil": Schema.nullable(
                Schema.timestamp)
        ], required: ["secret", "createdAt", "previousValidUntil"])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/settings", id: "getSettings",
                "The tenant's settings: quiet hours and default time zone, default category and frequency caps, "
                    + "whether an identity secret is set",
                access: .tenant(.settingsRead, clientKeys: false), response: settings,
                handler: { g, c in try await g.getSettings(c) }),
            GatewayRoute(
                "PATCH", "/v1/settings", id: "updateSettings",
                "Change the tenant's settings (null removes one; absent keeps it; frequencyCaps is replaced whole)",
                access: .tenant(.settingsWrite, clientKeys: false), body: settingsPatch, response: settings,
                handler: { g, c in try await g.updateSettings(c) }),
            GatewayRoute(
                "POST", "/v1/settings/identity-secret", id: "rotateIdentitySecret",
                "Make a new identity secret, shown once (the previous one still verifies for 24 hours)",
                access: .tenant(.settingsWrite, clientKeys: false), response: secret, status: 201,
                errors: [.validationFailed], handler: { g, c in try await g.rotateIdentitySecret(c) })
        ]
    }
}

extension Gateway {
    /// Quiet hours (the same columns `PATCH /v1/tenants/{id}` writes) and the default time zone.
    func workflowSettings(_ tenant: UUID) async throws -> WorkflowSettings {
        guard
            let row = try await postgres.query(
                "SELECT quiet_hours_start, quiet_hours_end, default_timezone FROM tenants WHERE id = $1::uuid", [tenant]
            ).first
        else { throw TenantResolver.notFound }
        return try Self.settings(row)
    }

    static func settings(_ row: PostgresRow) throws -> WorkflowSettings {
        let start = try row.decode(String?.self, named: "quiet_hours_start").flatMap(WallClockTime.init)
        let end = try row.decode(String?.self, named: "quiet_hours_end").flatMap(WallClockTime.init)
        let quiet = start.flatMap { s in end.map { QuietHours(start: s, end: $0) } }
        return WorkflowSettings(
            quietHours: quiet, defaultTimeZone: try row.decode(String?.self, named: "default_timezone"))
    }

    /// The whole settings document, read in one transaction's snapshot.
    private func settingsJSON(_ tenant: UUID, on connection: PostgresConnection) async throws -> JSONValue {
        guard
            let row = try await connection.query(
                """
                SELECT quiet_hours_start, quiet_hours_end, default_timezone, identity_secret IS NOT NULL AS configured,
                       identity_secret_created_at,
                       CASE WHEN identity_secret_previous_until > now() THEN identity_secret_previous_until END
                           AS previous_until
                FROM tenants WHERE id = $1::uuid
                """, [tenant]
            ).first
        else { throw TenantResolver.notFound }
        let workflow = try Self.settings(row)
        let policy = try await Policy.settings(tenant: tenant, on: connection)
        return [
            "quietHours": workflow.quietHours.map {
                ["start": .string($0.start.description), "end": .string($0.end.description)]
            } ?? .null,
            "defaultTimezone": workflow.defaultTimeZone.map(JSONValue.string) ?? .null,
            "defaultCategory": policy.defaultCategory.map(JSONValue.string) ?? .null,
            "frequencyCaps": .array(policy.frequencyCaps.map(\.jsonValue)),
            "identityVerification": [
                "configured": .bool(try row.decode(Bool.self, named: "configured")),
                "createdAt": Self.timestamp(try row.decode(Date?.self, named: "identity_secret_created_at")),
                "previousValidUntil": Self.timestamp(try row.decode(Date?.self, named: "previous_until"))
            ]
        ]
    }

    static func timestamp(_ date: Date?) -> JSONValue {
        date.map { .string(EventTimestamp.format($0)) } ?? .null
    }

    func getSettings(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        return .json(try await postgres.withConnection { try await settingsJSON(tenant, on: $0) })
    }

    /// `PATCH /v1/settings {quietHours?, defaultTimezone?, defaultCategory?, frequencyCaps?}`: every
    /// problem at once (422 with each field's path), then one transaction, so nothing is
    /// half-written.
    func updateSettings(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var v = Validator(
            try context.request.jsonBody(),
            allowed: ["quietHours", "defaultTimezone", "defaultCategory", "frequencyCaps"])
        var quiet: (String?, String?)?
        if v.has("quietHours") {
            if v.isNull("quietHours") {
                quiet = (nil, nil)
            } else if let object = v.object("quietHours") {
                var q = Validator(object, allowed: ["start", "end"], prefix: "quietHours.")
                let start = q.string("start", required: true, rule: FieldRules.wallClockRule)
                let end = q.string("end", required: true, rule: FieldRules.wallClockRule)
                v.merge(q)
                quiet = (start, end)
            }
        }
        let zone = v.patchString("defaultTimezone", rule: FieldRules.timezoneRule)
        let defaultCategory = v.patchString("defaultCategory", rule: FieldRules.keyRule)
        var caps: [FrequencyCap]?
        if v.has("frequencyCaps") { caps = Self.frequencyCaps(&v) }
        try v.check()
        let json = try await postgres.withTransaction { tx -> JSONValue in
            let updated = try await tx.execute(
                """
                UPDATE tenants SET
                    quiet_hours_start = CASE WHEN $2::boolean THEN $3 ELSE quiet_hours_start END,
                    quiet_hours_end = CASE WHEN $2::boolean THEN $4 ELSE quiet_hours_end END,
                    default_timezone = CASE WHEN $5::boolean THEN $6 ELSE default_timezone END,
                    updated_at = now()
                WHERE id = $1::uuid
                """, [tenant, quiet != nil, quiet?.0, quiet?.1, zone != nil, zone ?? nil])
            guard updated > 0 else { throw TenantResolver.notFound }
            try await Policy.changeSettings(
                tenant: tenant, defaultCategory: defaultCategory, frequencyCaps: caps, on: tx)
            return try await settingsJSON(tenant, on: tx)
        }
        return .json(json)
    }

    /// `frequencyCaps`: an array of at most `maxCaps` `{category?, limit, window}`; problems at
    /// `frequencyCaps[i].limit` and so on. Whether the categories exist is the transaction's
    /// to check (`Policy.changeSettings`).
    static func frequencyCaps(_ v: inout Validator) -> [FrequencyCap]? {
        guard let list = v.object["frequencyCaps"]?.arrayValue else {
            v.add("frequencyCaps", "must be an array of {category?, limit, window}")
            return nil
        }
        if list.count > SettingsRoutes.maxCaps {
            v.add("frequencyCaps", "must hold at most \(SettingsRoutes.maxCaps) caps")
            return nil
        }
        var caps: [FrequencyCap] = []
        var valid = true
        for (index, item) in list.enumerated() {
            let path = "frequencyCaps[\(index)]"
            guard item.objectValue != nil else {
                v.add(path, "must be an object {category?, limit, window}")
                valid = false
                continue
            }
            var c = Validator(item, allowed: ["category", "limit", "window"], prefix: path + ".")
            let category = c.string("category", rule: FieldRules.keyRule)
            var limit: Int?
            if let value = item["limit"], !value.isNull {
                if let n = value.intValue, (1...Int64(SettingsRoutes.maxCapLimit)).contains(n) {
                    limit = Int(n)
                } else {
                    c.add("limit", "must be an integer from 1 to \(SettingsRoutes.maxCapLimit)")
                }
            } else {
                c.add("limit", "is required")
            }
            let window = c.string("window", required: true, rule: .oneOf(CapWindow.allCases.map(\.rawValue)))
            v.merge(c)
            guard c.issues.isEmpty, let limit, let window = window.flatMap(CapWindow.init(rawValue:)) else {
                valid = false
                continue
            }
            caps.append(FrequencyCap(category: category, limit: limit, window: window))
        }
        return valid ? caps : nil
    }
}
