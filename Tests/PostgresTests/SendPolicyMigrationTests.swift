import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing

/// Migration 0023 makes a message's `category` name a category of the tenant. A database that
/// already sent categories (free text before) gets each of them registered, so what a backend sent
/// before still goes out after the upgrade.
@Suite("Send policy migration", .requiresPostgres)
struct SendPolicyMigrationTests {
    static let policyVersion = 23

    /// The bundled migrations before `version`, copied into a folder of their own.
    static func migrations(before version: Int) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("migrations"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in try MigrationFile.load(from: Migrator.bundledDirectory) where file.version < version {
            let name = String(format: "%04d_%@.sql", file.version, file.name)
            try file.sql.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return folder
    }

    @Test func categoriesAlreadySentBecomeCategoriesOfTheirTenant() async throws {
        let folder = try Self.migrations(before: Self.policyVersion)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withClient(schema: TestEnvironment.uniqueName("polmig")) { (postgres: PostgresClient) async throws in
            try await Migrator(client: postgres, directory: folder, logger: .silent()).migrate()
            let workspace = try await postgres.query("INSERT INTO workspaces (name) VALUES ('w') RETURNING id")[0]
                .decode(UUID.self, at: 0)
            var tenants: [UUID] = []
            for name in ["a", "b"] {
                tenants.append(
                    try await postgres.query(
                        "INSERT INTO tenants (workspace_id, name) VALUES ($1::uuid, $2) RETURNING id", [workspace, name]
                    )[0].decode(UUID.self, at: 0))
            }
            for (tenant, category) in [
                (tenants[0], "CHAT_REPLY"), (tenants[0], "CHAT_REPLY"), (tenants[0], "has a space"),
                (tenants[1], "offers"), (tenants[1], nil)
            ] {
                let content = category.map { #"{"body": "b", "category": "\#($0)"}"# } ?? #"{"body": "b"}"#
                try await postgres.execute(
                    """
                    INSERT INTO messages (id, tenant_id, target, content, status)
                    VALUES ($1::uuid, $2::uuid, '{"topic": "t"}', $3::jsonb, 'completed')
                    """, [UUID(), tenant, content])
            }
            // A send step nested in a branch counts as much as one at the top.
            let definition = """
                {"trigger": {"event": "e"}, "steps": [{"id": "s", "send": {"body": "x", "category": "news.daily"}},
                 {"id": "b", "branch": {"then": [{"id": "t", "send": {"body": "y", "category": "security:alerts"}}]}}]}
                """
            try await postgres.execute(
                """
                INSERT INTO workflows (tenant_id, key, current_version, trigger_event) VALUES ($1::uuid, 'w', 1, 'e');
                """, [tenants[1]])
            try await postgres.execute(
                """
                INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
                VALUES ($1::uuid, 'w', 1, $2, sha256(convert_to($2, 'UTF8')))
                """, [tenants[1], definition])

            let applied = try await Migrator(client: postgres, logger: .silent()).migrate()
            #expect(applied.contains { $0.version == Self.policyVersion })
            let rows = try await postgres.query(
                """
                SELECT t.name, c.key, c.name, c.default_enabled, c.critical
                FROM categories c JOIN tenants t ON t.id = c.tenant_id ORDER BY t.name, c.key
                """)
            let categories = try rows.map {
                "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1)) "
                    + "\(try $0.decode(String.self, at: 2)) \(try $0.decode(Bool.self, at: 3)) "
                    + "\(try $0.decode(Bool.self, at: 4))"
            }
            #expect(
                categories == [
                    "a CHAT_REPLY CHAT_REPLY true false",
                    "b news.daily news.daily true false",
                    "b offers offers true false",
                    "b security:alerts security:alerts true false"
                ])
        }
    }
}
