import Foundation
import BuzzKitRedis
import BuzzKitWire

/// One message to fan out, on `bk:messages`: just its identity, the rest is in Postgres
/// (`messages` row), so the entry stays tiny and the row is the single source of truth.
///
/// Fields: `v` (`1`), `tenant` (uuid), `message` (uuid).
public struct MessageEntry: Sendable, Hashable {
    public var tenantId: UUID
    public var messageId: UUID

    public init(tenantId: UUID, messageId: UUID) {
        self.tenantId = tenantId
        self.messageId = messageId
    }

    static let version = "1"

    public var fields: [(String, [UInt8])] {
        [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("message", Array(messageId.lowercasedText.utf8))
        ]
    }

    /// Reads an entry back; throws for an entry this version cannot read (it is dead-lettered).
    public init(entry: StreamEntry) throws(StreamContractError) {
        guard entry.string("v") == Self.version else {
            throw StreamContractError("bk:messages", "unsupported entry version")
        }
        guard let tenant = entry.string("tenant").flatMap(UUID.init(uuidText:)),
            let message = entry.string("message").flatMap(UUID.init(uuidText:))
        else { throw StreamContractError("bk:messages", "missing or invalid tenant/message id") }
        self.init(tenantId: tenant, messageId: message)
    }
}

/// A stream entry that cannot be read (a newer writer, or corruption).
public struct StreamContractError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ stream: String, _ reason: String) { description = "invalid \(stream) entry: \(reason)" }
}
