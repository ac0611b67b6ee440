import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitCore
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import BuzzKitLedger

/// The ledger written once (migrations 0016, 0018), read back through the `delivery_attempts`
/// view: each attempt shows the exact payload and the headers it was sent with (the delivery's
/// apns-id put back), also when an attempt's request differed from the first one (a provider token
/// renewed between two attempts), the time it went out, and the request is stored once however
/// many deliveries share it.
@Suite("ledger record", .requiresPostgres)
struct LedgerRecordTests {
    @Test func attemptsReadBackExactlyAsSent() async throws {
        let schema = try await MigratedSchema.start("ledger")
        let tenant = UUID()
        let message = UUID()
        let payload = Array(#"{"aps":{"alert":{"body":"hi"}},"bk":{"messageId":"m"}}"#.utf8)
        func headers(iat: Int, apnsId: String) -> HTTPHeaders {
            [
                "authorization": "bearer <redacted kid=K iat=\(iat)>", "apns-push-type": "alert",
                "apns-topic": "com.example.app", "apns-id": apnsId, "content-length": String(payload.count)
            ]
        }
        let devices = ["aa01", "aa02"].map {
            ChunkDevice(messageId: message, token: $0, subscriberId: "s", environment: "sandbox")
        }
        let chunk = ClaimedChunk(id: UUID(), tenantId: tenant, messageId: message, devices: devices)
        let sentAt = [Date(timeIntervalSince1970: 1_700_000_000.123), Date(timeIntervalSince1970: 1_700_000_001.5)]
        let outcomes = [
            // The first device: a 500, then the token renewed (another iat), then 200.
            DeliveryOutcome(
                device: devices[0],
                result: APNsDeliveryResult(
                    attempts: [
                        APNsResponse(
                            status: 500, reason: .internalServerError, apnsId: devices[0].deliveryId, sentAt: sentAt[0],
                            latency: .milliseconds(7), requestHeaders: headers(iat: 1, apnsId: devices[0].deliveryId),
                            payload: payload),
                        APNsResponse(
                            status: 200, apnsId: devices[0].deliveryId, sentAt: sentAt[1], latency: .milliseconds(3),
                            requestHeaders: headers(iat: 2, apnsId: devices[0].deliveryId), payload: payload)
                    ], outcome: .delivered(apnsId: devices[0].deliveryId))),
            DeliveryOutcome(
                device: devices[1],
                result: APNsDeliveryResult(
                    attempts: [
                        APNsResponse(
                            status: 200, apnsId: devices[1].deliveryId, sentAt: sentAt[0], latency: .milliseconds(2),
                            requestHeaders: headers(iat: 1, apnsId: devices[1].deliveryId), payload: payload)
                    ], outcome: .delivered(apnsId: devices[1].deliveryId)))
        ]
        try await Ledger(postgres: schema.postgres, logger: .silent())
            .record([ChunkRecord(chunk: chunk, outcomes: outcomes)], instance: "r1")

        let rows = try await schema.postgres.query(
            """
            SELECT delivery_id::text, attempt, payload, headers::text, status, reason, apns_id, latency_ms,
                   extract(epoch FROM at)::float8
            FROM delivery_attempts ORDER BY delivery_id, attempt
            """)
        var byDelivery: [String: [(Int, String, JSONValue, Int, String?, String?, Int)]] = [:]
        var times: [String: [Double]] = [:]
        for row in rows {
            let (id, n, text, json, status, reason, apnsId, latency) = try row.decode(
                (String, Int, String, String, Int, String?, String?, Int).self)
            byDelivery[id, default: []].append(
                (n, text, try JSONValue.parse(Array(json.utf8)), status, reason, apnsId, latency))
            times[id, default: []].append(try row.decode(Double.self, at: 8))
        }
        // Each attempt at the time it went out (to the millisecond).
        func near(_ got: [Double]?, _ expected: [Date]) -> Bool {
            guard let got, got.count == expected.count else { return false }
            return zip(got, expected).allSatisfy { abs($0 - $1.timeIntervalSince1970) < 0.0006 }
        }
        #expect(near(times[devices[0].deliveryId], sentAt))
        #expect(near(times[devices[1].deliveryId], [sentAt[0]]))
        let first = try #require(byDelivery[devices[0].deliveryId])
        #expect(first.map(\.0) == [1, 2])
        #expect(first.map(\.3) == [500, 200])
        #expect(first[0].4 == "InternalServerError")
        #expect(first.map(\.6) == [7, 3])
        for (index, attempt) in first.enumerated() {
            #expect(attempt.1 == String(decoding: payload, as: UTF8.self))
            #expect(attempt.2 == headers(iat: index + 1, apnsId: devices[0].deliveryId).jsonForTest)
            #expect(attempt.5 == devices[0].deliveryId)
        }
        let second = try #require(byDelivery[devices[1].deliveryId])
        #expect(second.count == 1)
        #expect(second[0].2 == headers(iat: 1, apnsId: devices[1].deliveryId).jsonForTest)
        // Two distinct requests (two iats), however many deliveries and attempts used them.
        let stored = try await schema.postgres.query("SELECT count(*)::int FROM delivery_payloads")
        #expect(try stored[0].decode(Int.self, at: 0) == 2)
        // The chunk went with its record.
        #expect(try await schema.postgres.query("SELECT 1 FROM delivery_chunks").isEmpty)
        await schema.stop()
    }
}

extension HTTPHeaders {
    /// The headers as the JSON object the ledger shows (names as sent).
    fileprivate var jsonForTest: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: map { ($0.name, JSONValue.string($0.value)) }))
    }
}
