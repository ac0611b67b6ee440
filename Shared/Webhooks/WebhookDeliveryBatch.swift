import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// A `delivery.sent` batch as it is stored (migration 0030): five parallel columns, one element per
/// delivery, instead of JSON that Postgres would build, compress and print back for every batch.
/// The webhooks service writes the body's `data` from them (`dataJSON`), the shape the API
/// document states (`{"deliveries": [{deliveryId, messageId, subscriberId, deviceToken,
/// environment, sentAt}]}`); `sentAt` is the batch's time, since a batch comes from one statement
/// whose deliveries share it.
public struct WebhookDeliveryBatch: Sendable, Hashable {
    /// The ids as Postgres prints them (lowercase), written as they are.
    public var deliveryIds: [String]
    public var messageIds: [String]
    public var subscriberIds: [String]
    public var deviceTokens: [String]
    public var environments: [String]

    public init(
        deliveryIds: [String], messageIds: [String], subscriberIds: [String], deviceTokens: [String],
        environments: [String]
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
            deliveryIds: try row.decode([String].self, at: first),
            messageIds: try row.decode([String].self, at: first + 1),
            subscriberIds: try row.decode([String].self, at: first + 2),
            deviceTokens: try row.decode([String].self, at: first + 3),
            environments: try row.decode([String].self, at: first + 4))
    }

    /// The batch's columns, in this order, for statements that read or write them.
    public static let columns = [
        "batch_delivery_ids", "batch_message_ids", "batch_subscriber_ids", "batch_device_tokens", "batch_environments"
    ]

    /// The body's `data`; the same bytes for the same batch (every attempt signs the same body).
    public func dataJSON(sentAt: Date) -> String {
        let count = deliveryIds.count
        precondition(
            [messageIds.count, subscriberIds.count, deviceTokens.count, environments.count].allSatisfy { $0 == count },
            "a delivery batch's columns differ in length")
        let sent = WebhookTime.text(sentAt)
        var writer = JSONWriter(capacity: 32 + count * 240)
        writer.raw(#"{"deliveries":["#)
        for index in 0..<count {
            if index > 0 { writer.raw(",") }
            writer.raw(#"{"deliveryId":"#)
            writer.string(deliveryIds[index])
            writer.raw(#","messageId":"#)
            writer.string(messageIds[index])
            writer.raw(#","subscriberId":"#)
            writer.string(subscriberIds[index])
            writer.raw(#","deviceToken":"#)
            writer.string(deviceTokens[index])
            writer.raw(#","environment":"#)
            writer.string(environments[index])
            writer.raw(#","sentAt":"#)
            writer.string(sent)
            writer.raw("}")
        }
        writer.raw("]}")
        return writer.string
    }
}
