import Foundation
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitWire
import BuzzKitRedis

/// The array parameters of `EventWriter.claimSQL` (and `aliasSQL`), written straight into PostgreSQL's array
/// text form as bytes (`{"a","b\"c",NULL}`): about 1 µs per event, where going through `String`
/// scalar by scalar cost several. Only `"` and `\` need escaping inside a quoted element.
struct EventClaimArrays {
    private var tenants = EventArrayText(), subscribers = EventArrayText(), anonymous = EventArrayText(), entryIDs = EventArrayText()
    private var ordinals = EventArrayText(), ids = EventArrayText()

    /// The arrays of `entries` and of the events at `sent` (entry index, event index), in order.
    init(entries: [(id: StreamEntryID, entry: IngestEntry)], sent: [(entry: Int32, event: Int32)] = []) {
        for (streamID, entry) in entries {
            appendEntry(tenant: entry.tenantId, identity: entry.identity, entryID: streamID.description)
        }
        for position in sent {
            appendEvent(entryOrdinal: Int(position.entry) + 1, id: entries[Int(position.entry)].entry.events[Int(position.event)].id)
        }
    }

    private mutating func appendEntry(tenant: UUID, identity: EventIdentity, entryID: String) {
        tenants.appendBare(tenant.lowercasedText)
        switch identity {
        case .subscriber(let id): subscribers.append(id); anonymous.appendNull()
        case .anonymous(let id): subscribers.appendNull(); anonymous.append(id)
        }
        entryIDs.appendBare(entryID)
    }

    private mutating func appendEvent(entryOrdinal: Int, id: String) {
        ordinals.appendBare(String(entryOrdinal))
        ids.append(id)
    }

    /// `EventWriter.aliasSQL`'s: the entries' tenants and anonymous ids.
    var aliasParameters: [any PostgresEncodable] { [tenants.value, anonymous.value] }

    /// `EventWriter.claimSQL`'s.
    var parameters: [any PostgresEncodable] {
        [tenants, subscribers, anonymous, entryIDs, ordinals, ids].map { $0.value }
    }
}
