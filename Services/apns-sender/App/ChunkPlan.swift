import BuzzKitContracts
import BuzzKitLedger
import BuzzKitPolicy
import BuzzKitWire
import Foundation

/// What happens to each device of a chunk, worked out once per message of the chunk rather than
/// once per device: a fan-out chunk is a few hundred devices of ONE message, and looking the
/// message up by id (and copying what it prepared) for every device, three times over, was a
/// good part of the sender's own CPU per delivery.
struct ChunkPlan {
    /// One message's fate in this chunk. A class with constant fields: handing it out per device
    /// costs a reference count, not a copy of the prepared message.
    final class Message: Sendable {
        /// How its devices end without a push (`DeliverySender.endedUnsent`, the device left to
        /// fill in); nil when they are to be sent.
        let unsent: DeliveryOutcome?
        /// The prepared message, when there is one.
        let message: PreparedMessage?
        /// The message's `decided`, `category` and `governedByPolicy`, read once.
        let decided: SuppressionReason??
        let category: String?
        let governedByPolicy: Bool

        init(unsent: DeliveryOutcome?, message: PreparedMessage?) {
            self.unsent = unsent
            self.message = message
            decided = message?.decided ?? nil
            category = message?.category
            governedByPolicy = message?.governedByPolicy ?? false
        }

        /// The policy's candidate for `device` of this message.
        func candidate(_ device: ChunkDevice) -> PolicyCandidate {
            PolicyCandidate(messageId: device.messageId, subscriberId: device.subscriberId, category: category)
        }
    }

    /// When the plan was made: what expiry is judged against, and the policy's `now`.
    let now: Date
    private var messages: [Message] = []
    /// For each device, its message's index in `messages` (-1: none prepared).
    private var indices: [Int32] = []

    /// `prepared`: each message of the chunk, as `DeliverySender.send` read it.
    init(_ devices: [ChunkDevice], _ prepared: [UUID: DeliverySender.Prepared], now: Date) {
        self.now = now
        indices.reserveCapacity(devices.count)
        var known: [UUID: Int32] = [:]
        var last: (id: UUID, index: Int32)?
        for device in devices {
            var index: Int32 = -1
            if let last, last.id == device.messageId {
                index = last.index
            } else if let found = known[device.messageId] {
                index = found
            } else if let state = prepared[device.messageId] {
                index = Int32(messages.count)
                known[device.messageId] = index
                messages.append(
                    Message(unsent: DeliverySender.endedUnsent(device, state, now: now), message: state.message))
            }
            if index >= 0 { last = (device.messageId, index) }
            indices.append(index)
        }
    }

    /// The message of the device at `position` in the chunk; nil when none was prepared.
    func forDevice(_ position: Int) -> Message? {
        let index = indices[position]
        return index < 0 ? nil : messages[Int(index)]
    }
}
