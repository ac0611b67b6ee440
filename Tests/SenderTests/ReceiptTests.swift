import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Receipts: the devices' `$notification.*` events, through the gateway and the ingest service,
/// joined to the message the server sent.
@Suite("receipts joined to the ledger", .serialized, .requiresTestStack)
struct ReceiptTests {
    func receipt(_ name: String, id: String, messageId: String, extra: [String: JSONValue] = [:]) -> JSONValue {
        var data: [String: JSONValue] = ["messageId": .string(messageId)]
        data.merge(extra) { _, new in new }
        return ["id": .string(id), "name": .string(name), "data": .object(data), "timestamp": "2026-11-29T12:00:00Z"]
    }

    @Test func aMessagesCountsFollowDeliveredAndOpenedReceipts() async throws {
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            try await stack.addSubscriber("ada", tokens: [PushStack.token(), PushStack.token()])
            try await stack.addSubscriber("grace", tokens: [PushStack.token()])
            let id = try await stack.send(["to": ["ada", "grace"], "title": "Leg day", "body": "Ready?"])
            let settled = try await stack.waitSettled(id)
            #expect(settled["counts"]?["sent"]?.intValue == 3)
            #expect(settled["receipts"] == ["delivered": 0, "opened": 0, "dismissed": 0])

            // Both of ada's devices report delivery: one subscriber, counted once. ada opens it.
            let ada: JSONValue = [
                "subscriberId": "ada",
                "events": [
                    receipt("$notification.delivered", id: "r1", messageId: id),
                    receipt("$notification.delivered", id: "r2", messageId: id),
                    receipt("$notification.opened", id: "r3", messageId: id, extra: ["action": "open"])
                ]
            ]
            #expect(try await stack.api("POST", "/v1/events", body: ada).status == 202)
            let grace: JSONValue = [
                "subscriberId": "grace",
                "events": [
                    receipt("$notification.delivered", id: "r4", messageId: id),
                    receipt("$notification.dismissed", id: "r5", messageId: id)
                ]
            ]
            #expect(try await stack.api("POST", "/v1/events", body: grace).status == 202)
            // A receipt for a message nobody sent is stored as an event and counted nowhere.
            let stray: JSONValue = [
                "subscriberId": "grace",
                "events": [
                    receipt("$notification.opened", id: "r6", messageId: UUID().uuidString.lowercased())
                ]
            ]
            #expect(try await stack.api("POST", "/v1/events", body: stray).status == 202)

            var message: JSONValue = .null
            let counted = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                message = try await stack.api("GET", "/v1/messages/\(id)").data ?? .null
                return message["receipts"] == ["delivered": 2, "opened": 1, "dismissed": 1]
            }
            #expect(counted, "receipts: \(message["receipts"] ?? .null)")
            #expect(message["openRate"]?.doubleValue == 0.5)

            let adaDeliveries = try await stack.deliveries(id).filter { $0["subscriberId"] == "ada" }
            #expect(adaDeliveries.count == 2)
            let deliveryId = try #require(adaDeliveries.first?["id"]?.stringValue)
            let delivery = try await stack.api("GET", "/v1/deliveries/\(deliveryId)")
            #expect(delivery.data?["receipts"]?["delivered"]?.stringValue != nil)
            #expect(delivery.data?["receipts"]?["opened"]?.stringValue != nil)
            #expect(delivery.data?["receipts"]?["dismissed"] == .null)
            #expect((delivery.data?["attempts"]?.arrayValue?.count ?? 0) == 1)
        }
    }
}
