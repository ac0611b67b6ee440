import BuzzKitMigrations
import BuzzKitPostgres
import Foundation

/// A schema of a test's own on the shared test server, with every migration applied: what the
/// fixtures of the service tests start from.
///
/// ```swift
/// let schema = try await MigratedSchema.start("wfruns")
/// let tenant = try await schema.makeTenant()
/// ... schema.postgres ...
/// await schema.stop()  // drops the schema
/// ```
public struct MigratedSchema: Sendable {
    public let name: String
    public let postgres: PostgresClient

    /// A fresh schema named after `prefix`, migrated, and a client of `poolSize` whose sessions use it.
    public static func start(_ prefix: String, poolSize: Int = 4) async throws -> MigratedSchema {
        let name = TestEnvironment.uniqueName(prefix)
        let postgres = try await PostgresTestSupport.client(schema: name, poolSize: poolSize)
        // Parallel tests race on the database-wide `CREATE EXTENSION IF NOT EXISTS pgcrypto` of the
        // baseline; a file that fails leaves nothing behind, so trying again is safe.
        for attempt in 1...5 {
            do {
                try await Migrator(client: postgres, logger: .silent()).migrate()
                break
            } catch  where attempt < 5 {
                try await Task.sleep(for: .milliseconds(100 * attempt))
            }
        }
        return MigratedSchema(name: name, postgres: postgres)
    }

    /// A workspace with one tenant; returns the tenant's id.
    public func makeTenant() async throws -> UUID {
        let workspace = try await postgres.query("INSERT INTO workspaces (name) VALUES ('w') RETURNING id")[0]
            .decode(UUID.self, at: 0)
        return try await postgres.query(
            "INSERT INTO tenants (workspace_id, name) VALUES ($1::uuid, 't') RETURNING id", [workspace]
        )[0].decode(UUID.self, at: 0)
    }

    /// Closes the client and drops the schema with everything in it.
    public func stop() async {
        await postgres.shutdown()
        let admin = try? PostgresClient(url: TestEnvironment.postgresURL, logger: .silent())
        _ = try? await admin?.execute("DROP SCHEMA IF EXISTS \"\(name)\" CASCADE")
        await admin?.shutdown()
    }
}
