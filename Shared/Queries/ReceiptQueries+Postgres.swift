import BuzzKitPostgres
import Foundation

extension ReceiptQueries {
    /// Receipt counts by message id, read on `postgres`; messages without receipts are absent.
    public static func counts(postgres: PostgresClient, tenantId: UUID, messageIds: [String]) async throws -> [String:
        ReceiptCounts]
    {
        let query = counts(tenantId: tenantId, messageIds: messageIds)
        let rows = try await postgres.query(query.sql, [query.tenantId, query.messageIds])
        return query.counts(rows: try rows.textColumns())
    }

    /// The counts of one message (zeros when it has no receipts yet).
    public static func counts(postgres: PostgresClient, tenantId: UUID, messageId: String) async throws -> ReceiptCounts
    {
        try await counts(postgres: postgres, tenantId: tenantId, messageIds: [messageId]).values.first
            ?? ReceiptCounts()
    }
}
