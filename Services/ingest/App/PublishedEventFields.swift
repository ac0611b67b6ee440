import Foundation
import BuzzKitContracts

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
