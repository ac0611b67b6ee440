import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import BuzzKitLedger

/// A fan-out chunk's record without the deliveries' webhook events (`Ledger.quietSQL`), against a
/// real Postgres. The contract: an endpoint wanting `delivery.sent` / `delivery.failed` gets the
/// events of every delivery recorded by a statement that starts after its subscription committed,
/// whichever statement the replica tried first (the quiet one looks for the endpoint in its own
/// snapshot and writes nothing when it finds one); a chunk is recorded once either way.
@Suite("quiet record", .serialized, .requiresPostgres)
struct QuietRecordTests {
    /// A chunk of `tokens`: the first `sent`, the others rejected by APNs (413), one attempt each.
    static func outcomes(_ chunk: ClaimedChunk) -> [DeliveryOutcome] {
        chunk.devices.enumerated().map { index, device in
            let status = index == 0 ? 200 : 413
            let response = APNsResponse(
                status: status, reason: index == 0 ? nil : .payloadTooLarge, apnsId: device.deliveryId)
            return DeliveryOutcome(
                device: device,
                result: APNsDeliveryResult(
                    attempts: [response],
                    outcome: index == 0 ? .delivered(apnsId: device.deliveryId) : .failed(reason: .payloadTooLarge)))
        }
    }

    static func count(_ f: MessageCompletionTests.Fixture, _ sql: String) async throws -> Int {
        try await f.postgres.query(sql).first?.decode(Int.self, at: 0) ?? -1
    }

    @Test func anEndpointAddedBetweenTwoChunksGetsEveryEventOfTheSecondAndNoneIsWrittenTwice() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            // One value, as a replica holds it: what it noted about the tenant carries over.
            let ledger = f.ledger
            let message = try await f.message(.fannedOut)
            let first = try await LedgerWebhookEventsTests.claimedChunk(f, message, tokens: ["aa01", "aa02"])
            let second = try await LedgerWebhookEventsTests.claimedChunk(f, message, tokens: ["bb01", "bb02", "bb03"])

            // No endpoint: recorded quietly, nothing enqueued, nothing noted.
            let quiet = [ChunkRecord(chunk: first, outcomes: Self.outcomes(first))]
            #expect(try await ledger.record(quiet, instance: "r1", completion: .afterCommit).isEmpty)
            #expect(try await f.schema.outbox().isEmpty)
            #expect(!ledger.deliveryEventEndpoints.lately([f.tenant]))
            #expect(try await Self.count(f, "SELECT count(*)::int FROM deliveries") == 2)

            // An endpoint subscribes while the second chunk is out: the replica still tries the
            // quiet statement first; it finds the endpoint, writes nothing, and the full one runs.
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: ["delivery.sent", "delivery.failed"])
            let loud = [ChunkRecord(chunk: second, outcomes: Self.outcomes(second))]
            #expect(try await ledger.record(loud, instance: "r1", completion: .afterCommit).isEmpty)
            #expect(ledger.deliveryEventEndpoints.lately([f.tenant]))
            let sent = try await f.schema.outbox("delivery.sent")
            #expect(sent.count == 1 && sent.first?.data["deliveries"]?.arrayValue?.count == 1)
            #expect(sent.first?.data["deliveries"]?.arrayValue?.first?["deviceToken"] == "bb01")
            let failed = try await f.schema.outbox("delivery.failed")
            #expect(Set(failed.compactMap { $0.data["deviceToken"]?.stringValue }) == ["bb02", "bb03"])
            #expect(failed.allSatisfy { $0.data["reason"] == "PayloadTooLarge" && $0.data["httpStatus"] == 413 })
            #expect(try await Self.count(f, "SELECT count(*)::int FROM deliveries") == 5)
            #expect(try await Self.count(f, "SELECT count(*)::int FROM delivery_chunks") == 0)

            // Recorded again (a slow replica), noted or not: nothing more, no event twice.
            #expect(try await ledger.record(loud, instance: "r2", completion: .afterCommit).isEmpty)
            #expect(try await f.ledger.record(loud, instance: "r3", completion: .afterCommit).isEmpty)
            #expect(try await f.ledger.record(quiet, instance: "r3", completion: .afterCommit).isEmpty)
            #expect(try await f.schema.outbox().count == 3)
            #expect(try await Self.count(f, "SELECT count(*)::int FROM deliveries") == 5)

            // The message completes after the last commit, as before.
            #expect(try await ledger.completeIfDone([message]) == [message])
        } finally: {
            await f.schema.stop()
        }
    }

    /// The statement is chosen per chunk by its tenants: another tenant's endpoint neither makes
    /// this tenant's chunk loud nor gets its events.
    @Test func anotherTenantsEndpointLeavesTheChunkQuiet() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            let other = try await f.schema.makeTenant()
            try await f.schema.subscribeWebhooks(tenant: other, types: ["delivery.sent", "delivery.failed"])
            let ledger = f.ledger
            let message = try await f.message(.fannedOut)
            let chunk = try await LedgerWebhookEventsTests.claimedChunk(f, message, tokens: ["cc01", "cc02"])
            let records = [ChunkRecord(chunk: chunk, outcomes: Self.outcomes(chunk))]
            #expect(try await ledger.record(records, instance: "r1", completion: .afterCommit).isEmpty)
            #expect(!ledger.deliveryEventEndpoints.lately([f.tenant]))
            #expect(try await f.schema.outbox().isEmpty)
            #expect(try await Self.count(f, "SELECT count(*)::int FROM deliveries") == 2)
        } finally: {
            await f.schema.stop()
        }
    }

    /// Columns every delivery of a write shares are sent once (`CollapsibleColumn`), the others in
    /// full; either way each row reads back as written.
    @Test func sharedAndMixedColumnsReadBackPerDelivery() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            let message = try await f.message(.fannedOut)
            let chunk = try await LedgerWebhookEventsTests.claimedChunk(f, message, tokens: ["dd01", "dd02", "dd03"])
            var outcomes = Self.outcomes(chunk)
            outcomes[2] = DeliveryOutcome(device: chunk.devices[2], suppressed: .unsubscribed)
            try await f.ledger.record(
                [ChunkRecord(chunk: chunk, outcomes: outcomes)], instance: "r1", completion: .afterCommit)
            let rows = try await f.postgres.query(
                """
                SELECT device_token, message_id, environment, status, attempt_count, last_status, last_reason,
                       error_code, suppressed_reason, sending_by, payload_id IS NOT NULL
                FROM deliveries ORDER BY device_token
                """)
            #expect(rows.count == 3)
            let read = try rows.map { row in
                [
                    try row.decode(String.self, at: 0), try row.decode(UUID.self, at: 1).lowercasedText,
                    try row.decode(String.self, at: 2), try row.decode(String.self, at: 3),
                    String(try row.decode(Int.self, at: 4)), try row.decode(Int?.self, at: 5).map(String.init) ?? "-",
                    try row.decode(String?.self, at: 6) ?? "-", try row.decode(String?.self, at: 7) ?? "-",
                    try row.decode(String?.self, at: 8) ?? "-", try row.decode(String.self, at: 9),
                    String(try row.decode(Bool.self, at: 10))
                ]
            }
            let m = message.lowercasedText
            #expect(
                read == [
                    ["dd01", m, "sandbox", "sent", "1", "200", "-", "-", "-", "r1", "true"],
                    ["dd02", m, "sandbox", "failed", "1", "413", "PayloadTooLarge", "apns_rejected", "-", "r1", "true"],
                    ["dd03", m, "sandbox", "suppressed", "0", "-", "-", "-", "unsubscribed", "r1", "false"]
                ])
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func aCollapsibleColumnIsOneValueOnlyWhenEveryElementIsTheSame() {
        var same = CollapsibleColumn<String>()
        for _ in 0..<3 { same.append("sandbox") }
        #expect(same.array.bytes == Array("{}".utf8) && same.uniform == "sandbox")

        var late = CollapsibleColumn<Int>()
        for value in [200, 200, nil, 200] { late.append(value) }
        #expect(late.array.bytes == Array("{200,200,NULL,200}".utf8) && late.uniform == nil)

        var nulls = CollapsibleColumn<UUID>()
        for _ in 0..<2 { nulls.append(nil) }
        #expect(nulls.array.bytes == Array("{}".utf8) && nulls.uniform == nil)
    }
}
