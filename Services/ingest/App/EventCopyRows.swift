import Foundation
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitWire

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
        text.appendUnescaped(bytes: Self.timestamp(event.timestampMicroseconds))
        text.appendUnescaped(bytes: fields.received)
        text.endRow()
    }

    private struct EntryFields {
        let tenant: [UInt8]
        let subscriber: [UInt8]
        let anonymous: [UInt8]?
        let received: [UInt8]

        init(entry: IngestEntry, subscriberId: String) {
            tenant = Array(entry.tenantId.uuidString.utf8)
            subscriber = Array(subscriberId.utf8)
            anonymous = entry.identity.isAnonymous ? Array(entry.identity.value.utf8) : nil
            received = EventCopyRows.timestamp(entry.receivedAtMicroseconds)
        }
    }

    /// `timestamptz` text in UTC with microseconds (`2026-03-01 12:00:00.250000+00`), `BC` for
    /// years before 1.
    static func timestamp(_ microseconds: Int64) -> [UInt8] {
        var seconds = microseconds / 1_000_000
        var fraction = microseconds % 1_000_000
        if fraction < 0 { fraction += 1_000_000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (y, m, d) = CivilCalendar.date(fromDays: Int(days))
        let bc = y <= 0
        var out: [UInt8] = []
        out.reserveCapacity(32)
        func digits(_ value: Int, _ width: Int) {
            var value = value
            var buffer: [UInt8] = []
            while value > 0 || buffer.count < width {
                buffer.append(UInt8(ascii: "0") + UInt8(value % 10))
                value /= 10
            }
            out.append(contentsOf: buffer.reversed())
        }
        digits(bc ? 1 - y : y, 4)
        out.append(UInt8(ascii: "-")); digits(m, 2)
        out.append(UInt8(ascii: "-")); digits(d, 2)
        out.append(UInt8(ascii: " ")); digits(Int(secondOfDay / 3600), 2)
        out.append(UInt8(ascii: ":")); digits(Int(secondOfDay % 3600 / 60), 2)
        out.append(UInt8(ascii: ":")); digits(Int(secondOfDay % 60), 2)
        out.append(UInt8(ascii: ".")); digits(Int(fraction), 6)
        out.append(contentsOf: "+00".utf8)
        if bc { out.append(contentsOf: " BC".utf8) }
        return out
    }
}
