import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWire
import Foundation

/// The array parameters of `EventWriter.claimSQL` (and `aliasSQL`), written as array literals
/// byte by byte (`PostgresArrayText`): about 1 µs per event, where going through `String`
/// scalar by scalar cost several.
struct EventClaimArrays {
    private var tenants = PostgresArrayText(), subscribers = PostgresArrayText(), anonymous = PostgresArrayText(),
        entryIDs = PostgresArrayText()
    private var ordinals = PostgresArrayText(), ids = PostgresArrayText()

    /// The arrays of `entries` and of the events at `sent` (entry index, event index), in order.
    init(entries: [(id: StreamEntryID, entry: IngestEntry)], sent: [(entry: Int32, event: Int32)] = []) {
        for (streamID, entry) in entries {
            appendEntry(tenant: entry.tenantId, identity: entry.identity, entryID: streamID.description)
        }
        for position in sent {
            appendEvent(
                entryOrdinal: Int(position.entry) + 1,
                id: entries[Int(position.entry)].entry.events[Int(position.event)].id)
        }
    }

    private mutating func appendEntry(tenant: UUID, identity: EventIdentity, entryID: String) {
        tenants.append(tenant)
        switch identity {
        case .subscriber(let id):
            subscribers.append(id)
            anonymous.appendNull()
        case .anonymous(let id):
            subscribers.appendNull()
            anonymous.append(id)
        }
        entryIDs.append(entryID)
    }

    private mutating func appendEvent(entryOrdinal: Int, id: String) {
        ordinals.append(entryOrdinal)
        ids.append(id)
    }

    /// `EventWriter.aliasSQL`'s: the entries' tenants and anonymous ids (NULL for a subscriber's
    /// entry), without the claim's other arrays.
    static func aliasParameters(_ entries: [(id: StreamEntryID, entry: IngestEntry)]) -> [any PostgresEncodable] {
        var tenants = PostgresArrayText(capacity: 2 + entries.count * 37)
        var anonymous = PostgresArrayText()
        for (_, entry) in entries {
            tenants.append(entry.tenantId)
            anonymous.append(entry.identity.isAnonymous ? entry.identity.value : nil)
        }
        return [tenants.value, anonymous.value]
    }

    /// `EventWriter.claimSQL`'s.
    var parameters: [any PostgresEncodable] {
        [tenants, subscribers, anonymous, entryIDs, ordinals, ids].map { $0.value }
    }
}
