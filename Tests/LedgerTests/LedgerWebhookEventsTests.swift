import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitHTTPClient
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import BuzzKitLedger

/// The ledger's webhook events (`delivery.sent`, `delivery.failed`, `message.completed`,
/// `live_activity.ended`), enqueued by the statements that write what they report, against a real
/// Postgres: exactly one outbox row per outcome and endpoint, with the document's data; none when
/// the statement runs again or finds the change made; none for a tenant with no endpoint wanting
/// the type. (The end-to-end tests in WebhooksTests send them to a verifying receiver.)
@Suite("ledger webhook events", .serialized, .requiresPostgres)
struct LedgerWebhookEventsTests {
    static let allTypes = ["delivery.sent", "delivery.failed", "message.completed", "live_activity.ended"]

    /// A fan-out message's chunk of `tokens`, claimed by `instance`.
    static func claimedChunk(
        _ f: MessageCompletionTests.Fixture, _ message: UUID, tokens: [String], instance: String = "r1"
    ) async throws -> ClaimedChunk {
        try #require(
            try await f.ledger.claim(
                try await f.chunk(Array(repeating: message, count: tokens.count), tokens: tokens, own: message),
                tenant: f.tenant, instance: instance))
    }

    /// The outcomes of a chunk of four: sent, 410 Unregistered, rejected (413 PayloadTooLarge),
    /// no answer (a connect failure), in device order.
    static func mixedOutcomes(_ chunk: ClaimedChunk) -> [DeliveryOutcome] {
        let d = chunk.devices
        func response(_ status: Int, _ reason: APNsReason? = nil, error: HTTPClientError? = nil) -> APNsResponse {
            APNsResponse(status: status, reason: reason, apnsId: d[0].deliveryId, transportError: error)
        }
        return [
            DeliveryOutcome(
                device: d[0], result: APNsDeliveryResult(attempts: [response(200)], outcome: .delivered(apnsId: "x"))),
            DeliveryOutcome(
                device: d[1],
                result: APNsDeliveryResult(
                    attempts: [response(410, .unregistered)],
                    outcome: .invalidToken(reason: .unregistered, timestamp: nil)
                )),
            DeliveryOutcome(
                device: d[2],
                result: APNsDeliveryResult(
                    attempts: [response(413, .payloadTooLarge)], outcome: .failed(reason: .payloadTooLarge))),
            DeliveryOutcome(
                device: d[3],
                result: APNsDeliveryResult(
                    attempts: [response(0, error: HTTPClientError(code: .connectFailed, message: "refused"))],
                    outcome: .failed(reason: nil)))
        ]
    }

    @Test func aRecordEnqueuesOneEventPerDeliveryAndTheCompletionWithExactCounts() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: Self.allTypes)
            let message = try await f.message(.fannedOut)
            let chunk = try await Self.claimedChunk(f, message, tokens: ["aa01", "aa02", "aa03", "aa04"])
            let records = [ChunkRecord(chunk: chunk, outcomes: Self.mixedOutcomes(chunk))]
            // An invalid token makes it a transaction (the device's deactivation); recorded once.
            #expect(try await f.ledger.record(records, instance: "r1") == [message])

            // delivery.sent: the statement's sent deliveries, one batch row per endpoint.
            let sent = try await f.schema.outbox("delivery.sent")
            #expect(sent.count == 1)
            let item = sent.first?.data["deliveries"]?.arrayValue
            #expect(item?.count == 1)
            #expect(item?.first?["deliveryId"]?.stringValue == chunk.devices[0].deliveryId)
            #expect(item?.first?["deviceToken"] == "aa01" && item?.first?["subscriberId"] == "s-aa01")
            #expect(item?.first?["messageId"]?.stringValue == message.uuidString.lowercased())
            #expect(item?.first?["environment"] == "sandbox" && item?.first?["sentAt"]?.stringValue != nil)

            let failed = try await f.schema.outbox("delivery.failed")
            let byToken = Dictionary(
                uniqueKeysWithValues: failed.map { ($0.data["deviceToken"]?.stringValue ?? "", $0) })
            #expect(failed.count == 3 && byToken.count == 3)
            let gone = byToken["aa02"]?.data
            #expect(gone?["status"] == "invalid_token" && gone?["invalidToken"] == true)
            #expect(gone?["reason"] == "Unregistered" && gone?["httpStatus"] == 410 && gone?["errorCode"] == .null)
            let rejected = byToken["aa03"]?.data
            #expect(rejected?["status"] == "failed" && rejected?["invalidToken"] == false)
            #expect(rejected?["reason"] == "PayloadTooLarge" && rejected?["errorCode"] == "apns_rejected")
            // No answer: no APNs status or reason (the transport's text is not APNs's reason).
            let unreachable = byToken["aa04"]?.data
            #expect(unreachable?["httpStatus"] == .null && unreachable?["reason"] == .null)
            #expect(unreachable?["errorCode"] == "apns_unreachable")

            let completed = try await f.schema.outbox("message.completed")
            #expect(completed.count == 1)
            let data = completed.first?.data
            #expect(data?["status"] == "completed" && data?["kind"] == "push" && data?["error"] == .null)
            #expect(
                data?["counts"]
                    == ["sent": 1, "failed": 2, "expired": 0, "invalidToken": 1, "total": 4])

            // The same chunk recorded again (a replica that was only slow): nothing more.
            #expect(try await f.ledger.record(records, instance: "r2").isEmpty)
            #expect(try await f.schema.outbox().count == 5)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func twoRecordsRacingCompleteOnceAndTheCountsHoldBothChunks() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: ["message.completed"])
            let message = try await f.message(.fannedOut)
            let a = try await Self.claimedChunk(f, message, tokens: ["aa01", "aa02"], instance: "r1")
            let b = try await Self.claimedChunk(f, message, tokens: ["aa03"], instance: "r2")
            try await f.postgres.withTransaction { tx in
                let first = try await Ledger.record(f.record(a), instance: "r1", inTransaction: tx)
                let second = try await f.ledger.record(f.record(b), instance: "r2")
                let early = try await f.ledger.completeIfDone([message])
                #expect(first.isEmpty && second.isEmpty && early.isEmpty)
            }
            #expect(try await f.ledger.completeIfDone([message]) == [message])
            #expect(try await f.ledger.completeIfDone([message]).isEmpty)
            let completed = try await f.schema.outbox("message.completed")
            #expect(completed.count == 1)
            #expect(completed.first?["counts"]?["sent"] == 3 && completed.first?["counts"]?["total"] == 3)
            // The direct-batch path and the sweeper complete through the same CTE.
            let straggler = try await f.message(.fannedOut, age: 600)
            #expect(try await f.ledger.completeStragglers(olderThan: .seconds(60)) == 1)
            let both = try await f.schema.outbox("message.completed")
            #expect(both.count == 2 && both.last?.data["messageId"]?.stringValue == straggler.uuidString.lowercased())
            #expect(both.last?["counts"]?["total"] == 0)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func nothingIsEnqueuedForATenantWithNoEndpointWantingTheType() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            // Another tenant's endpoint, and one of this tenant's for another type.
            let other = try await f.schema.makeTenant()
            try await f.schema.subscribeWebhooks(tenant: other, types: Self.allTypes)
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: ["receipt.opened"])
            let message = try await f.message(.fannedOut)
            let chunk = try await Self.claimedChunk(f, message, tokens: ["aa01", "aa02", "aa03", "aa04"])
            #expect(
                try await f.ledger.record(
                    [ChunkRecord(chunk: chunk, outcomes: Self.mixedOutcomes(chunk))], instance: "r1")
                    == [message])
            #expect(try await f.schema.outbox().isEmpty)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func aMessageThatFailsAsAWholeReportsItOnce() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: ["message.completed"])
            let message = try await f.message(.fanningOut)
            try await f.ledger.failMessage(message, code: "apns_credentials_missing", "no APNs key")
            try await f.ledger.failMessage(message, code: "apns_credentials_missing", "no APNs key")
            let events = try await f.schema.outbox("message.completed")
            #expect(events.count == 1)
            #expect(events.first?.data["status"] == "failed")
            #expect(events.first?.data["error"] == ["code": "apns_credentials_missing", "message": "no APNs key"])
            #expect(events.first?["counts"]?["total"] == 0)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func aLostLiveActivitySendReportsItsDeliveriesFailedAndItsMessage() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: Self.allTypes)
            let message = try await f.message(.fannedOut)
            try await f.postgres.execute(
                """
                INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments,
                                             sending_by, claimed_at, kind)
                VALUES (gen_random_uuid(), $1::uuid, $2::uuid, ARRAY[$2::uuid, $2::uuid], '{la01,la02}', '{fan,fan}',
                        '{sandbox,sandbox}', 'la-dead', now() - interval '10 minutes', 'live_activity')
                """, [f.tenant, message])
            let ledger = f.ledger
            #expect(try await ledger.recordLostLiveActivities(staleAfter: .seconds(60), instance: "sweeper") == 1)
            #expect(try await ledger.recordLostLiveActivities(staleAfter: .seconds(60), instance: "sweeper") == 0)
            let failed = try await f.schema.outbox("delivery.failed")
            #expect(failed.count == 2)
            #expect(failed.allSatisfy { $0.data["errorCode"] == "sender_lost" && $0.data["reason"] == .null })
            let completed = try await f.schema.outbox("message.completed")
            #expect(completed.count == 1 && completed.first?["counts"]?["failed"] == 2)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func anActivityEndedByTheDeviceIsReportedOnce() async throws {
        let f = try await MessageCompletionTests.Fixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenant, types: ["live_activity.ended"])
            try await f.postgres.execute(
                "INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'fan')", [f.tenant])
            try await f.postgres.execute(
                """
                INSERT INTO live_activities (tenant_id, activity_id, subscriber_id, attributes_type, token, environment)
                VALUES ($1::uuid, 'match-1', 'fan', 'MatchAttributes', 'ab01', 'sandbox')
                """, [f.tenant])
            #expect(
                try await LiveActivityRegistry.endActivity(
                    f.postgres, tenant: f.tenant, activity: "match-1", subscriber: "fan"))
            #expect(
                !(try await LiveActivityRegistry.endActivity(
                    f.postgres, tenant: f.tenant, activity: "match-1", subscriber: "fan")))
            let ended = try await f.schema.outbox("live_activity.ended")
            #expect(ended.count == 1)
            #expect(
                ended.first?.data["activityId"] == "match-1" && ended.first?.data["endedBy"] == "device"
                    && ended.first?.data["subscriberId"] == "fan"
                    && ended.first?.data["attributesType"] == "MatchAttributes")
        } finally: {
            await f.schema.stop()
        }
    }
}

extension MigratedSchema.OutboxEvent {
    /// A member of the event's data.
    subscript(key: String) -> JSONValue? { data[key] }
}
