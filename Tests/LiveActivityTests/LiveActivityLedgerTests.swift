import BuzzKitContracts
import BuzzKitLedger
import BuzzKitTestSupport
import Foundation
import Testing

@testable import LiveActivityApp

/// The deciding statement against a real Postgres: a batch decided in one statement ends as
/// its requests would one at a time (the row-lock rules, the message and ONE claimed chunk of its
/// tokens written, no delivery row yet, the registry updated), a request decided before is a
/// replay, the ledger's record of the sends (each delivery written once) is what a replay
/// answers, and a request whose replica stopped before recording it is recorded as lost, never
/// sent again.
@Suite("Live Activity ledger, batched", .serialized, .requiresPostgres)
struct LiveActivityLedgerTests {
    static let tokens = (1...9).map { String(repeating: String($0), count: 64) }

    @Test func oneStatementDecidesAMixedBatchByTheRules() async throws {
        let f = try await LiveActivityLedgerFixture.start()
        try await withCleanup {
            let t = Self.tokens
            try await f.activity("ann", "live", token: t[0], lastTimestamp: 50)
            try await f.activity("bob", "ended", token: t[1], ended: true)
            try await f.activity("cat", "refused", token: t[2], invalid: true)
            try await f.activity("dan", "newer", token: t[3], lastTimestamp: 500)
            try await f.startToken("eve", token: t[4])
            try await f.startToken("eve", token: t[5])
            try await f.startToken("eve", token: t[6], invalid: true)
            try await f.startToken("fay", token: t[7], invalid: true)
            let entries = [
                f.entry(.update, to: "ann", activity: "live"), f.entry(.update, to: "bob", activity: "ended"),
                f.entry(.update, to: "cat", activity: "refused"), f.entry(.update, to: "dan", activity: "newer"),
                f.entry(.update, to: "ann", activity: "unknown"), f.entry(.update, to: "bob", activity: "live"),
                f.entry(.start, to: "eve"), f.entry(.start, to: "fay"), f.entry(.start, to: "nobody")
            ]
            let plans = try await f.ledger.decideLiveActivities(entries, instance: "replica-1")
            #expect(
                plans.map(\.summary) == [
                    ["send:" + t[0]], ["activity_ended:" + t[1]], ["token_invalid:" + t[2]],
                    ["stale_timestamp:" + t[3]],
                    ["live_activity_not_found"], ["live_activity_not_found"],
                    ["send:" + t[4], "send:" + t[5], "token_invalid:" + t[6]], ["no_push_to_start_token"],
                    ["no_push_to_start_token"]
                ])
            // Only the two requests that go out have a message, with one chunk of its tokens each,
            // claimed by the deciding replica; no delivery is written before its outcome.
            #expect(try await f.count("SELECT count(*)::int FROM messages") == 2)
            let update = entries[0].messageId
            let start = entries[6].messageId
            #expect(
                try await f.count(
                    """
                    SELECT count(*)::int FROM messages WHERE kind = 'live_activity' AND status = 'fanned_out'
                      AND ((id = $1::uuid AND audience_size = 1 AND target = '{"to": ["ann"]}')
                        OR (id = $2::uuid AND audience_size = 2 AND content->'liveActivity'->>'event' = 'start'))
                    """, [update, start]) == 2)
            #expect(
                try await f.count(
                    """
                    SELECT sum(cardinality(tokens))::int FROM delivery_chunks
                    WHERE kind = 'live_activity' AND sending_by = 'replica-1' AND claimed_at IS NOT NULL
                      AND message_id IN ($1::uuid, $2::uuid)
                    """, [update, start]) == 3)
            #expect(try await f.count("SELECT count(*)::int FROM delivery_chunks") == 2)
            #expect(try await f.count("SELECT count(*)::int FROM deliveries") == 0)
            guard case .send(let chunk, let targets, _) = plans[6] else { throw TestFailure("start not sent") }
            #expect(chunk.kind == .liveActivity && chunk.messageId == start && chunk.devices.count == 2)
            #expect(
                try await f.count(
                    "SELECT count(*)::int FROM unnest($2::uuid[]) AS t(id) WHERE t.id IN (SELECT bk_delivery_id($1::uuid, x) FROM unnest($3::text[]) AS x)",
                    [start, targets.map(\.device.deliveryId), [t[4], t[5]]]) == 2)
            // The registry learned what went out, and only that.
            let live = try await f.postgres.query(
                "SELECT last_timestamp, last_event FROM live_activities WHERE activity_id = 'live'")[0]
            #expect(try live.decode(Int.self, at: 0) == 100 && live.decode(String.self, at: 1) == "update")
            #expect(
                try await f.count("SELECT count(*)::int FROM live_activities WHERE last_sent_at IS NOT NULL") == 1)
            #expect(
                try await f.count(
                    "SELECT count(*)::int FROM live_activity_start_tokens WHERE last_sent_at IS NOT NULL") == 2)
        } finally: {
            await f.stop()
        }
    }

    @Test func anEndThenAnUpdateOfOneActivityInOneBatchAreDecidedInThatOrder() async throws {
        let f = try await LiveActivityLedgerFixture.start()
        try await withCleanup {
            let t = Self.tokens
            try await f.activity("ann", "a", token: t[0])
            try await f.activity("bob", "b", token: t[1])
            let entries = [
                f.entry(.update, to: "ann", activity: "a", timestamp: 10),
                f.entry(.end, to: "ann", activity: "a", timestamp: 20),
                f.entry(.update, to: "bob", activity: "b", timestamp: 20),
                f.entry(.update, to: "bob", activity: "b", timestamp: 10),
                f.entry(.update, to: "ann", activity: "a", timestamp: 30)
            ]
            let plans = try await f.decide(entries)
            #expect(
                plans.map(\.summary) == [
                    ["send:" + t[0]], ["send:" + t[0]], ["send:" + t[1]], ["stale_timestamp:" + t[1]],
                    ["activity_ended:" + t[0]]
                ])
            let a = try await f.postgres.query(
                "SELECT state, ended_by, last_timestamp FROM live_activities WHERE activity_id = 'a'")[0]
            #expect(try a.decode(String.self, at: 0) == "ended" && a.decode(String?.self, at: 1) == "send")
            #expect(try a.decode(Int.self, at: 2) == 20)
        } finally: {
            await f.stop()
        }
    }

    @Test func aRequestDecidedBeforeIsReplayedFromTheLedgerWithItsRecordedOutcome() async throws {
        let f = try await LiveActivityLedgerFixture.start()
        try await withCleanup {
            let t = Self.tokens
            try await f.activity("ann", "a", token: t[0])
            try await f.activity("bob", "b", token: t[1])
            let first = f.entry(.update, to: "ann", activity: "a")
            let second = f.entry(.update, to: "bob", activity: "b")
            let plans = try await f.decide([first, second])
            guard case .send(let chunk, let targets, _) = plans[0] else { throw TestFailure("not sent") }
            let completed = try await f.ledger.record(
                [
                    ChunkRecord(
                        chunk: chunk,
                        outcomes: [
                            DeliveryOutcome(
                                device: targets[0].device, status: .failed, lastReason: "BadTopic",
                                errorCode: .apnsRejected)
                        ])
                ], instance: "test", registry: .liveActivities)
            // Recorded once, with its outcome: the chunk gone, the message completed.
            #expect(completed == [first.messageId])
            #expect(try await f.count("SELECT count(*)::int FROM delivery_chunks") == 1)
            // The same entries again (a retry, or a dead replica's entries taken over): nothing is
            // decided or written twice; each answers what the ledger shows.
            let again = try await f.decide([first, second])
            #expect(again.map(\.summary) == [["replay"], ["replay"]])
            #expect(try await f.count("SELECT count(*)::int FROM deliveries") == 1)
            let replies = try await f.ledger.replayLiveActivities([first, second])
            guard case .results(let id, let results) = replies[0], case .results(_, let others) = replies[1] else {
                throw TestFailure("no results")
            }
            #expect(id == first.messageId)
            #expect(results.map(\.status) == [.failed] && results.first?.reason == "BadTopic")
            #expect(
                results.first?.deliveryId?.lowercasedText == targets[0].device.deliveryId
                    && results.first?.activityId == "a")
            #expect(others.map(\.status) == [.sending])
            #expect(
                try await f.count(
                    "SELECT count(*)::int FROM messages WHERE id = $1::uuid AND status = 'completed' AND completed_at IS NOT NULL",
                    [first.messageId]) == 1)
            #expect(
                try await f.count(
                    "SELECT count(*)::int FROM messages WHERE id = $1::uuid AND status = 'fanned_out'",
                    [second.messageId]) == 1)
        } finally: {
            await f.stop()
        }
    }

    /// A replica that decided a request and stopped before recording it: its chunk stays claimed
    /// (answered `sending`); once stale it is recorded as lost, never sent again, and the message
    /// completes. The stopped replica, only slow after all, recording later keeps that record.
    @Test func aStaleRequestIsRecordedAsLostAndNeverSentAgain() async throws {
        let f = try await LiveActivityLedgerFixture.start()
        try await withCleanup {
            let t = Self.tokens
            try await f.activity("ann", "a", token: t[0])
            try await f.activity("bob", "b", token: t[1])
            let stale = f.entry(.update, to: "ann", activity: "a")
            let fresh = f.entry(.update, to: "bob", activity: "b")
            let plans = try await f.decide([stale, fresh])
            guard case .send(let chunk, let targets, _) = plans[0] else { throw TestFailure("not sent") }
            try await f.postgres.execute(
                "UPDATE delivery_chunks SET claimed_at = now() - interval '1 hour' WHERE id = $1::uuid", [chunk.id])
            #expect(
                try await f.ledger.recordLostLiveActivities(staleAfter: .seconds(60), instance: "sweeper") == 1)
            #expect(try await f.ledger.recordLostLiveActivities(staleAfter: .seconds(60), instance: "sweeper") == 0)
            let row = try await f.postgres.query(
                """
                SELECT d.status, d.error_code, d.attempt_count, d.sending_by, m.status, d.id::text
                FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE d.message_id = $1::uuid
                """, [stale.messageId])
            try #require(row.count == 1)
            let (status, code, attempts, by, messageStatus, id) = try row[0].decode(
                (String, String?, Int, String?, String, String).self)
            #expect(status == "failed" && code == "sender_lost" && attempts == 0 && by == "sweeper")
            #expect(messageStatus == "completed" && id == targets[0].device.deliveryId)
            // The fresh request's chunk is left alone.
            #expect(try await f.count("SELECT count(*)::int FROM delivery_chunks") == 1)
            // The slow replica's own record comes later: what was recorded first stays.
            try await f.ledger.record(
                [
                    ChunkRecord(
                        chunk: chunk,
                        outcomes: [DeliveryOutcome(device: targets[0].device, status: .sent, errorCode: nil)])
                ], instance: "test", registry: .liveActivities)
            #expect(
                try await f.count(
                    "SELECT count(*)::int FROM deliveries WHERE status = 'failed' AND error_code = 'sender_lost'") == 1)
            let replies = try await f.ledger.replayLiveActivities([stale])
            guard case .results(_, let results) = replies[0] else { throw TestFailure("no results") }
            #expect(results.map(\.status) == [.failed] && results.first?.reason?.contains("stopped") == true)
        } finally: {
            await f.stop()
        }
    }
}
