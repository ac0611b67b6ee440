import Foundation
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitWire

/// The ten array parameters of `EventWriter.sql`, written straight into PostgreSQL's array text
/// form as bytes (`{"a","b\"c",NULL}`): about 1 µs per event, where going through `String`
/// scalar by scalar cost several. Only `"` and `\` need escaping inside a quoted element.
struct EventWriterArrays {
    private var tenants = Literal(), subscribers = Literal(), anonymous = Literal(), received = Literal(), entryIDs = Literal()
    private var ordinals = Literal(), ids = Literal(), names = Literal(), data = Literal(), occurred = Literal()

    mutating func appendEntry(tenant: UUID, identity: EventIdentity, receivedMicroseconds: Int64, entryID: String) {
        tenants.appendBare(tenant.uuidString)
        switch identity {
        case .subscriber(let id): subscribers.append(id); anonymous.appendNull()
        case .anonymous(let id): subscribers.appendNull(); anonymous.append(id)
        }
        received.appendBare(String(receivedMicroseconds))
        entryIDs.appendBare(entryID)
    }

    mutating func appendEvent(entryOrdinal: Int, id: String, name: String, dataJSON: [UInt8], timestampMicroseconds: Int64) {
        ordinals.appendBare(String(entryOrdinal))
        ids.append(id)
        names.append(name)
        data.append(bytes: dataJSON)
        occurred.appendBare(String(timestampMicroseconds))
    }

    var parameters: [any PostgresEncodable] {
        [tenants, subscribers, anonymous, received, entryIDs, ordinals, ids, names, data, occurred].map { $0.value }
    }

    /// One array literal being written.
    private struct Literal {
        var bytes: [UInt8] = [UInt8(ascii: "{")]

        private mutating func separate() { if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) } }

        /// An element that needs no quoting (numbers, uuids, stream ids).
        mutating func appendBare(_ text: String) {
            separate()
            bytes.append(contentsOf: text.utf8)
        }

        mutating func appendNull() {
            separate()
            bytes.append(contentsOf: "NULL".utf8)
        }

        mutating func append(_ text: String) {
            var text = text
            text.withUTF8 { append(buffer: $0) }
        }

        mutating func append(bytes element: [UInt8]) {
            element.withUnsafeBufferPointer { append(buffer: $0) }
        }

        private mutating func append(buffer: UnsafeBufferPointer<UInt8>) {
            separate()
            bytes.append(UInt8(ascii: "\""))
            for byte in buffer {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }

        var value: PostgresValue { PostgresValue(bytes: bytes + [UInt8(ascii: "}")], format: .text) }
    }
}

/// The `bk:events` fields of one entry's events (see `PublishedEvent`), with the per-entry parts
/// (tenant, subscriber, anonymous id, receive time) encoded once.
struct PublishedEventFields {
    let tenant: [UInt8]
    let subscriber: [UInt8]
    let anonymous: [UInt8]
    let received: [UInt8]

    init(entry: IngestEntry, subscriberId: String) {
        tenant = Array(entry.tenantId.uuidString.lowercased().utf8)
        subscriber = Array(subscriberId.utf8)
        anonymous = entry.identity.isAnonymous ? Array(entry.identity.value.utf8) : []
        received = Array(String(entry.receivedAtMicroseconds).utf8)
    }

    func fields(for event: IngestEntry.Event) -> [(String, [UInt8])] {
        [("tenant", tenant), ("event", Array(event.id.utf8)), ("name", Array(event.name.utf8)), ("subscriber", subscriber),
         ("anonymous", anonymous), ("timestamp", Array(String(event.timestampMicroseconds).utf8)), ("received", received),
         ("data", event.dataJSON)]
    }
}
