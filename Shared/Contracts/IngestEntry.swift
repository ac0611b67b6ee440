import BuzzKitRedis
import BuzzKitWire
import Foundation

/// One validated event batch on `bk:ingest`: what the gateway enqueues and the ingest service stores.
///
/// Fields of the stream entry (all text except `events`):
/// - `v`: format version, `1`
/// - `tenant`: tenant uuid; `batch`: the batch id answered with 202
/// - `identity`: `s:<subscriberId>` or `a:<anonymousId>`
/// - `received`: receive time, microseconds since 1970
/// - `events`: the events, binary so the consumer never parses JSON (`EventBlob`). The `data` JSON
///   goes to Postgres (`jsonb`) as is.
public struct IngestEntry: Sendable, Hashable {
    /// One event with its `data` already written as compact JSON.
    public struct Event: Sendable, Hashable {
        public var id: String
        public var name: String
        public var timestampMicroseconds: Int64
        public var dataJSON: [UInt8]

        public init(id: String, name: String, timestampMicroseconds: Int64, dataJSON: [UInt8]) {
            self.id = id
            self.name = name
            self.timestampMicroseconds = timestampMicroseconds
            self.dataJSON = dataJSON
        }
    }

    public var tenantId: UUID
    public var batchId: String
    public var identity: EventIdentity
    public var receivedAtMicroseconds: Int64
    public var events: [Event]

    public init(
        tenantId: UUID, batchId: String, identity: EventIdentity, receivedAtMicroseconds: Int64, events: [Event]
    ) {
        self.tenantId = tenantId
        self.batchId = batchId
        self.identity = identity
        self.receivedAtMicroseconds = receivedAtMicroseconds
        self.events = events
    }

    /// The entry for a validated batch.
    public init(tenantId: UUID, batchId: String, batch: EventBatch, receivedAt: Date) {
        self.init(
            tenantId: tenantId, batchId: batchId, identity: batch.identity,
            receivedAtMicroseconds: EventTimestamp.microseconds(receivedAt),
            events: batch.events.map {
                Event(
                    id: $0.id, name: $0.name, timestampMicroseconds: $0.timestampMicroseconds,
                    dataJSON: JSONValue.object($0.data).jsonBytes)
            })
    }

    static let version = "1"

    // MARK: - Encoding

    /// The stream entry's fields.
    public var fields: [(String, [UInt8])] {
        let identityText: String
        switch identity {
        case .subscriber(let id): identityText = "s:" + id
        case .anonymous(let id): identityText = "a:" + id
        }
        return [
            ("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.lowercasedText.utf8)),
            ("batch", Array(batchId.utf8)), ("identity", Array(identityText.utf8)),
            ("received", Array(String(receivedAtMicroseconds).utf8)), ("events", EventBlob.encode(events))
        ]
    }

    // MARK: - Decoding

    /// Reads an entry back; throws `IngestEntryError` for an entry this version cannot read.
    public init(entry: StreamEntry) throws(IngestEntryError) {
        guard entry.string("v") == Self.version else {
            throw IngestEntryError("unsupported entry version \(entry.string("v") ?? "none")")
        }
        guard let tenantText = entry.string("tenant"), let tenant = UUID(uuidText: tenantText) else {
            throw IngestEntryError("missing or invalid tenant")
        }
        guard let batch = entry.string("batch") else { throw IngestEntryError("missing batch id") }
        guard let identityText = entry.string("identity"), identityText.count >= 3 else {
            throw IngestEntryError("missing identity")
        }
        let identityValue = String(identityText.dropFirst(2))
        let identity: EventIdentity
        switch identityText.prefix(2) {
        case "s:": identity = .subscriber(identityValue)
        case "a:": identity = .anonymous(identityValue)
        default: throw IngestEntryError("invalid identity")
        }
        guard let receivedText = entry.string("received"), let received = Int64(receivedText) else {
            throw IngestEntryError("missing receive time")
        }
        guard let blob = entry["events"] else { throw IngestEntryError("missing events") }
        let events = try EventBlob.decode(blob)
        self.init(
            tenantId: tenant, batchId: batch, identity: identity, receivedAtMicroseconds: received, events: events)
    }
}

/// A `bk:ingest` entry that cannot be read (a newer writer, or corruption); it is dead-lettered.
public struct IngestEntryError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = "invalid bk:ingest entry: " + description }
}
