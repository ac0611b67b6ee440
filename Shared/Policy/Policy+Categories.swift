import BuzzKitPostgres
import BuzzKitWire
import Foundation

extension Policy {
    static let categoryColumns = """
        key, name, description, default_enabled, critical, created_at, updated_at
        """

    static func category(_ row: PostgresRow) throws -> Category {
        Category(
            key: try row.decode(String.self, at: 0), name: try row.decode(String.self, at: 1),
            description: try row.decode(String?.self, at: 2), defaultEnabled: try row.decode(Bool.self, at: 3),
            critical: try row.decode(Bool.self, at: 4), createdAt: try row.decode(Date.self, at: 5),
            updatedAt: try row.decode(Date.self, at: 6))
    }

    /// Creates or replaces a category (`PUT /v1/categories/{key}`): answers it and whether it is new.
    public func putCategory(tenant: UUID, key: String, _ definition: Category.Definition) async throws -> (
        Category, created: Bool
    ) {
        try await postgres.withTransaction { tx in
            try await Self.putCategory(tenant: tenant, key: key, definition, on: tx)
        }
    }

    /// The upsert, then, for a critical category, a look at the caps: while one counts it the change
    /// is refused (409 `category_in_use`, its `usedBy` the caps; rolled back), since a critical push
    /// is never capped. The upsert's row lock orders it with a settings change naming the category
    /// (`FOR SHARE` there).
    private static func putCategory(
        tenant: UUID, key: String, _ definition: Category.Definition, on tx: PostgresConnection
    ) async throws -> (Category, created: Bool) {
        let rows = try await tx.query(
            """
            INSERT INTO categories AS c (tenant_id, key, name, description, default_enabled, critical)
            VALUES ($1::uuid, $2, $3, $4, $5, $6)
            ON CONFLICT (tenant_id, key) DO UPDATE SET
                name = EXCLUDED.name, description = EXCLUDED.description,
                default_enabled = EXCLUDED.default_enabled, critical = EXCLUDED.critical, updated_at = now()
            RETURNING \(Self.categoryColumns), (xmax = 0) AS created
            """,
            [tenant, key, definition.name, definition.description, definition.defaultEnabled, definition.critical])
        guard let row = rows.first else { throw APIError.internalError }
        if definition.critical {
            let caps = try await tx.query(
                "SELECT position FROM frequency_caps WHERE tenant_id = $1::uuid AND category_key = $2 ORDER BY position",
                [tenant, key])
            if !caps.isEmpty {
                let usedBy = try caps.map { CategoryUse.frequencyCap(try $0.decode(Int.self, at: 0)) }
                throw APIError(
                    .categoryInUse,
                    "the category \(key) cannot be critical while a frequency cap counts it (a critical push is "
                        + "never capped): remove the cap first",
                    details: ["usedBy": .array(usedBy.map(\.jsonValue))])
            }
        }
        return (try Self.category(row), try row.decode(Bool.self, at: 7))
    }

    public func category(tenant: UUID, key: String) async throws -> Category? {
        try await postgres.query(
            "SELECT \(Self.categoryColumns) FROM categories WHERE tenant_id = $1::uuid AND key = $2", [tenant, key]
        ).first.map(Self.category)
    }

    /// The tenant's categories in key order, after `after` (keyset), at most `limit`.
    public func categories(tenant: UUID, after: String? = nil, limit: Int = 1000) async throws -> [Category] {
        try await postgres.query(
            """
            SELECT \(Self.categoryColumns) FROM categories
            WHERE tenant_id = $1::uuid AND ($2::text IS NULL OR key > $2) ORDER BY key LIMIT $3
            """, [tenant, after, limit]
        ).map(Self.category)
    }

    /// Where a category is in use, as `details.usedBy` of a 409 says it.
    public enum CategoryUse: Sendable, Hashable {
        /// The current version of an enabled workflow sends in it.
        case workflow(String)
        /// It is the tenant's `defaultCategory`.
        case defaultCategory
        /// A frequency cap counts it (its position in `frequencyCaps`).
        case frequencyCap(Int)

        public var jsonValue: JSONValue {
            switch self {
            case .workflow(let key): ["kind": "workflow", "key": .string(key)]
            case .defaultCategory: ["kind": "defaultCategory"]
            case .frequencyCap(let index): ["kind": "frequencyCap", "index": .int(Int64(index))]
            }
        }
    }

    /// Deletes a category and every subscriber's choice for it (the history keeps them). Refused
    /// (409 `category_in_use`) while an enabled workflow's current version sends in it, it is the
    /// default category or a cap counts it. The row is locked first, so a workflow saved or
    /// enabled at the same moment (which locks the categories it names, `missingCategories`)
    /// either sees it gone or keeps it. Answers whether it existed.
    public func deleteCategory(tenant: UUID, key: String) async throws -> Bool {
        try await postgres.withTransaction { tx in
            let locked = try await tx.query(
                "SELECT 1 FROM categories WHERE tenant_id = $1::uuid AND key = $2 FOR UPDATE", [tenant, key])
            guard !locked.isEmpty else { return false }
            let uses = try await tx.query(
                """
                SELECT 'workflow', w.key, NULL::int FROM workflows w
                JOIN workflow_versions v ON v.tenant_id = w.tenant_id AND v.workflow_key = w.key
                                        AND v.version = w.current_version
                WHERE w.tenant_id = $1::uuid AND w.enabled AND w.deleted_at IS NULL
                  AND jsonb_path_exists(v.definition::jsonb, '$.**.send.category ? (@ == $key)',
                                        jsonb_build_object('key', $2::text))
                UNION ALL
                SELECT 'defaultCategory', NULL, NULL FROM policy_settings
                WHERE tenant_id = $1::uuid AND default_category = $2
                UNION ALL
                SELECT 'frequencyCap', NULL, position FROM frequency_caps WHERE tenant_id = $1::uuid AND category_key = $2
                ORDER BY 1, 2, 3
                """, [tenant, key])
            let usedBy: [CategoryUse] = try uses.map { row in
                switch try row.decode(String.self, at: 0) {
                case "workflow": .workflow(try row.decode(String.self, at: 1))
                case "defaultCategory": .defaultCategory
                default: .frequencyCap(try row.decode(Int.self, at: 2))
                }
            }
            guard usedBy.isEmpty else {
                throw APIError(
                    .categoryInUse,
                    "the category \(key) is in use: \(usedBy.count) \(usedBy.count == 1 ? "use" : "uses")",
                    details: ["usedBy": .array(usedBy.map(\.jsonValue))])
            }
            try await tx.execute("DELETE FROM categories WHERE tenant_id = $1::uuid AND key = $2", [tenant, key])
            return true
        }
    }

    /// The keys among `keys` that are not categories of the tenant. With `lock` (inside the
    /// caller's transaction) the existing ones stay locked against deletion until it ends.
    public static func missingCategories(
        _ keys: Set<String>, tenant: UUID, lock: Bool = false, on connection: PostgresConnection
    ) async throws -> Set<String> {
        keys.subtracting(try await criticalFlags(keys, tenant: tenant, lock: lock, on: connection).keys)
    }

    /// Whether each of `keys` that exists is critical (a key absent from the answer: no such
    /// category); with `lock`, the existing ones are locked as `missingCategories` says.
    static func criticalFlags(
        _ keys: Set<String>, tenant: UUID, lock: Bool, on connection: PostgresConnection
    ) async throws -> [String: Bool] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT key, critical FROM categories WHERE tenant_id = $1::uuid AND key = ANY($2::text[])
            \(lock ? "FOR SHARE" : "")
            """, [tenant, Array(keys).sorted()])
        var flags: [String: Bool] = [:]
        for row in rows { flags[try row.decode(String.self, at: 0)] = try row.decode(Bool.self, at: 1) }
        return flags
    }

    /// `missingCategories` on a pooled connection (no lock).
    public func missingCategories(_ keys: Set<String>, tenant: UUID) async throws -> Set<String> {
        try await postgres.withConnection { try await Self.missingCategories(keys, tenant: tenant, on: $0) }
    }
}
