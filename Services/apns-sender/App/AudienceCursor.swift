import BuzzKitAudience
import BuzzKitCore
import BuzzKitPostgres

/// Streams an expression's audience into the fan-out: ONE statement (`AudienceQuery.all`, in id
/// order) read through a server-side cursor, `FETCH pageSize` at a time, so the event subqueries
/// of `did`/`count` run once per send instead of once per keyset page, and at most one page of
/// ids is in memory.
///
/// The cursor lives in a read-only transaction on a connection of its own (opened here, closed
/// when the stream ends or fails), so a long fan-out never holds one of the pool's connections
/// while its pages are written through the pool. The transaction starts with
/// `AudienceQuery.settings`. A failure rolls the transaction back (it wrote nothing) and is
/// rethrown; the caller resumes after the last id it recorded (`AudienceQuery.all(after:)`).
enum AudienceCursor {
    static let name = "bk_audience"

    /// Calls `page` with each page of at most `pageSize` subscriber ids (never an empty one), in
    /// id order, until the audience is exhausted.
    static func stream(
        _ query: AudienceSQL, configuration: PostgresConfiguration, logger: Logger, pageSize: Int,
        page: ([String]) async throws -> Void
    ) async throws {
        let size = max(1, pageSize)
        let connection = try await PostgresConnection.connect(configuration: configuration, logger: logger)
        do {
            try await connection.withTransaction { tx in
                try await tx.execute("SET TRANSACTION READ ONLY")
                try await tx.execute(AudienceQuery.settings)
                try await tx.execute("DECLARE \(name) NO SCROLL CURSOR FOR \(query.sql)", query.parameters)
                while true {
                    let rows = try await tx.query("FETCH \(size) FROM \(name)")
                    let ids = try rows.map { try $0.decode(String.self, at: 0) }
                    if !ids.isEmpty { try await page(ids) }
                    if ids.count < size { break }
                }
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }
}
