import BuzzKitContracts
import BuzzKitCore
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Retention of the ledger (migration 0027): `messages`, `deliveries` and `delivery_payloads`
/// dropped a week at a time past the retention, all three together, never a week holding a send
/// still going, never blocking a writer; a lookup by a time-ordered id reads one week. Time is
/// moved by giving the pass its `now` and the messages ids with times ahead.
@Suite("ledger retention", .requiresPostgres)
struct LedgerRetentionTests {
    static let day: TimeInterval = 86_400

    struct Fixture {
        let schema: MigratedSchema
        let tenant: UUID
        var postgres: PostgresClient { schema.postgres }

        static func start(poolSize: Int = 4) async throws -> Fixture {
            let schema = try await MigratedSchema.start("ledgerret", poolSize: poolSize)
            return Fixture(schema: schema, tenant: try await schema.makeTenant())
        }

        /// A message filed at `at` (its id's time), in `status`, with one delivery and its stored
        /// request, written as the intake and the record statement write them.
        @discardableResult
        func message(at: Date, status: MessageStatus, id: UUID? = nil) async throws -> UUID {
            let id = id ?? UUID.timeOrdered(at: at)
            try await Ledger(postgres: postgres, logger: .silent()).insertMessages([
                NewMessage(
                    id: id, tenantId: tenant, target: .subscribers(["alice"]), content: ["body": "hi"],
                    environment: nil)
            ])
            try await postgres.execute(
                """
                WITH p AS (
                    INSERT INTO delivery_payloads (id, message_id, message_time, payload, headers)
                    SELECT gen_random_uuid(), m.id, m.message_time, '{}', '{}' FROM messages m WHERE m.id = $1::uuid
                    RETURNING id, message_id, message_time)
                INSERT INTO deliveries (id, tenant_id, message_id, message_time, device_token, subscriber_id,
                                        environment, status, payload_id, attempts)
                SELECT bk_delivery_id(p.message_id, 'tok'), $2::uuid, p.message_id, p.message_time, 'tok', 'alice',
                       'sandbox', 'sent', p.id, '[]'
                FROM p
                """, [id, tenant])
            try await postgres.execute(
                "UPDATE messages SET status = $2, completed_at = CASE WHEN $2 = 'completed' THEN now() END WHERE id = $1::uuid",
                [id, status.rawValue])
            return id
        }

        func count(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
            try await postgres.query(sql, parameters)[0].decode(Int.self, at: 0)
        }
    }

    /// The Monday of the week of `date` + `weeks`, as the partitions are named.
    static func week(_ table: String, of date: Date) -> String {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let monday = calendar.dateInterval(of: .weekOfYear, for: date)!.start
        let formatter = DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd"
        return "\(table)_p\(formatter.string(from: monday))"
    }

    @Test func aWeekIsKeptWhileASendOfItIsGoingThenDroppedWithItsDeliveries() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let now = Date()
            let inTwoWeeks = now.addingTimeInterval(15 * Self.day)
            let inThreeWeeks = now.addingTimeInterval(22 * Self.day)
            // Before the pass can make them: the migration made four weeks ahead.
            try await f.message(at: inTwoWeeks, status: .completed)
            let going = try await f.message(at: inTwoWeeks, status: .fannedOut)
            let chunked = try await f.message(at: inThreeWeeks, status: .completed)
            try await f.postgres.execute(
                """
                INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments)
                VALUES (gen_random_uuid(), $1::uuid, NULL, ARRAY[$2::uuid], ARRAY['t2'], ARRAY['bob'], ARRAY['sandbox'])
                """, [f.tenant, chunked])
            // A row from before migration 0027 (its id has no time): in the legacy partition.
            let legacy = try await f.message(at: now, status: .completed, id: UUID())
            #expect(try await f.count("SELECT count(*) FROM messages_legacy WHERE id = $1::uuid", [legacy]) == 1)
            #expect(try await f.count("SELECT count(*) FROM deliveries") == 4)

            let retention = LedgerRetention(postgres: f.postgres, retentionDays: 30)
            let later = now.addingTimeInterval(70 * Self.day)
            var pass = try await retention.maintain(now: later)
            #expect(pass.ran)
            let goingWeek = Self.week("messages", of: inTwoWeeks)
            let chunkWeek = Self.week("messages", of: inThreeWeeks)
            #expect(
                pass.kept == [
                    .init(week: goingWeek, messages: 1, chunks: 0, runs: 0),
                    .init(week: chunkWeek, messages: 0, chunks: 1, runs: 0)
                ])
            // The legacy week went, from all three tables.
            for table in ["messages", "deliveries", "delivery_payloads"] {
                #expect(pass.dropped.contains("\(table)_legacy"))
            }
            #expect(try await f.count("SELECT count(*) FROM messages") == 3)
            #expect(try await f.count("SELECT count(*) FROM deliveries") == 3)
            #expect(pass.partitionsAhead >= 4)

            // The send ends and the chunk is recorded: both weeks go, with their deliveries and requests.
            try await f.postgres.execute(
                "UPDATE messages SET status = 'completed', completed_at = now() WHERE id = $1::uuid", [going])
            try await f.postgres.execute("DELETE FROM delivery_chunks")
            pass = try await retention.maintain(now: later)
            #expect(pass.kept == [])
            for table in ["messages", "deliveries", "delivery_payloads"] {
                #expect(pass.dropped.contains(Self.week(table, of: inTwoWeeks)))
                #expect(pass.dropped.contains(Self.week(table, of: inThreeWeeks)))
            }
            #expect(try await f.count("SELECT count(*) FROM messages") == 0)
            #expect(try await f.count("SELECT count(*) FROM deliveries") == 0)
            #expect(try await f.count("SELECT count(*) FROM delivery_payloads") == 0)
            let oldest = try #require(pass.oldest)
            #expect(oldest > now.addingTimeInterval(30 * Self.day))
            // What the operator reads (GET /v1/retention).
            let row = try await f.postgres.query(
                "SELECT retention_seconds, partitions_kept FROM retention_status WHERE table_name = 'messages'")
            #expect(try row.first?.decode(Int.self, at: 0) == 30 * 86_400)
            #expect(try row.first?.decode(Int.self, at: 1) == 0)
        } finally: {
            await f.schema.stop()
        }
    }

    /// A week whose messages all ended is kept while they ended within the retention.
    @Test func aWeekIsKeptWhileItsMessagesEndedWithinTheRetention() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let now = Date()
            let id = try await f.message(at: now.addingTimeInterval(8 * Self.day), status: .completed)
            // It ended late (its fan-out waited): 50 days from now.
            try await f.postgres.execute(
                "UPDATE messages SET completed_at = now() + interval '50 days' WHERE id = $1::uuid", [id])
            let pass = try await LedgerRetention(postgres: f.postgres, retentionDays: 30)
                .maintain(now: now.addingTimeInterval(60 * Self.day))
            #expect(pass.kept.map(\.week) == [Self.week("messages", of: now.addingTimeInterval(8 * Self.day))])
            #expect(try await f.count("SELECT count(*) FROM deliveries") == 1)
        } finally: {
            await f.schema.stop()
        }
    }

    /// A week is kept while a workflow run filed in it (by the time in its id: its sends' ids
    /// carry it) is live, even with no message in it yet: the run may still send into it.
    @Test func aWeekIsKeptWhileARunFiledInItIsLive() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let now = Date()
            let started = now.addingTimeInterval(15 * Self.day)
            let run = UUID.timeOrdered(at: started)
            try await f.postgres.execute(
                """
                WITH w AS (INSERT INTO workflows (tenant_id, key, current_version, trigger_event)
                           VALUES ($1::uuid, 'nudge', 1, 'e') RETURNING tenant_id),
                     v AS (INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
                           SELECT tenant_id, 'nudge', 1, '{}', sha256('{}') FROM w RETURNING tenant_id)
                INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status,
                                           created_at)
                SELECT $2::uuid, tenant_id, 'nudge', 1, 'alice', 't', 'running', $3::timestamptz FROM v
                """, [f.tenant, run, started])
            let retention = LedgerRetention(postgres: f.postgres, retentionDays: 30)
            let later = now.addingTimeInterval(70 * Self.day)
            var pass = try await retention.maintain(now: later)
            #expect(pass.kept == [.init(week: Self.week("messages", of: started), messages: 0, chunks: 0, runs: 1)])
            // Ended long ago (as of `later`): the week goes.
            try await f.postgres.execute(
                "UPDATE workflow_runs SET status = 'completed', ended_at = now() WHERE id = $1::uuid", [run])
            pass = try await retention.maintain(now: later)
            #expect(pass.kept == [])
            #expect(pass.dropped.contains(Self.week("messages", of: started)))
        } finally: {
            await f.schema.stop()
        }
    }

    /// The drop waits for a transaction writing the ledger; a send written meanwhile by another
    /// session is not held up behind it (a `DROP TABLE` of an attached partition would queue it).
    @Test func aDropDoesNotBlockSendsBeingWritten() async throws {
        let f = try await Fixture.start(poolSize: 6)
        try await withCleanup {
            let now = Date()
            try await f.message(at: now, status: .completed, id: UUID())  // in the legacy week
            let writerOpen = OneShot<Void>()
            let writerMayCommit = OneShot<Void>()
            let insert = """
                INSERT INTO messages (id, message_time, tenant_id, target, content)
                VALUES ($1::uuid, bk_uuid7_time($1::uuid), $2::uuid, '{"to": ["bob"]}', '{"body": "b"}')
                """
            let soon = now.addingTimeInterval(9 * Self.day)
            let writer = Task {
                try await f.postgres.withTransaction { tx in
                    try await tx.execute(insert, [UUID.timeOrdered(at: soon), f.tenant])
                    _ = writerOpen.fulfill(())
                    try await writerMayCommit.wait()
                    try await tx.execute(insert, [UUID.timeOrdered(at: soon), f.tenant])
                }
            }
            try await writerOpen.wait()
            let drop = Task {
                try await LedgerRetention(postgres: f.postgres, retentionDays: 30)
                    .maintain(now: now.addingTimeInterval(60 * Self.day))
            }
            var waited = false
            for _ in 0..<200 where !waited {
                waited =
                    try await f.count(
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database() AND query LIKE 'ALTER TABLE "messages" DETACH PARTITION%'
                          AND wait_event_type = 'Lock'
                        """) > 0
                if !waited { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(waited)
            // Meanwhile another session records a send, and is not held up.
            let started = ContinuousClock.now
            try await f.message(at: soon, status: .completed)
            #expect(ContinuousClock.now - started < .seconds(2))
            _ = writerMayCommit.fulfill(())
            try await writer.value
            let pass = try await drop.value
            #expect(pass.dropped.contains("messages_legacy"))
            #expect(try await f.count("SELECT count(*) FROM messages") == 3)
            #expect(try await f.count("SELECT count(*) FROM deliveries") == 1)
        } finally: {
            await f.schema.stop()
        }
    }

    /// A lookup by a time-ordered message id reads one week; an id without a time reads them all.
    @Test func aLookupByATimeOrderedIdReadsOneWeek() async throws {
        let f = try await Fixture.start()
        try await withCleanup {
            let id = UUID.timeOrdered(at: Date().addingTimeInterval(10 * Self.day))
            #expect(id.timeOrderedDate.map { abs($0.timeIntervalSinceNow - 10 * Self.day) < 1 } == true)
            let sql = """
                EXPLAIN SELECT * FROM deliveries
                WHERE message_id = $1::uuid AND \(LedgerTime.prune("message_time", id: "$1::uuid"))
                """
            let pruned = try await f.postgres.query(sql, [id]).map { try $0.decode(String.self, at: 0) }
            #expect(pruned.filter { $0.contains(" on deliveries_") }.count == 1)
            let all = try await f.postgres.query(sql, [UUID()]).map { try $0.decode(String.self, at: 0) }
            #expect(all.filter { $0.contains(" on deliveries_") }.count >= 5)
            // A generic plan (a statement prepared and run often) prunes as it starts.
            let generic = try await f.postgres.withConnection { connection in
                try await connection.executeScript(
                    """
                    SET plan_cache_mode = force_generic_plan;
                    PREPARE by_message(uuid) AS SELECT * FROM deliveries
                    WHERE message_id = $1 AND \(LedgerTime.prune("message_time", id: "$1"));
                    """)
                let plan = try await connection.query("EXPLAIN EXECUTE by_message('\(id.lowercasedText)')")
                    .map { try $0.decode(String.self, at: 0) }
                try await connection.executeScript("DEALLOCATE by_message; RESET plan_cache_mode;")
                return plan
            }
            #expect(generic.contains { $0.contains("Subplans Removed") }, "\(generic)")
            // SQL reads the same time from the id as Swift does.
            let time = try await f.postgres.query("SELECT bk_uuid7_time($1::uuid)", [id])[0].decode(Date.self, at: 0)
            #expect(abs(time.timeIntervalSince(id.timeOrderedDate!)) < 0.001)
            #expect(
                try await f.postgres.query("SELECT bk_uuid7_time($1::uuid)", [UUID()])[0].decode(Date?.self, at: 0)
                    == nil)
            // The statements' own copy of the expression agrees with the function, id by id.
            let ids =
                (0..<50).map { _ in UUID.timeOrdered(at: Date().addingTimeInterval(.random(in: -1e8...1e8))) }
                + [UUID(), UUID()]
            let disagreements = try await f.postgres.query(
                """
                SELECT count(*) FROM unnest($1::uuid[]) AS u(id)
                WHERE bk_uuid7_time(u.id) IS DISTINCT FROM \(LedgerTime.uuid7Time("u.id"))
                """, [ids])
            #expect(try disagreements[0].decode(Int.self, at: 0) == 0)
        } finally: {
            await f.schema.stop()
        }
    }
}
