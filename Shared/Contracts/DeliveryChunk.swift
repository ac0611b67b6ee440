import Foundation
import BuzzKitRedis
import BuzzKitWire

/// A chunk of deliveries of one message, on `bk:deliveries`: what one sender replica sends in
/// one go. The deliveries themselves (token, status) are rows in Postgres; a chunk names them.
///
/// Fields: `v` (`1`), `tenant`, `message` (uuids), `ids` (the delivery uuids, 16 raw bytes each).
/// Redelivering a chunk is harmless: the sender only claims deliveries still `queued`.
public struct DeliveryChunk: Sendable, Hashable {
    /// Deliveries per chunk the fan-out writes by default.
    public static let defaultSize = 100

    public var tenantId: UUID
    public var messageId: UUID
    public var deliveryIds: [UUID]

    public init(tenantId: UUID, messageId: UUID, deliveryIds: [UUID]) {
        self.tenantId = tenantId
        self.messageId = messageId
        self.deliveryIds = deliveryIds
    }

    static let version = "1"

    public var fields: [(String, [UInt8])] {
        let ids = UUID.rawBytes(deliveryIds)
        return [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("message", Array(messageId.lowercasedText.utf8)), ("ids", ids)
        ]
    }

    public init(entry: StreamEntry) throws(StreamContractError) {
        guard entry.string("v") == Self.version else {
            throw StreamContractError("bk:deliveries", "unsupported entry version")
        }
        guard let tenant = entry.string("tenant").flatMap(UUID.init(uuidText:)),
            let message = entry.string("message").flatMap(UUID.init(uuidText:))
        else { throw StreamContractError("bk:deliveries", "missing or invalid tenant/message id") }
        guard let raw = entry["ids"], let ids = UUID.parse(rawBytes: raw) else {
            throw StreamContractError("bk:deliveries", "invalid ids")
        }
        self.init(tenantId: tenant, messageId: message, deliveryIds: ids)
    }
}
