import Foundation
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitWire

/// The array parameters of `EventWriter.claimSQL` (and `aliasSQL`), written straight into PostgreSQL's array
/// text form as bytes (`{"a","b\"c",NULL}`): about 1 µs per event, where going through `String`
/// scalar by scalar cost several. Only `"` and `\` need escaping inside a quoted element.
struct EventClaimArrays {
    private var tenants = EventArrayText(), subscribers = EventArrayText(), anonymous = EventArrayText(), entryIDs = EventArrayText()
    private var ordinals = EventArrayText(), ids = EventArrayText()

    mutating func appendEntry(tenant: UUID, identity: EventIdentity, entryID: String) {
        tenants.appendBare(tenant.uuidString)
        switch identity {
        case .subscriber(let id): subscribers.append(id); anonymous.appendNull()
        case .anonymous(let id): subscribers.appendNull(); anonymous.append(id)
        }
        entryIDs.appendBare(entryID)
    }

    mutating func appendEvent(entryOrdinal: Int, id: String) {
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
