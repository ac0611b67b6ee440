import BuzzKitRedis
import BuzzKitWire
import Foundation

/// One `bk:events` entry: the newly stored events of one `bk:ingest` entry (one identity's batch),
/// for the workflow scheduler.
///
/// One entry per stored batch rather than per event: publishing per event cost Redis and the
/// ingest service a stream entry (and an AOF append) for every event, about a fifth of the CPU of
/// the whole events path. Published by the ingest service after the events were committed to
/// Postgres, exactly for the events that were new (a retried batch publishes nothing again).
/// Delivery is at least once: after a crash between commit and acknowledgement the same events may
/// appear again, so consumers deduplicate by (`tenant`, event id).
///
/// Fields: `v` (format version, `1`), `tenant` (uuid), `subscriber` (the resolved subscriber id:
/// an anonymous id already linked by identify resolves to its subscriber), `anonymous` (the
/// anonymous id the events were sent under, empty when none), `received` (µs since 1970), and
/// `events` (`EventBlob`: id, name, timestamp µs and compact JSON `data` of each event).
public struct PublishedEventBatch: Sendable, Hashable {
    public var tenantId: UUID
    public var subscriberId: String
    public var anonymousId: String?
    public var receivedAtMicroseconds: Int64
    public var events: [IngestEntry.Event]

    public init(
        tenantId: UUID, subscriberId: String, anonymousId: String?, receivedAtMicroseconds: Int64,
        events: [IngestEntry.Event]
    ) {
        self.tenantId = tenantId
        self.subscriberId = subscriberId
        self.anonymousId = anonymousId
        self.receivedAtMicroseconds = receivedAtMicroseconds
        self.events = events
    }

    static let version = "1"

    /// The stream entry's fields.
    public var fields: [(String, [UInt8])] {
        [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("subscriber", Array(subscriberId.utf8)), ("anonymous", Array((anonymousId ?? "").utf8)),
            ("received", Array(String(receivedAtMicroseconds).utf8)), ("events", EventBlob.encode(events))
        ]
    }

    /// Reads an entry back; throws `IngestEntryError` for an entry this version cannot read.
    public init(entry: StreamEntry) throws(IngestEntryError) {
        guard entry.string("v") == Self.version else {
            throw IngestEntryError("unsupported bk:events version \(entry.string("v") ?? "none")")
        }
        guard let tenantText = entry.string("tenant"), let tenant = UUID(uuidText: tenantText),
            let subscriber = entry.string("subscriber"),
            let received = entry.string("received").flatMap({ Int64($0) }),
            let blob = entry["events"]
        else { throw IngestEntryError("bk:events entry is missing fields") }
        let anonymous = entry.string("anonymous").flatMap { $0.isEmpty ? nil : $0 }
        self.init(
            tenantId: tenant, subscriberId: subscriber, anonymousId: anonymous, receivedAtMicroseconds: received,
            events: try EventBlob.decode(blob))
    }

    /// The batch's events one by one, with the batch's tenant, subscriber and receive time.
    public var publishedEvents: [PublishedEvent] {
        events.map {
            PublishedEvent(
                tenantId: tenantId, eventId: $0.id, name: $0.name, subscriberId: subscriberId, anonymousId: anonymousId,
                timestampMicroseconds: $0.timestampMicroseconds, receivedAtMicroseconds: receivedAtMicroseconds,
                dataJSON: $0.dataJSON)
        }
    }
}
