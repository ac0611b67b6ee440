import BuzzKitHTTPServer
import BuzzKitPostgres
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// The tenant's workflow settings as a workflow reads them.
struct WorkflowSettings: Sendable {
    var quietHours: QuietHours?
    var defaultTimeZone: String?
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

    static func settingsJSON(_ s: WorkflowSettings) -> JSONValue {
        [
            "quietHours": s.quietHours.map {
                ["start": .string($0.start.description), "end": .string($0.end.description)]
            } ?? .null,
            "defaultTimezone": s.defaultTimeZone.map(JSONValue.string) ?? .null
        ]
    }

    func getSettings(_ context: RequestContext) async throws -> Response {
        .json(Self.settingsJSON(try await workflowSettings(try context.tenant)))
    }

    /// `PATCH /v1/settings {quietHours?: {start, end} | null, defaultTimezone?: "Europe/Berlin" | null}`.
    func updateSettings(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        var v = Validator(try context.request.jsonBody(), allowed: ["quietHours", "defaultTimezone"])
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
        var zone: String??
        if v.has("defaultTimezone") {
            zone =
                v.isNull("defaultTimezone")
                ? .some(nil)
                : .some(v.string("defaultTimezone", rule: FieldRules.timezoneRule))
        }
        try v.check()
        let row = try await postgres.query(
            """
            UPDATE tenants SET
                quiet_hours_start = CASE WHEN $2::boolean THEN $3 ELSE quiet_hours_start END,
                quiet_hours_end = CASE WHEN $2::boolean THEN $4 ELSE quiet_hours_end END,
                default_timezone = CASE WHEN $5::boolean THEN $6 ELSE default_timezone END,
                updated_at = now()
            WHERE id = $1::uuid RETURNING quiet_hours_start, quiet_hours_end, default_timezone
            """, [tenant, quiet != nil, quiet?.0, quiet?.1, zone != nil, zone ?? nil]
        ).first
        guard let row else { throw TenantResolver.notFound }
        return .json(Self.settingsJSON(try Self.settings(row)))
    }
}
