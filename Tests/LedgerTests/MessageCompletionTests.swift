import BuzzKitContracts
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitTestSupport
import Foundation
import Testing

/// A message completes once every delivery of it is decided, exactly once, whatever order and
/// concurrency its chunks are recorded in (`MessageCompletion`), against a real Postgres: two
/// replicas recording its last two chunks at the same moment, a fan-out ending while its last
/// chunk is recorded, a direct batch's messages, and the stragglers a stopped replica leaves.
@Suite("message completion", .serialized, .requiresPostgres)
struct MessageCompletionTests {
    /// A migrated schema with one tenant, and helpers that write what the fan-out would.
    struct Fixture {
        let schema: MigratedSchema
        let tenant: UUID
        var postgres: PostgresClient { schema.postgres }
        var ledger: Ledger { Ledger(postgres: schema.postgres, logger: .silent()) }

        static func start() async throws -> Fixture {
            let schema = try await MigratedSchema.start("completion")
            return Fixture(schema: schema, tenant: try await schema.makeTenant())
        }

        /// A message in `status`, last touched `age` seconds ago.
        func message(_ status: MessageStatus, age: Int = 0) async throws -> UUID {
            let id = UUID()
            try await postgres.execute(
                """
                INSERT INTO messages (id, message_time, tenant_id, target, content, status, updated_at)
                VALUES ($1::uuid, now(), $2::uuid, '{"topic": "t"}', '{"body": "b"}', $3, now() - make_interval(secs => $4))
                """, [id, tenant, status.rawValue, age])
            return id
        }

        /// A queued chunk of `tokens` for `messages` (one per token; `own`: the fan-out's chunk of
        /// one message, else a direct batch's); answers its id.
        func chunk(_ messages: [UUID], tokens: [String], own: UUID?) async throws -> UUID {
            let id = UUID()
            try await postgres.execute(
                """
                INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments)
                VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid[], $5::text[], $6::text[], $7::text[])
                """,
                [
                    id, tenant, own, messages, tokens, tokens.map { "s-" + $0 },
                    Array(repeating: "sandbox", count: tokens.count)
                ])
            return id
        }

        /// Each device of a claimed chunk `sent`, with no attempt (what is checked is the message).
        func record(_ chunk: ClaimedChunk) -> [ChunkRecord] {
            [
                ChunkRecord(
                    chunk: chunk,
                    outcomes: chunk.devices.map { DeliveryOutcome(device: $0, status: .sent, errorCode: nil) })
            ]
        }

        func status(_ message: UUID) async throws -> (String, Bool) {
            let row = try await postgres.query(
                "SELECT status, completed_at IS NOT NULL FROM messages WHERE id = $1::uuid", [message])[0]
            return (try row.decode(String.self, at: 0), try row.decode(Bool.self, at: 1))
        }

        /// The last two chunks of `message` recorded at the same moment: `first`'s statement has
        /// run in a transaction not yet committed when `second` is recorded, so each still sees
        /// the other's chunk and neither completes the message, nor does the test after
        /// `second`'s commit.
        func recordAtOnce(
            _ first: ClaimedChunk, _ second: ClaimedChunk, of message: UUID, completion: RecordCompletion
        ) async throws {
            try await postgres.withTransaction { tx in
                let recordedFirst = try await Ledger.record(
                    record(first), instance: "r1", completion: completion, inTransaction: tx)
                #expect(recordedFirst.isEmpty)
                #expect(try await ledger.record(record(second), instance: "r2", completion: completion).isEmpty)
                #expect(try await ledger.completeIfDone([message]).isEmpty)
                #expect(try await status(message) == ("fanned_out", false))
            }
        }

        /// The test after the last commit completes `message`, once, with `deliveries` rows written.
        func expectCompletedOnce(_ message: UUID, deliveries: Int) async throws {
            #expect(try await ledger.completeIfDone([message]) == [message])
            #expect(try await status(message) == ("completed", true))
            #expect(try await ledger.completeIfDone([message]).isEmpty)
            let count = try await postgres.query("SELECT count(*)::int FROM deliveries")
            #expect(try count[0].decode(Int.self, at: 0) == deliveries)
        }
    }

    @Test func twoReplicasRecordingTheLastTwoChunksAtOnceCompleteTheMessageOnce() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let message = try await f.message(.fannedOut)
            let a = try #require(
                try await f.ledger.claim(
                    try await f.chunk([message], tokens: ["aa01"], own: message), tenant: f.tenant, instance: "r1"))
            let b = try #require(
                try await f.ledger.claim(
                    try await f.chunk([message], tokens: ["aa02"], own: message), tenant: f.tenant, instance: "r2"))
            // r1's record statement has run, not committed yet, when r2 records (the statement
            // completes what it leaves with nothing pending): neither completes the message.
            try await f.recordAtOnce(a, b, of: message, completion: .inStatement)
            // r1's test after its commit sees both gone: completed, once.
            try await f.expectCompletedOnce(message, deliveries: 2)
        } finally: {
            await f.schema.stop()
        }
    }

    /// A fan-out chunk's record leaving the completion to the test after its commit
    /// (`RecordCompletion.afterCommit`, as apns-sender records them): its statement completes
    /// nothing; the test completes the message only once no chunk of it is pending, also when the
    /// last two are recorded at the same moment.
    @Test func fanOutChunksRecordedForTheTestAfterTheCommitCompleteTheMessageOnce() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let message = try await f.message(.fannedOut)
            var chunks: [ClaimedChunk] = []
            for token in ["bb01", "bb02", "bb03"] {
                chunks.append(
                    try #require(
                        try await f.ledger.claim(
                            try await f.chunk([message], tokens: [token], own: message), tenant: f.tenant,
                            instance: "r1")))
            }
            #expect(try await f.ledger.record(f.record(chunks[0]), instance: "r1", completion: .afterCommit).isEmpty)
            #expect(try await f.ledger.completeIfDone([message]).isEmpty)
            #expect(try await f.status(message) == ("fanned_out", false))
            // The last two at once: neither statement completes; r2's test runs before r1 commits.
            try await f.recordAtOnce(chunks[1], chunks[2], of: message, completion: .afterCommit)
            try await f.expectCompletedOnce(message, deliveries: 3)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func aFanOutEndingWhileItsLastChunkIsRecordedCompletes() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let message = try await f.message(.fanningOut)
            let last = try #require(
                try await f.ledger.claim(
                    try await f.chunk([message], tokens: ["aa01"], own: message), tenant: f.tenant, instance: "r1"))
            try await f.postgres.withTransaction { tx in
                // The record sees the message still fanning out; the fan-out's end sees the chunk.
                let recorded = try await Ledger.record(f.record(last), instance: "r1", inTransaction: tx)
                let finished = try await f.ledger.finishFanOut(message: message, audience: 1)
                #expect(recorded.isEmpty && !finished)
            }
            #expect(try await f.status(message) == ("fanned_out", false))
            #expect(try await f.ledger.completeIfDone([message]) == [message])
            #expect(try await f.status(message) == ("completed", true))
            // A late fan-out's end does not take a completed message back.
            #expect(try await f.ledger.finishFanOut(message: message, audience: 1) == false)
            #expect(try await f.status(message) == ("completed", true))
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func aRecordCompletesWhatItLeavesWithNothingPendingAndNothingElse() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            // A direct batch: two messages wholly in one chunk, completed by its record.
            let one = try await f.message(.fannedOut)
            let two = try await f.message(.fannedOut)
            let batch = try #require(
                try await f.ledger.claim(
                    try await f.chunk([one, two, two], tokens: ["aa01", "aa02", "aa03"], own: nil), tenant: f.tenant,
                    instance: "r1"))
            #expect(try await f.ledger.record(f.record(batch), instance: "r1") == [one, two])
            // A fan-out message with another chunk pending: not yet; its last chunk: completed.
            let fanned = try await f.message(.fannedOut)
            let first = try await f.chunk([fanned], tokens: ["bb01"], own: fanned)
            let second = try await f.chunk([fanned], tokens: ["bb02"], own: fanned)
            let claimed = try #require(try await f.ledger.claim(first, tenant: f.tenant, instance: "r1"))
            #expect(try await f.ledger.record(f.record(claimed), instance: "r1").isEmpty)
            #expect(try await f.status(fanned) == ("fanned_out", false))
            let lastOne = try #require(try await f.ledger.claim(second, tenant: f.tenant, instance: "r1"))
            #expect(try await f.ledger.record(f.record(lastOne), instance: "r1") == [fanned])
            // Recording the same chunk again (a taken-over chunk recorded twice) changes nothing.
            #expect(try await f.ledger.record(f.record(lastOne), instance: "r2").isEmpty)
            let count = try await f.postgres.query(
                "SELECT count(*)::int, count(DISTINCT sending_by)::int FROM deliveries")
            #expect(try count[0].decode(Int.self, at: 0) == 5 && count[0].decode(Int.self, at: 1) == 1)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func theSweeperRequeuesUnfinishedMessagesWhateverTheirAge() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            // Accepted three days ago and never fanned out (the senders were down, or a backup of
            // that day was restored): still sent, however late.
            let queued = try await f.message(.queued, age: 600)
            let fanning = try await f.message(.fanningOut, age: 600)
            try await f.postgres.execute(
                "UPDATE messages SET created_at = now() - interval '3 days' WHERE id = ANY($1::uuid[])",
                [[queued, fanning]])
            // Not stale: touched a moment ago, or finished.
            let recent = try await f.message(.queued, age: 0)
            let done = try await f.message(.fannedOut, age: 600)

            let taken = try await f.ledger.touchUnfinished(olderThan: .seconds(60))
            #expect(Set(taken.map(\.id)) == [queued, fanning])
            #expect(Set(taken.map(\.status)) == [.queued, .fanningOut])
            // Touched: not taken again until they are stale once more.
            #expect(try await f.ledger.touchUnfinished(olderThan: .seconds(60)).isEmpty)
            _ = (recent, done)
        } finally: {
            await f.schema.stop()
        }
    }

    @Test func theSweeperCompletesStragglersOnlyOldestFirstAndBounded() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            // Left by a replica that stopped between its commit and its completion test.
            let older = try await f.message(.fannedOut, age: 600)
            let old = try await f.message(.fannedOut, age: 300)
            // Not stragglers: something pending (its own chunk, or a direct batch's), too recent,
            // or not fanned out.
            let ownPending = try await f.message(.fannedOut, age: 600)
            _ = try await f.chunk([ownPending], tokens: ["cc01"], own: ownPending)
            let directPending = try await f.message(.fannedOut, age: 600)
            _ = try await f.chunk([directPending], tokens: ["cc02"], own: nil)
            let recent = try await f.message(.fannedOut, age: 0)
            let fanning = try await f.message(.fanningOut, age: 600)

            #expect(try await f.ledger.completeStragglers(olderThan: .seconds(60), limit: 1) == 1)
            #expect(try await f.status(older) == ("completed", true))
            #expect(try await f.status(old) == ("fanned_out", false))
            #expect(try await f.ledger.completeStragglers(olderThan: .seconds(60), limit: 1) == 1)
            #expect(try await f.status(old) == ("completed", true))
            #expect(try await f.ledger.completeStragglers(olderThan: .seconds(60), limit: 10) == 0)
            for untouched in [ownPending, directPending, recent] {
                #expect(try await f.status(untouched) == ("fanned_out", false))
            }
            #expect(try await f.status(fanning) == ("fanning_out", false))
        } finally: {
            await f.schema.stop()
        }
    }
}
