import BuzzKitPostgres
import BuzzKitWire
import Foundation

extension Policy {
    /// The tenant's default category and frequency caps.
    public func settings(tenant: UUID) async throws -> PolicySettings {
        try await postgres.withConnection { try await Self.settings(tenant: tenant, on: $0) }
    }

    public static func settings(tenant: UUID, on connection: PostgresConnection) async throws -> PolicySettings {
        let rows = try await connection.query(
            """
            SELECT 0 AS part, default_category, NULL::int, NULL::int, NULL::int
            FROM policy_settings WHERE tenant_id = $1::uuid
            UNION ALL
            SELECT 1, category_key, max_count, window_seconds, position FROM frequency_caps WHERE tenant_id = $1::uuid
            ORDER BY 1, 5
            """, [tenant])
        var settings = PolicySettings()
        for row in rows {
            if try row.decode(Int.self, at: 0) == 0 {
                settings.defaultCategory = try row.decode(String?.self, at: 1)
            } else if let window = CapWindow(seconds: try row.decode(Int.self, at: 3)) {
                settings.frequencyCaps.append(
                    FrequencyCap(
                        category: try row.decode(String?.self, at: 1), limit: try row.decode(Int.self, at: 2),
                        window: window))
            }
        }
        return settings
    }

    /// Writes what a `PATCH /v1/settings` changes inside the caller's transaction: the default
    /// category (`.some(nil)` removes it) and the caps (replaced as a whole). Every category named
    /// must exist, and a cap's must not be critical (422 with the field's path: `defaultCategory`,
    /// `frequencyCaps[1].category`);
    /// they stay locked against deletion until the transaction ends, so nothing is half-written.
    public static func changeSettings(
        tenant: UUID, defaultCategory: String??, frequencyCaps: [FrequencyCap]?, on tx: PostgresConnection
    ) async throws {
        var named = Set<String>()
        if case .some(.some(let key)) = defaultCategory { named.insert(key) }
        for cap in frequencyCaps ?? [] { if let key = cap.category { named.insert(key) } }
        let critical = try await criticalFlags(named, tenant: tenant, lock: true, on: tx)
        let missing = named.subtracting(critical.keys)
        var issues: [ValidationIssue] = []
        if case .some(.some(let key)) = defaultCategory, missing.contains(key) {
            issues.append(ValidationIssue(path: "defaultCategory", message: "no category with the key \(key)"))
        }
        for (index, cap) in (frequencyCaps ?? []).enumerated() {
            guard let key = cap.category else { continue }
            if missing.contains(key) {
                issues.append(
                    ValidationIssue(
                        path: "frequencyCaps[\(index)].category", message: "no category with the key \(key)"))
            } else if critical[key] == true {
                issues.append(
                    ValidationIssue(
                        path: "frequencyCaps[\(index)].category",
                        message: "\(key) is a critical category: critical pushes are never capped"))
            }
        }
        if !issues.isEmpty {
            throw ValidationIssue.apiError(
                issues,
                message:
                    "the settings are invalid: \(issues.count == 1 ? "1 field is" : "\(issues.count) fields are") invalid"
            )
        }
        if let defaultCategory {
            try await tx.execute(
                """
                INSERT INTO policy_settings (tenant_id, default_category) VALUES ($1::uuid, $2)
                ON CONFLICT (tenant_id) DO UPDATE SET default_category = EXCLUDED.default_category, updated_at = now()
                """, [tenant, defaultCategory])
        }
        if let frequencyCaps {
            try await tx.execute("DELETE FROM frequency_caps WHERE tenant_id = $1::uuid", [tenant])
            if !frequencyCaps.isEmpty {
                try await tx.execute(
                    """
                    INSERT INTO frequency_caps (tenant_id, position, category_key, max_count, window_seconds)
                    SELECT $1::uuid, u.n - 1, u.c, u.l, u.w
                    FROM unnest($2::text[], $3::int[], $4::int[]) WITH ORDINALITY AS u(c, l, w, n)
                    """,
                    [
                        tenant, frequencyCaps.map(\.category), frequencyCaps.map(\.limit),
                        frequencyCaps.map(\.window.seconds)
                    ])
            }
        }
    }
}
