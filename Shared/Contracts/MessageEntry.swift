import BuzzKitRedis
import BuzzKitWire
import Foundation

/// Messages to send, on `bk:messages` (one message to fan out) or its direct sibling (one or
/// more direct messages of one tenant): just their identity, the rest is in Postgres
/// (`messages` rows), so the entry stays tiny and the rows are the single source of truth.
///
/// Fields: `v` (`1`), `tenant` (uuid), `message` (the first message's uuid), and `more` (the
/// further messages' uuids, 16 raw bytes each, in order) when there are several. A workflow puts
/// the sends of one claim in one entry, so one run's messages go out in the order it made them
/// (`DirectMessages` sends a device's pushes of one batch in turn). A reader that predates `more`
/// handles the first message; the outbox sweeper re-enqueues the others.
public struct MessageEntry: Sendable, Hashable {
    public var tenantId: UUID
    /// At least one, in the order they were made.
    public var messageIds: [UUID]

    /// The first (for an audience's entry, the only) message.
    public var messageId: UUID { messageIds[0] }

    public init(tenantId: UUID, messageId: UUID) {
        self.init(tenantId: tenantId, messageIds: [messageId])
    }

    /// - Precondition: `messageIds` is not empty.
    public init(tenantId: UUID, messageIds: [UUID]) {
        precondition(!messageIds.isEmpty, "a MessageEntry names at least one message")
        self.tenantId = tenantId
        self.messageIds = messageIds
    }

    static let version = "1"

    public var fields: [(String, [UInt8])] {
        var fields: [(String, [UInt8])] = [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("message", Array(messageId.lowercasedText.utf8))
        ]
        if messageIds.count > 1 { fields.append(("more", UUID.rawBytes(messageIds.dropFirst()))) }
        return fields
    }

    /// Reads an entry back; throws for an entry this version cannot read (it is dead-lettered).
    public init(entry: StreamEntry) throws(StreamContractError) {
        guard entry.string("v") == Self.version else {
            throw StreamContractError("bk:messages", "unsupported entry version")
        }
        guard let tenant = entry.string("tenant").flatMap(UUID.init(uuidText:)),
            let message = entry.string("message").flatMap(UUID.init(uuidText:))
        else { throw StreamContractError("bk:messages", "missing or invalid tenant/message id") }
        var ids = [message]
        if let more = entry["more"] {
            guard let parsed = UUID.parse(rawBytes: more) else {
                throw StreamContractError("bk:messages", "invalid further message ids")
            }
            ids += parsed
        }
        self.init(tenantId: tenant, messageIds: ids)
    }
}

extension UUID {
    /// `ids` packed as 16 raw bytes each (read back by `parse(rawBytes:)`).
    static func rawBytes(_ ids: some Collection<UUID>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ids.count * 16)
        for id in ids { withUnsafeBytes(of: id.uuid) { bytes.append(contentsOf: $0) } }
        return bytes
    }

    /// UUIDs packed as 16 raw bytes each (`MessageEntry`'s further messages); nil when the length
    /// is not a multiple of 16.
    static func parse(rawBytes raw: [UInt8]) -> [UUID]? {
        guard raw.count % 16 == 0 else { return nil }
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
        return ids
    }
}

/// A stream entry that cannot be read (a newer writer, or corruption).
public struct StreamContractError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ stream: String, _ reason: String) { description = "invalid \(stream) entry: \(reason)" }
}
