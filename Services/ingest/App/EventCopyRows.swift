import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The `COPY events (...) FROM STDIN` text of newly claimed events, in `EventWriter.eventColumns`
/// order, written as bytes: the per-entry fields (tenant, subscriber, anonymous id, receive time)
/// are encoded once per entry, timestamps straight from microseconds to
/// `YYYY-MM-DD HH:MM:SS.ffffff+00` (no `DateFormatter`, no `String`).
struct EventCopyRows {
    private(set) var text: PostgresCopyText
    private var current: (entry: Int, fields: EntryFields)?

    init(capacity: Int) { text = PostgresCopyText(capacity: capacity) }

    /// One event of entry number `entryIndex` (the entry's fields are encoded once while
    /// consecutive events share it).
    mutating func append(entryIndex key: Int, entry: IngestEntry, subscriberId: String, event: IngestEntry.Event) {
        let fields: EntryFields
        if let current, current.entry == key {
            fields = current.fields
        } else {
            fields = EntryFields(entry: entry, subscriberId: subscriberId)
            current = (key, fields)
        }
        text.appendUnescaped(bytes: fields.tenant)
        text.append(event.id)
        text.append(event.name)
        text.append(bytes: fields.subscriber)
        if let anonymous = fields.anonymous { text.append(bytes: anonymous) } else { text.appendNull() }
        text.append(bytes: event.dataJSON)
        text.appendTimestamp(microseconds: event.timestampMicroseconds)
        text.appendUnescaped(bytes: fields.received)
        text.endRow()
    }

    private struct EntryFields {
        let tenant: [UInt8]
        let subscriber: [UInt8]
        let anonymous: [UInt8]?
        let received: [UInt8]

        init(entry: IngestEntry, subscriberId: String) {
            tenant = Array(entry.tenantId.lowercasedText.utf8)
            subscriber = Array(subscriberId.utf8)
            anonymous = entry.identity.isAnonymous ? Array(entry.identity.value.utf8) : nil
            received = PostgresCopyText.timestamp(microseconds: entry.receivedAtMicroseconds)
        }
    }
}
