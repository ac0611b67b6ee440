import BuzzKitWire
import Foundation

/// One newly stored event, as the workflow scheduler reads it from a `bk:events` entry
/// (`PublishedEventBatch.publishedEvents`).
public struct PublishedEvent: Sendable, Hashable {
    public var tenantId: UUID
    public var eventId: String
    public var name: String
    public var subscriberId: String
    public var anonymousId: String?
    public var timestampMicroseconds: Int64
    public var receivedAtMicroseconds: Int64
    public var dataJSON: [UInt8]

    public init(
        tenantId: UUID, eventId: String, name: String, subscriberId: String, anonymousId: String?,
        timestampMicroseconds: Int64, receivedAtMicroseconds: Int64, dataJSON: [UInt8]
    ) {
        self.tenantId = tenantId
        self.eventId = eventId
        self.name = name
        self.subscriberId = subscriberId
        self.anonymousId = anonymousId
        self.timestampMicroseconds = timestampMicroseconds
        self.receivedAtMicroseconds = receivedAtMicroseconds
        self.dataJSON = dataJSON
    }

    /// `data` parsed (`{}` when it cannot be).
    public var data: [String: JSONValue] { ((try? JSONValue.parse(dataJSON))?.objectValue) ?? [:] }

    public var timestamp: Date { Date(timeIntervalSince1970: Double(timestampMicroseconds) / 1_000_000) }
}
