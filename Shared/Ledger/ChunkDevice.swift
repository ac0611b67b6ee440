import BuzzKitAPNs
import BuzzKitCrypto
import BuzzKitWire
import Foundation

/// One device of a chunk: where one push goes, and the delivery it becomes.
public struct ChunkDevice: Sendable, Hashable {
    public var messageId: UUID
    public var token: String
    public var subscriberId: String
    public var environment: String
    /// The delivery's id, and the `apns-id` of every push of it: `DeliveryID.make` (the same as
    /// SQL's `bk_delivery_id`).
    public var deliveryId: String

    public init(messageId: UUID, token: String, subscriberId: String, environment: String) {
        self.messageId = messageId
        self.token = token
        self.subscriberId = subscriberId
        self.environment = environment
        deliveryId = DeliveryID.make(message: messageId, token: token)
    }

    public var apnsEnvironment: APNsEnvironment { APNsEnvironment(rawValue: environment) ?? .production }
}

/// What a chunk holds and who sends it, as `delivery_chunks.kind` stores it (migration 0018).
///
/// - `push`: pushes apns-sender sends (a fan-out page's chunk, a batch of direct messages). A
///   stale one (its replica stopped mid-send) is taken over by another replica and sent again
///   under the same apns-ids and collapse ids.
/// - `liveActivity`: one Live Activity request's tokens, written claimed by the deciding
///   statement of the liveactivity replica that sends them. A stale one is recorded as lost
///   (`failed` / `sender_lost`), never sent again.
public enum ChunkKind: String, Sendable, Hashable, CaseIterable {
    case push
    case liveActivity = "live_activity"
}

/// A chunk this replica holds (`delivery_chunks.sending_by` is its name): it sends every device,
/// then records them and deletes the chunk in one statement (`Ledger.record`).
public struct ClaimedChunk: Sendable {
    public var id: UUID
    public var tenantId: UUID
    /// The chunk's own message (a fan-out page's chunk, a Live Activity request's); nil for a
    /// batch of direct messages (several messages, each wholly in this chunk).
    public var messageId: UUID?
    public var kind: ChunkKind
    /// In the order they were queued (a device named twice gets its pushes in that order).
    public var devices: [ChunkDevice]
    /// Set when this replica took the chunk over from one that stopped mid-send: that replica's
    /// name and when it had claimed the chunk. Its attempts are recorded as unknown before this
    /// one's.
    public var lost: (replica: String, claimedAt: Date)?

    public init(
        id: UUID, tenantId: UUID, messageId: UUID?, kind: ChunkKind = .push, devices: [ChunkDevice],
        lost: (replica: String, claimedAt: Date)? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.messageId = messageId
        self.kind = kind
        self.devices = devices
        self.lost = lost
    }
}

/// Delivery ids: name-based on (message, device token), so a message reaches a device once by the
/// primary key alone and every push of a delivery carries the same `apns-id`, whoever sends it.
public enum DeliveryID {
    /// The lowercase text of `bk_delivery_id(message, token)`: `UUID.nameBased` of
    /// `"<message>:<token>"`, the name written straight into one byte buffer (the claim makes one
    /// per device of every chunk: the string interpolation of the general form was half its cost).
    public static func make(message: UUID, token: String) -> String {
        var name: [UInt8] = []
        name.reserveCapacity(37 + token.utf8.count)
        message.appendLowercasedText(to: &name)
        name.append(UInt8(ascii: ":"))
        name.append(contentsOf: token.utf8)
        return UUID.nameBased(utf8: name).lowercasedText
    }
}
