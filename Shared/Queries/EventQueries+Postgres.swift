import BuzzKitPostgres
import BuzzKitWire
import Foundation

extension EventQueries {
    /// One page of a subscriber's events, read on `postgres` (see `list(tenantId:...)` for the
    /// parameters and the `validation_failed` it throws).
    public static func list(
        postgres: PostgresClient, tenantId: UUID, subscriberId: String, name: String? = nil,
        since: String? = nil, cursor: String? = nil, limit: String? = nil
    ) async throws -> EventPage {
        let query = try list(
            tenantId: tenantId, subscriberId: subscriberId, name: name, since: since, cursor: cursor, limit: limit)
        let rows = try await postgres.query(query.sql, query.parameters)
        return try query.page(rows: try rows.textColumns())
    }
}

extension PostgresRows {
    /// Every row as its columns' text (NULL as nil): what the queries of this module decode.
    func textColumns() throws -> [[String?]] {
        try map { row in try (0..<row.columnCount).map { try row.decode(String?.self, at: $0) } }
    }
}
