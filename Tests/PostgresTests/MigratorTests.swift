import BuzzKitCore
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing

@Suite("Migrator", .requiresPostgres)
struct MigratorTests {
    /// A fresh folder holding `files` (name -> SQL).
    static func directory(_ files: [String: String]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("migrations"))
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for (name, sql) in files {
            try sql.write(to: url.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return url
    }

    static let files = [
        "0001_log.sql": "CREATE TABLE log (file text NOT NULL, at timestamptz DEFAULT clock_timestamp());",
        // Slow on purpose, so two concurrent migrators overlap while it runs.
        "0002_slow.sql": "SELECT pg_sleep(0.3); INSERT INTO log (file) VALUES ('0002');",
        "0003_more.sql": "CREATE TABLE things (id int PRIMARY KEY);\nINSERT INTO log (file) VALUES ('0003');",
        "README.md": "not a migration"
    ]

    @Test func appliesOnceAndSecondRunIsNoOp() async throws {
        let folder = try Self.directory(Self.files)
        try await withClient(schema: TestEnvironment.uniqueName("mig")) { (client: PostgresClient) async throws in
            let migrator = Migrator(client: client, directory: folder, logger: .silent())
            let first = try await migrator.migrate()
            #expect(first.map(\.version) == [1, 2, 3])
            #expect(first.map(\.name) == ["log", "slow", "more"])
            let second = try await migrator.migrate()
            #expect(second.isEmpty)
            #expect(try await migrator.applied().map(\.version) == [1, 2, 3])
            let log = try await client.query("SELECT file FROM log ORDER BY file").map {
                try $0.decode(String.self, at: 0)
            }
            #expect(log == ["0002", "0003"])
        }
    }

    @Test func concurrentMigratorsApplyEachFileOnce() async throws {
        let folder = try Self.directory(Self.files)
        let schema = TestEnvironment.uniqueName("migc")
        // Two clients: separate sessions, as two processes would have.
        try await withClient(schema: schema) { (a: PostgresClient) async throws in
            try await withClient(schema: schema) { (b: PostgresClient) async throws in
                async let fromA = Migrator(client: a, directory: folder, logger: .silent()).migrate()
                async let fromB = Migrator(client: b, directory: folder, logger: .silent()).migrate()
                let (appliedA, appliedB) = try await (fromA, fromB)
                #expect((appliedA + appliedB).map(\.version).sorted() == [1, 2, 3])
                let log = try await a.query("SELECT file, count(*) FROM log GROUP BY file ORDER BY file")
                #expect(
                    try log.map { try $0.decode((String, Int).self) }.map { "\($0.0):\($0.1)" } == ["0002:1", "0003:1"])
            }
        }
    }

    @Test func changedChecksumIsRefused() async throws {
        let folder = try Self.directory(Self.files)
        try await withClient(schema: TestEnvironment.uniqueName("migx")) { (client: PostgresClient) async throws in
            let migrator = Migrator(client: client, directory: folder, logger: .silent())
            try await migrator.migrate()
            try "CREATE TABLE things (id int8 PRIMARY KEY);".write(
                to: folder.appendingPathComponent("0003_more.sql"), atomically: true, encoding: .utf8)
            try "CREATE TABLE later (id int);".write(
                to: folder.appendingPathComponent("0004_later.sql"), atomically: true, encoding: .utf8)
            let error = await #expect(throws: MigrationError.self) { try await migrator.migrate() }
            #expect(error?.code == .checksumMismatch)
            #expect(error?.version == 3)
            // Refused before anything ran: 0004 was not applied.
            #expect(try await client.query("SELECT to_regclass('later') IS NULL")[0].decode(Bool.self, at: 0))
        }
    }

    @Test func failingMigrationLeavesNothingBehind() async throws {
        let folder = try Self.directory([
            "0001_ok.sql": "CREATE TABLE a (id int);",
            "0002_bad.sql": "CREATE TABLE b (id int); SELEC oops;"
        ])
        try await withClient(schema: TestEnvironment.uniqueName("migf")) { (client: PostgresClient) async throws in
            let migrator = Migrator(client: client, directory: folder, logger: .silent())
            let error = await #expect(throws: MigrationError.self) { try await migrator.migrate() }
            #expect(error?.code == .migrationFailed)
            #expect(error?.underlying?.sqlState == "42601")
            #expect(try await migrator.applied().map(\.version) == [1])
            #expect(try await client.query("SELECT to_regclass('b') IS NULL")[0].decode(Bool.self, at: 0))
        }
    }

    @Test func bundledMigrationsApply() async throws {
        let bundled = try MigrationFile.load(from: Migrator.bundledDirectory)
        #expect(bundled.first?.version == 1)
        try await withClient(schema: TestEnvironment.uniqueName("migb")) { (client: PostgresClient) async throws in
            let migrator = Migrator(client: client, logger: .silent())
            #expect(try await migrator.migrate().count == bundled.count)
            #expect(try await migrator.migrate().isEmpty)
        }
    }

    @Test func duplicateVersionsAreRejected() throws {
        let folder = try Self.directory(["0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 2;"])
        #expect(throws: MigrationError.self) { try MigrationFile.load(from: folder) }
    }
}
