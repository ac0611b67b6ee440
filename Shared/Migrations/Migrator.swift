import BuzzKitCore
import BuzzKitPostgres
import Foundation

/// Applies the ordered `NNNN_name.sql` migrations, each exactly once.
///
/// - Applied files are recorded in `schema_migrations(version, name, checksum, applied_at)` in the
///   session's current schema (the first of `search_path`).
/// - Each file runs in its own transaction together with its `schema_migrations` row: a failing
///   file leaves nothing behind. (So a file cannot use `CREATE INDEX CONCURRENTLY`.)
/// - The whole run holds a session `pg_advisory_lock` keyed on the schema, so several processes
///   starting at once apply each file once; the later ones wait, then find nothing to do.
/// - An applied file whose text changed is refused (`checksumMismatch`), before anything runs.
/// - Running it again is a no-op.
///
/// By default the files come from this module's bundled `SQL` folder.
public struct Migrator: Sendable {
    public let client: PostgresClient
    public let directory: URL
    let logger: Logger

    /// - Parameter directory: the migrations folder; default the bundled `SQL` resources.
    public init(client: PostgresClient, directory: URL? = nil, logger: Logger) {
        self.client = client
        self.directory = directory ?? Migrator.bundledDirectory
        self.logger = logger
    }

    /// The `SQL` folder shipped inside this module's resource bundle.
    public static var bundledDirectory: URL {
        Bundle.module.url(forResource: "SQL", withExtension: nil)
            ?? Bundle.module.bundleURL.appendingPathComponent("SQL")
    }

    /// A migration recorded in `schema_migrations`.
    public struct Applied: Sendable, Hashable {
        public var version: Int
        public var name: String
        public var checksum: String
    }

    /// Applies what is pending; returns the files applied by this call, in order.
    @discardableResult
    public func migrate() async throws -> [MigrationFile] {
        let files = try MigrationFile.load(from: directory)
        return try await client.withConnection { connection in
            try await connection.execute(
                "SELECT pg_advisory_lock(hashtext('buzzkit.schema_migrations:' || current_schema()))")
            do {
                let applied = try await run(files, on: connection)
                try await unlock(connection)
                return applied
            } catch {
                try? await unlock(connection)
                throw error
            }
        }
    }

    /// The migrations recorded as applied (empty when none ever ran).
    public func applied() async throws -> [Applied] {
        try await client.withConnection { try await recorded(on: $0) }
    }

    // MARK: - Internals

    private func unlock(_ connection: PostgresConnection) async throws {
        try await connection.execute(
            "SELECT pg_advisory_unlock(hashtext('buzzkit.schema_migrations:' || current_schema()))")
    }

    private func run(_ files: [MigrationFile], on connection: PostgresConnection) async throws -> [MigrationFile] {
        try await connection.executeScript(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    bigint PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = Dictionary(uniqueKeysWithValues: try await recorded(on: connection).map { ($0.version, $0) })
        for file in files {
            if let done = applied[file.version], done.checksum != file.checksum {
                throw MigrationError(
                    code: .checksumMismatch, version: file.version,
                    message:
                        "migration \(file.version)_\(file.name) changed after it was applied (recorded \(done.checksum), file \(file.checksum))"
                )
            }
        }
        var newlyApplied: [MigrationFile] = []
        for file in files where applied[file.version] == nil {
            logger.info(
                "migration.apply", metadata: ["migration.version": String(file.version), "migration.name": file.name])
            do {
                try await connection.withTransaction { tx in
                    try await tx.executeScript(file.sql)
                    try await tx.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                        [file.version, file.name, file.checksum])
                }
            } catch let error as PostgresError {
                throw MigrationError(
                    code: .migrationFailed, message: "migration \(file.version)_\(file.name) failed",
                    version: file.version,
                    underlying: PostgresErrorSummary(sqlState: error.code.rawValue, message: error.message))
            }
            newlyApplied.append(file)
        }
        return newlyApplied
    }

    private func recorded(on connection: PostgresConnection) async throws -> [Applied] {
        let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL")
        guard try exists.first?.decode(Bool.self, at: 0) == true else { return [] }
        return try await connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").map
        { row in
            let (version, name, checksum) = try row.decode((Int, String, String).self)
            return Applied(version: version, name: name, checksum: checksum)
        }
    }
}

extension MigrationError {
    init(code: Code, version: Int, message: String) {
        self.init(code: code, message: message, version: version)
    }
}
