import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// A `delivery.sent` batch as it is stored (migration 0030): five parallel columns, one element per
/// delivery, instead of JSON that Postgres would build, compress and print back for every batch.
/// The webhooks service writes the body's `data` from them (`dataJSON`), the shape the API
/// document states (`{"deliveries": [{deliveryId, messageId, subscriberId, deviceToken,
/// environment, sentAt}]}`); `sentAt` is the batch's time, since a batch comes from one statement
/// whose deliveries share it. The columns are kept as Postgres printed them (`PostgresFlatArray`:
/// the ids in lowercase), and written out without a `String` per element.
public struct WebhookDeliveryBatch: Sendable {
    public var deliveryIds: PostgresFlatArray
    public var messageIds: PostgresFlatArray
    public var subscriberIds: PostgresFlatArray
    public var deviceTokens: PostgresFlatArray
    public var environments: PostgresFlatArray

    public init(
        deliveryIds: PostgresFlatArray, messageIds: PostgresFlatArray, subscriberIds: PostgresFlatArray,
        deviceTokens: PostgresFlatArray, environments: PostgresFlatArray
    ) {
        self.deliveryIds = deliveryIds
        self.messageIds = messageIds
        self.subscriberIds = subscriberIds
        self.deviceTokens = deviceTokens
        self.environments = environments
    }

    /// Reads a batch selected as `columns`, in their order, from the row's column `first` on.
    public init(row: PostgresRow, from first: Int) throws {
        self.init(
            deliveryIds: try row.decode(at: first), messageIds: try row.decode(at: first + 1),
            subscriberIds: try row.decode(at: first + 2), deviceTokens: try row.decode(at: first + 3),
            environments: try row.decode(at: first + 4))
    }

    /// The batch's columns, in this order, for statements that read or write them.
    public static let columns = [
        "batch_delivery_ids", "batch_message_ids", "batch_subscriber_ids", "batch_device_tokens", "batch_environments"
    ]

    /// `columns` as a select or insert list, each as `alias.column` when an alias is given.
    public static func columnList(_ alias: String? = nil) -> String {
        columns.map { column in alias.map { "\($0).\(column)" } ?? column }.joined(separator: ", ")
    }

    /// The body's `data`; the same bytes for the same batch (every attempt signs the same body).
    /// One item per delivery id; an element that is NULL or missing (the producers' seam writes
    /// neither: the columns are NOT NULL in `deliveries`) is written as `null`, so a row edited by
    /// hand cannot stop the replica's claims.
    public func dataJSON(sentAt: Date) -> String {
        let members: [(key: StaticString, column: PostgresFlatArray)] = [
            (#"{"deliveryId":"#, deliveryIds), (#","messageId":"#, messageIds),
            (#","subscriberId":"#, subscriberIds), (#","deviceToken":"#, deviceTokens),
            (#","environment":"#, environments)
        ]
        let count = deliveryIds.count
        let sent = WebhookTime.text(sentAt)
        var writer = JSONWriter(capacity: 32 + count * 240)
        writer.raw(#"{"deliveries":["#)
        for index in 0..<count {
            if index > 0 { writer.raw(",") }
            for member in members {
                writer.raw(member.key)
                let column = member.column
                guard index < column.count, !column.isNull(index) else {
                    writer.raw("null")
                    continue
                }
                column.bytes.withUnsafeBufferPointer {
                    writer.string(utf8: UnsafeBufferPointer(rebasing: $0[column.range(index)]))
                }
            }
            writer.raw(#","sentAt":"#)
            writer.string(sent)
            writer.raw("}")
        }
        writer.raw("]}")
        return writer.string
    }
}
