import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The parameters of `EventWriter.receiptsSQL`: the newly stored events that are receipts
/// (rare next to other events, so they are filtered by name before going to Postgres).
struct EventReceiptArrays {
    private var tenants = PostgresArrayText(), subscribers = PostgresArrayText(), ids = PostgresArrayText(),
        names = PostgresArrayText()
    private var data = PostgresArrayText(), occurred = PostgresArrayText()

    static let receiptNames: Set<String> = [
        "$notification.delivered", "$notification.opened", "$notification.dismissed"
    ]

    static func isReceipt(_ name: String) -> Bool {
        name.utf8.first == UInt8(ascii: "$") && receiptNames.contains(name)
    }

    var isEmpty: Bool { ids.isEmpty }

    mutating func append(tenant: UUID, subscriberId: String, event: IngestEntry.Event) {
        tenants.append(tenant)
        subscribers.append(subscriberId)
        ids.append(event.id)
        names.append(event.name)
        data.append(utf8: event.dataJSON)
        occurred.append(Int(event.timestampMicroseconds))
    }

    var parameters: [any PostgresEncodable] {
        [tenants, subscribers, ids, names, data, occurred].map { $0.value }
    }
}
