import Foundation
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitWire

// Runs the `BuzzKitContracts` queries on a `PostgresClient`. This is what the gateway's routes do;
// if BuzzKitContracts gains a BuzzKitPostgres dependency, this file can move there unchanged.

extension EventQueries {
    /// One page of a subscriber's events (see `EventQueries.list(tenantId:...)`).
    public static func list(postgres: PostgresClient, tenantId: UUID, subscriberId: String, name: String? = nil,
                            since: String? = nil, cursor: String? = nil, limit: String? = nil) async throws -> EventPage {
        let query = try list(tenantId: tenantId, subscriberId: subscriberId, name: name, since: since, cursor: cursor, limit: limit)
        let rows = try await postgres.query(query.sql, query.parameters)
        return try query.page(rows: try rows.map { row in try (0..<row.columnCount).map { try row.decode(String?.self, at: $0) } })
    }
}

extension ReceiptQueries {
    /// Receipt counts by message id.
    public static func counts(postgres: PostgresClient, tenantId: UUID, messageIds: [String]) async throws -> [String: ReceiptCounts] {
        let query = counts(tenantId: tenantId, messageIds: messageIds)
        let rows = try await postgres.query(query.sql, [query.tenantId, query.messageIds])
        return query.counts(rows: try rows.map { row in try (0..<row.columnCount).map { try row.decode(String?.self, at: $0) } })
    }
}
