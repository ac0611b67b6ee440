import Foundation
import BuzzKitWire
import BuzzKitRedis

/// One validated event batch on `bk:ingest`: what the gateway enqueues and the ingest service stores.
///
/// Fields of the stream entry (all text except `events`):
/// - `v`: format version, `1`
/// - `tenant`: tenant uuid; `batch`: the batch id answered with 202
/// - `identity`: `s:<subscriberId>` or `a:<anonymousId>`
/// - `received`: receive time, microseconds since 1970
/// - `events`: the events, binary so the consumer never parses JSON: per event, big-endian
///   `u32 len, id bytes, u32 len, name bytes, i64 timestamp µs, u32 len, data as compact JSON`.
///   The `data` JSON goes to Postgres (`jsonb`) as is.
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

    public init(tenantId: UUID, batchId: String, identity: EventIdentity, receivedAtMicroseconds: Int64, events: [Event]) {
        self.tenantId = tenantId
        self.batchId = batchId
        self.identity = identity
        self.receivedAtMicroseconds = receivedAtMicroseconds
        self.events = events
    }

    /// The entry for a validated batch.
    public init(tenantId: UUID, batchId: String, batch: EventBatch, receivedAt: Date) {
        self.init(tenantId: tenantId, batchId: batchId, identity: batch.identity,
                  receivedAtMicroseconds: EventTimestamp.microseconds(receivedAt),
                  events: batch.events.map {
                      Event(id: $0.id, name: $0.name, timestampMicroseconds: $0.timestampMicroseconds,
                            dataJSON: JSONValue.object($0.data).jsonBytes)
                  })
    }

    static let version = "1"

    // MARK: - Encoding

    /// The stream entry's fields.
    public var fields: [(String, [UInt8])] {
        var blob: [UInt8] = []
        blob.reserveCapacity(events.reduce(0) { $0 + 20 + $1.id.utf8.count + $1.name.utf8.count + $1.dataJSON.count })
        for event in events {
            Self.appendChunk(Array(event.id.utf8), to: &blob)
            Self.appendChunk(Array(event.name.utf8), to: &blob)
            withUnsafeBytes(of: event.timestampMicroseconds.bigEndian) { blob.append(contentsOf: $0) }
            Self.appendChunk(event.dataJSON, to: &blob)
        }
        let identityText: String
        switch identity {
        case .subscriber(let id): identityText = "s:" + id
        case .anonymous(let id): identityText = "a:" + id
        }
        return [("v", Array(Self.version.utf8)), ("tenant", Array(tenantId.uuidString.lowercased().utf8)),
                ("batch", Array(batchId.utf8)), ("identity", Array(identityText.utf8)),
                ("received", Array(String(receivedAtMicroseconds).utf8)), ("events", blob)]
    }

    private static func appendChunk(_ bytes: [UInt8], to blob: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { blob.append(contentsOf: $0) }
        blob.append(contentsOf: bytes)
    }

    // MARK: - Decoding

    /// Reads an entry back; throws `IngestEntryError` for an entry this version cannot read.
    public init(entry: StreamEntry) throws(IngestEntryError) {
        guard entry.string("v") == Self.version else { throw IngestEntryError("unsupported entry version \(entry.string("v") ?? "none")") }
        guard let tenantText = entry.string("tenant"), let tenant = UUID(uuidString: tenantText) else {
            throw IngestEntryError("missing or invalid tenant")
        }
        guard let batch = entry.string("batch") else { throw IngestEntryError("missing batch id") }
        guard let identityText = entry.string("identity"), identityText.count >= 3 else { throw IngestEntryError("missing identity") }
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
        var events: [Event] = []
        var reader = BlobReader(bytes: blob)
        while !reader.atEnd {
            guard let id = reader.chunk(), let name = reader.chunk(), let micros = reader.int64(), let data = reader.chunk() else {
                throw IngestEntryError("truncated events")
            }
            events.append(Event(id: String(decoding: id, as: UTF8.self), name: String(decoding: name, as: UTF8.self),
                                timestampMicroseconds: micros, dataJSON: data))
        }
        self.init(tenantId: tenant, batchId: batch, identity: identity, receivedAtMicroseconds: received, events: events)
    }
}

/// A `bk:ingest` entry that cannot be read (a newer writer, or corruption); it is dead-lettered.
public struct IngestEntryError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = "invalid bk:ingest entry: " + description }
}

struct BlobReader {
    let bytes: [UInt8]
    var offset = 0

    var atEnd: Bool { offset >= bytes.count }

    mutating func uint32() -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for k in 0..<4 { value = value << 8 | UInt32(bytes[offset + k]) }
        offset += 4
        return value
    }

    mutating func int64() -> Int64? {
        guard offset + 8 <= bytes.count else { return nil }
        var value: UInt64 = 0
        for k in 0..<8 { value = value << 8 | UInt64(bytes[offset + k]) }
        offset += 8
        return Int64(bitPattern: value)
    }

    mutating func chunk() -> [UInt8]? {
        guard let length = uint32().map(Int.init), offset + length <= bytes.count else { return nil }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }
}
