import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// A schema of a test's own with every migration applied, one tenant, and helpers to save
/// workflow definitions the way the gateway does (workflows + workflow_versions rows).
final class WorkflowStoreFixture: Sendable {
    let schema: MigratedSchema
    let tenantId: UUID
    var postgres: PostgresClient { schema.postgres }

    private init(schema: MigratedSchema, tenantId: UUID) {
        self.schema = schema
        self.tenantId = tenantId
    }

    static func start(poolSize: Int = 6) async throws -> WorkflowStoreFixture {
        let schema = try await MigratedSchema.start("wfruns", poolSize: poolSize)
        return WorkflowStoreFixture(schema: schema, tenantId: try await schema.makeTenant())
    }

    func stop() async { await schema.stop() }

    /// Saves `text` as the next version of `key` (enabled); answers the version and the definition.
    @discardableResult
    func save(_ key: String, _ text: String) async throws -> (version: Int, definition: WorkflowDefinition) {
        let parsed: WorkflowDefinition
        switch WorkflowDefinition.parse(try JSONValue.parse(text)) {
        case .success(let d): parsed = d
        case .failure(let r): throw TestFailure("definition refused: \(r.issues)")
        }
        let canonical = String(decoding: parsed.canonicalJSON, as: UTF8.self)
        let version = try await postgres.withTransaction { tx -> Int in
            let rows = try await tx.query(
                """
                INSERT INTO workflows (tenant_id, key, current_version, trigger_event) VALUES ($1::uuid, $2, 1, $3)
                ON CONFLICT (tenant_id, key) DO UPDATE SET current_version = workflows.current_version + 1,
                    trigger_event = EXCLUDED.trigger_event, deleted_at = NULL, enabled = true
                RETURNING current_version
                """, [tenantId, key, parsed.trigger.event])
            let version = try rows[0].decode(Int.self, at: 0)
            try await tx.execute(
                """
                INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
                VALUES ($1::uuid, $2, $3, $4, sha256(convert_to($4, 'UTF8')))
                """, [tenantId, key, version, canonical])
            return version
        }
        return (version, parsed)
    }

    func subscriber(_ id: String, attributes: JSONValue = [:], timezone: String? = nil) async throws {
        try await postgres.execute(
            """
            INSERT INTO subscribers (tenant_id, id, attributes, timezone) VALUES ($1::uuid, $2, $3::jsonb, $4)
            ON CONFLICT (tenant_id, id) DO UPDATE SET attributes = EXCLUDED.attributes, timezone = EXCLUDED.timezone
            """, [tenantId, id, attributes, timezone])
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
