import Foundation
import BuzzKitWire
import BuzzKitRedis

/// One newly stored event on `bk:events`, for the workflow scheduler (one entry per event).
///
/// Published by the ingest service after the event was committed to Postgres, exactly for the
/// events that were new (a retried batch publishes nothing again). Delivery is at least once: after
/// a crash between commit and acknowledgement the same event may appear twice, so consumers
/// deduplicate by (`tenant`, `event`).
///
/// Fields: `tenant` (uuid), `event` (the client's event id), `name`, `subscriber` (the resolved
/// subscriber id: an anonymous id already linked by identify resolves to its subscriber), `anonymous`
/// (the anonymous id the event was sent under, empty when none), `timestamp` (µs since 1970),
/// `received` (µs), `data` (compact JSON object).
public struct PublishedEvent: Sendable, Hashable {
    public var tenantId: UUID
    public var eventId: String
    public var name: String
    public var subscriberId: String
    public var anonymousId: String?
    public var timestampMicroseconds: Int64
    public var receivedAtMicroseconds: Int64
    public var dataJSON: [UInt8]

    public init(tenantId: UUID, eventId: String, name: String, subscriberId: String, anonymousId: String?,
                timestampMicroseconds: Int64, receivedAtMicroseconds: Int64, dataJSON: [UInt8]) {
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

    public var fields: [(String, [UInt8])] {
        [("tenant", Array(tenantId.uuidString.lowercased().utf8)), ("event", Array(eventId.utf8)), ("name", Array(name.utf8)),
         ("subscriber", Array(subscriberId.utf8)), ("anonymous", Array((anonymousId ?? "").utf8)),
         ("timestamp", Array(String(timestampMicroseconds).utf8)), ("received", Array(String(receivedAtMicroseconds).utf8)),
         ("data", dataJSON)]
    }

    public init(entry: StreamEntry) throws(IngestEntryError) {
        guard let tenantText = entry.string("tenant"), let tenant = UUID(uuidString: tenantText),
              let event = entry.string("event"), let name = entry.string("name"), let subscriber = entry.string("subscriber"),
              let timestamp = entry.string("timestamp").flatMap({ Int64($0) }),
              let received = entry.string("received").flatMap({ Int64($0) })
        else { throw IngestEntryError("bk:events entry is missing fields") }
        let anonymous = entry.string("anonymous").flatMap { $0.isEmpty ? nil : $0 }
        self.init(tenantId: tenant, eventId: event, name: name, subscriberId: subscriber, anonymousId: anonymous,
                  timestampMicroseconds: timestamp, receivedAtMicroseconds: received, dataJSON: entry["data"] ?? Array("{}".utf8))
    }
}
