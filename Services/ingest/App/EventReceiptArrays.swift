import Foundation
import BuzzKitPostgres
import BuzzKitContracts
import BuzzKitWire

/// The parameters of `EventWriter.receiptsSQL`: the newly stored events that are receipts
/// (rare next to other events, so they are filtered by name before going to Postgres).
struct EventReceiptArrays {
    private var tenants = EventArrayText(), subscribers = EventArrayText(), ids = EventArrayText(), names = EventArrayText()
    private var data = EventArrayText(), occurred = EventArrayText()

    static let receiptNames: Set<String> = ["$notification.delivered", "$notification.opened", "$notification.dismissed"]

    static func isReceipt(_ name: String) -> Bool {
        name.utf8.first == UInt8(ascii: "$") && receiptNames.contains(name)
    }

    var isEmpty: Bool { ids.isEmpty }

    mutating func append(tenant: UUID, subscriberId: String, event: IngestEntry.Event) {
        tenants.appendBare(tenant.lowercasedText)
        subscribers.append(subscriberId)
        ids.append(event.id)
        names.append(event.name)
        data.append(bytes: event.dataJSON)
        occurred.appendBare(String(event.timestampMicroseconds))
    }

    var parameters: [any PostgresEncodable] {
        [tenants, subscribers, ids, names, data, occurred].map { $0.value }
    }
}
