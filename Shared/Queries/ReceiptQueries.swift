import BuzzKitWire
import Foundation

/// Receipt counts of distinct subscribers per message, as the ingest service keeps them
/// (`message_receipt_counts`), for `GET /v1/messages/{id}`. Same pattern as `EventQueries`:
/// `counts(postgres:...)` runs the query `counts(tenantId:messageIds:)` builds and decodes its rows.
public enum ReceiptQueries {
    /// Counts for `messageIds` of one tenant; messages without receipts are absent from the result.
    public static func counts(tenantId: UUID, messageIds: [String]) -> ReceiptCountsQuery {
        ReceiptCountsQuery(
            sql: """
                SELECT message_id, delivered::text, opened::text, dismissed::text
                FROM message_receipt_counts WHERE tenant_id = $1::uuid AND message_id = ANY ($2::text[])
                """,
            tenantId: tenantId.lowercasedText, messageIds: messageIds)
    }
}

/// A built receipt-count query. `parameters`: the tenant id text and the message ids.
public struct ReceiptCountsQuery: Sendable {
    public var sql: String
    public var tenantId: String
    public var messageIds: [String]

    /// Decodes rows of text columns into counts by message id.
    public func counts(rows: [[String?]]) -> [String: ReceiptCounts] {
        var result: [String: ReceiptCounts] = [:]
        for row in rows where row.count >= 4 {
            guard let id = row[0] else { continue }
            result[id] = ReceiptCounts(
                delivered: row[1].flatMap { Int($0) } ?? 0, opened: row[2].flatMap { Int($0) } ?? 0,
                dismissed: row[3].flatMap { Int($0) } ?? 0)
        }
        return result
    }
}

/// How many distinct subscribers reported each receipt for one message.
public struct ReceiptCounts: Sendable, Hashable {
    public var delivered: Int
    public var opened: Int
    public var dismissed: Int

    public init(delivered: Int = 0, opened: Int = 0, dismissed: Int = 0) {
        self.delivered = delivered
        self.opened = opened
        self.dismissed = dismissed
    }

    /// `{"delivered": n, "opened": n, "dismissed": n}` (the message's `receipts`).
    public var jsonValue: JSONValue {
        ["delivered": .int(Int64(delivered)), "opened": .int(Int64(opened)), "dismissed": .int(Int64(dismissed))]
    }

    /// `opened / audience` (e.g. the message's sent deliveries' subscribers), nil when `audience` is 0.
    public func openRate(audience: Int) -> Double? {
        audience > 0 ? Double(opened) / Double(audience) : nil
    }
}
