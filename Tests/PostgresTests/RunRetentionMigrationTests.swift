import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing

/// Migration 0024 partitions `workflow_runs` by week. A database with runs keeps every one of them
/// (in the partition `workflow_runs_legacy`, not copied), their inboxes, and "one run per trigger".
@Suite("Workflow run retention migration", .requiresPostgres)
struct RunRetentionMigrationTests {
    static let version = 24

    @Test func existingRunsStayInTheLegacyPartitionWithTheirTriggerKeys() async throws {
        let folder = try SendPolicyMigrationTests.migrations(before: Self.version)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withClient(schema: TestEnvironment.uniqueName("runmig")) { (postgres: PostgresClient) async throws in
            try await Migrator(client: postgres, directory: folder, logger: .silent()).migrate()
            let workspace = try await postgres.query("INSERT INTO workspaces (name) VALUES ('w') RETURNING id")[0]
                .decode(UUID.self, at: 0)
            let tenant = try await postgres.query(
                "INSERT INTO tenants (workspace_id, name) VALUES ($1::uuid, 't') RETURNING id", [workspace]
            )[0].decode(UUID.self, at: 0)
            try await postgres.execute(
                "INSERT INTO workflows (tenant_id, key, current_version, trigger_event) VALUES ($1::uuid, 'w', 1, 'e')",
                [tenant])
            try await postgres.execute(
                """
                INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
                VALUES ($1::uuid, 'w', 1, '{}', sha256(convert_to('{}', 'UTF8')))
                """, [tenant])
            let waiting = UUID()
            let ended = UUID()
            for (id, key, status, age) in [(waiting, "e-1", "running", 400), (ended, "e-2", "completed", 3)] {
                try await postgres.execute(
                    """
                    INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status,
                                               created_at, ended_at)
                    VALUES ($1::uuid, $2::uuid, 'w', 1, 'alice', $3, $4, now() - make_interval(days => $5),
                            CASE WHEN $4 = 'completed' THEN now() END)
                    """, [id, tenant, key, status, age])
            }
            try await postgres.execute(
                "INSERT INTO workflow_run_inputs (run_id, kind, payload) VALUES ($1::uuid, 'cancel', '{}')", [waiting])

            let applied = try await Migrator(client: postgres, logger: .silent()).migrate()
            #expect(applied.contains { $0.version == Self.version })

            #expect(
                try await postgres.query("SELECT relkind::text FROM pg_class WHERE oid = 'workflow_runs'::regclass")[0]
                    .decode(String.self, at: 0) == "p")
            let rows = try await postgres.query(
                "SELECT tableoid::regclass::text, id, status FROM workflow_runs ORDER BY created_at")
            #expect(
                try rows.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 2))" }
                    == ["workflow_runs_legacy running", "workflow_runs_legacy completed"])
            let inbox = try await postgres.query(
                "SELECT count(*) FROM workflow_run_inputs WHERE run_id = $1::uuid", [waiting])
            #expect(try inbox[0].decode(Int.self, at: 0) == 1)
            let triggers = try await postgres.query(
                "SELECT trigger_key, run_id FROM workflow_run_triggers ORDER BY trigger_key")
            #expect(try triggers.map { try $0.decode(String.self, at: 0) } == ["e-1", "e-2"])
            #expect(try triggers.map { try $0.decode(UUID.self, at: 1) } == [waiting, ended])
            // Weekly partitions after the legacy one, four weeks ahead.
            let weeks = try await postgres.query(
                "SELECT part FROM bk_retention_partitions('workflow_runs') WHERE lower_bound IS NOT NULL")
            #expect(weeks.count == 4)
            // A new run goes in; a run of the same trigger is refused by the trigger table.
            let claimed = try await postgres.query(
                """
                INSERT INTO workflow_run_triggers (tenant_id, workflow_key, trigger_key, run_id)
                VALUES ($1::uuid, 'w', 'e-1', gen_random_uuid()) ON CONFLICT DO NOTHING RETURNING 1
                """, [tenant])
            #expect(claimed.isEmpty)
            try await postgres.execute(
                """
                INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status)
                VALUES (gen_random_uuid(), $1::uuid, 'w', 1, 'bob', 'e-3', 'pending')
                """, [tenant])
            #expect(try await postgres.query("SELECT count(*) FROM workflow_runs")[0].decode(Int.self, at: 0) == 3)
        }
    }
}
