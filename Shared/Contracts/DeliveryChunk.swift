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
        var ids: [UInt8] = []
        ids.reserveCapacity(deliveryIds.count * 16)
        for id in deliveryIds {
            withUnsafeBytes(of: id.uuid) { ids.append(contentsOf: $0) }
        }
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
        guard let raw = entry["ids"], raw.count % 16 == 0 else {
            throw StreamContractError("bk:deliveries", "invalid ids")
        }
        var ids: [UUID] = []
        ids.reserveCapacity(raw.count / 16)
        var offset = 0
        while offset < raw.count {
            let b = raw[offset..<offset + 16].map { $0 }
            ids.append(
                UUID(
                    uuid: (
                        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                        b[12], b[13], b[14], b[15]
                    )))
            offset += 16
        }
        self.init(tenantId: tenant, messageId: message, deliveryIds: ids)
    }
}
