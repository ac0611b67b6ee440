import BuzzKitContracts
import BuzzKitIntake
import BuzzKitQueries
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import IngestApp
import Testing

/// End to end through `EventIntake` -> `bk:ingest` -> ingest consumers -> Postgres / `bk:events`.
@Suite(.requiresTestStack) struct IngestPipelineTests {
    @Test func batchOf100IsStoredAndReadable() async throws {
        let harness = try await IngestHarness.start()
        let tenant = UUID()
        let accepted = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(subscriber: "u1", Bodies.events(prefix: "e", count: 100)))
        #expect(accepted.accepted == 100)
        #expect(try await harness.waitForEvents(tenant: tenant, expected: 100) == 100)

        // Read it back page by page (newest first) through the query the gateway route uses.
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try await EventQueries.list(
                postgres: harness.postgres, tenantId: tenant, subscriberId: "u1",
                cursor: cursor, limit: "30")
            seen += page.events.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen == (0..<100).reversed().map { "e-\($0)" })
        let first = try await EventQueries.list(
            postgres: harness.postgres, tenantId: tenant, subscriberId: "u1", limit: "1")
        #expect(first.events.first?.data == ["duration": 42])
        #expect(first.events.first?.name == "workout.completed")

        // name and since filters.
        let since = EventTimestamp.format(microseconds: Bodies.base + 90 * 1_000_000)
        let recent = try await EventQueries.list(
            postgres: harness.postgres, tenantId: tenant, subscriberId: "u1", since: since)
        #expect(recent.events.count == 10)
        let none = try await EventQueries.list(
            postgres: harness.postgres, tenantId: tenant, subscriberId: "u1", name: "other")
        #expect(none.events.isEmpty && !none.hasMore)
        await harness.stop()
    }

    @Test func sameBatchTwiceIsStoredAndPublishedOnce() async throws {
        let harness = try await IngestHarness.start()
        let tenant = UUID()
        let body = Bodies.batch(subscriber: "u1", Bodies.events(prefix: "dup", count: 50))
        _ = try await harness.intake.accept(tenantId: tenant, json: body)
        _ = try await harness.intake.accept(tenantId: tenant, json: body)
        #expect(try await harness.waitUntilDrained())
        // A third copy after the first two were processed.
        _ = try await harness.intake.accept(tenantId: tenant, json: body)
        #expect(try await harness.waitUntilDrained())
        #expect(try await harness.storedEvents(tenant: tenant) == 50)
        let published = try await harness.published()
        #expect(published.count == 50)
        #expect(Set(published.map(\.eventId)).count == 50)
        #expect(published.allSatisfy { $0.subscriberId == "u1" && $0.tenantId == tenant })
        // Same event ids in another tenant are other events.
        let other = UUID()
        _ = try await harness.intake.accept(tenantId: other, json: body)
        #expect(try await harness.waitForEvents(tenant: other, expected: 50) == 50)
        await harness.stop()
    }

    /// `bk:events` carries one entry per stored batch with exactly its new events, also when a
    /// batch mixes new ids with stored ones (the all-new COPY fails, the claiming path stores it).
    @Test func eachStoredBatchIsOneEventsEntryWithItsNewEvents() async throws {
        let harness = try await IngestHarness.start()
        let tenant = UUID()
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(subscriber: "u1", Bodies.events(prefix: "a", count: 100)))
        #expect(try await harness.waitUntilDrained())
        let mixed = Array(Bodies.events(prefix: "a", count: 100).suffix(5)) + Bodies.events(prefix: "b", count: 7)
        _ = try await harness.intake.accept(tenantId: tenant, json: Bodies.batch(subscriber: "u1", mixed))
        #expect(try await harness.waitUntilDrained())
        #expect(try await harness.storedEvents(tenant: tenant) == 107)

        let entries = try await harness.redis.xrange(harness.configuration.eventsStream.rawValue)
            .map { try PublishedEventBatch(entry: $0) }
        #expect(entries.map(\.events.count) == [100, 7])
        #expect(entries.last?.events.map(\.id) == (0..<7).map { "b-\($0)" })
        #expect(entries.allSatisfy { $0.tenantId == tenant && $0.subscriberId == "u1" && $0.anonymousId == nil })
        #expect(entries.first?.events.first?.dataJSON == Array(#"{"duration":42}"#.utf8))
        await harness.stop()
    }

    @Test func eventsBeforeAndAfterIdentifyEndUpOnTheSubscriber() async throws {
        let harness = try await IngestHarness.start()
        let tenant = try await harness.makeTenant()
        try await harness.postgres.execute(
            "INSERT INTO subscribers (tenant_id, id, anonymous) VALUES ($1, 'anon-1', true), ($1, 'user-1', false)",
            [tenant])

        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(
                anonymous: "anon-1",
                [
                    Bodies.event("before-1", offsetSeconds: 1),
                    Bodies.event("before-2", offsetSeconds: 2)
                ]))
        #expect(try await harness.waitForEvents(tenant: tenant, expected: 2) == 2)
        // identify (what the gateway's identify route writes).
        try await harness.postgres.execute(
            "INSERT INTO subscriber_aliases (tenant_id, anonymous_id, subscriber_id) VALUES ($1, 'anon-1', 'user-1')",
            [tenant])
        // Queued under the anonymous id but sent after identify, and sent under the new id.
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(anonymous: "anon-1", [Bodies.event("late-anon", offsetSeconds: 3)]))
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(subscriber: "user-1", [Bodies.event("after-1", offsetSeconds: 4)]))
        #expect(try await harness.waitForEvents(tenant: tenant, expected: 4) == 4)

        let page = try await EventQueries.list(postgres: harness.postgres, tenantId: tenant, subscriberId: "user-1")
        #expect(page.events.map(\.id) == ["after-1", "late-anon", "before-2", "before-1"])
        #expect(page.events.first { $0.id == "late-anon" }?.subscriberId == "user-1")
        #expect(page.events.first { $0.id == "late-anon" }?.anonymousId == "anon-1")
        // The workflow scheduler sees the post-identify anonymous event on the subscriber.
        #expect(try await harness.published().first { $0.eventId == "late-anon" }?.subscriberId == "user-1")
        // Another subscriber sees none of them.
        let other = try await EventQueries.list(postgres: harness.postgres, tenantId: tenant, subscriberId: "user-2")
        #expect(other.events.isEmpty)
        await harness.stop()
    }

    @Test func receiptCountersFollowDistinctSubscribers() async throws {
        let harness = try await IngestHarness.start()
        let tenant = UUID()
        func receipt(_ id: String, _ name: String, message: String) -> JSONValue {
            Bodies.event(id, name, data: ["messageId": .string(message)])
        }
        // u1: delivered twice (two devices) and opened; u2: delivered; u3: opened only; m2 untouched by u2.
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(
                subscriber: "u1",
                [
                    receipt("r1", "$notification.delivered", message: "m1"),
                    receipt("r2", "$notification.delivered", message: "m1"),
                    receipt("r3", "$notification.opened", message: "m1")
                ]))
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(
                subscriber: "u2",
                [
                    receipt("r4", "$notification.delivered", message: "m1"),
                    receipt("r5", "$notification.dismissed", message: "m2")
                ]))
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(
                subscriber: "u3",
                [
                    receipt("r6", "$notification.opened", message: "m1"),
                    // A receipt for a message nobody knows: stored, counted under its id, harmless.
                    receipt("r7", "$notification.opened", message: "no-such-message")
                ]))
        #expect(try await harness.waitForEvents(tenant: tenant, expected: 7) == 7)
        #expect(try await harness.waitUntilDrained())
        var counts = try await ReceiptQueries.counts(
            postgres: harness.postgres, tenantId: tenant, messageIds: ["m1", "m2"])
        #expect(counts["m1"] == ReceiptCounts(delivered: 2, opened: 2, dismissed: 0))
        #expect(counts["m2"] == ReceiptCounts(delivered: 0, opened: 0, dismissed: 1))

        // A retried batch changes nothing; a new receipt from a new subscriber moves the count.
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(
                subscriber: "u1",
                [
                    receipt("r3", "$notification.opened", message: "m1")
                ]))
        _ = try await harness.intake.accept(
            tenantId: tenant,
            json: Bodies.batch(
                subscriber: "u4",
                [
                    receipt("r8", "$notification.opened", message: "m1")
                ]))
        #expect(try await harness.waitForEvents(tenant: tenant, expected: 8) == 8)
        #expect(try await harness.waitUntilDrained())
        counts = try await ReceiptQueries.counts(postgres: harness.postgres, tenantId: tenant, messageIds: ["m1"])
        #expect(counts["m1"] == ReceiptCounts(delivered: 2, opened: 3, dismissed: 0))
        #expect(counts["m1"]?.openRate(audience: 4) == 0.75)
        await harness.stop()
    }

    @Test func redeliveredEntryIsPublishedAgainNotDropped() async throws {
        // A consumer that committed but died before XACK: the entry comes back; its events must be
        // published again (not mistaken for another batch's duplicates), and stored once.
        let harness = try await IngestHarness.start(consumers: 1)
        let tenant = UUID()
        await harness.services[1].shutdown()  // stop the consumer; write through the processor directly
        let processor = IngestProcessor(
            postgres: harness.postgres, redis: harness.redis, configuration: harness.configuration,
            logger: .silent(), metrics: .init())
        let batch = try EventIntake.validate(
            Bodies.batch(subscriber: "u1", Bodies.events(prefix: "x", count: 3)), now: Date())
        let entry = IngestEntry(tenantId: tenant, batchId: "b", batch: batch, receivedAt: Date())
        let id = try await harness.producer.enqueue(entry)
        let streamEntry = try #require(
            try await harness.redis.xrange(harness.configuration.ingestStream.rawValue).first { $0.id == id })
        #expect(await processor.handle([streamEntry]).isEmpty)
        #expect(await processor.handle([streamEntry]).isEmpty)  // redelivery
        #expect(try await harness.storedEvents(tenant: tenant) == 3)
        #expect(try await harness.published().count == 6)
        // A different entry carrying the same events is a duplicate: not published.
        let copy = try await harness.producer.enqueue(entry)
        let copyEntry = try #require(
            try await harness.redis.xrange(harness.configuration.ingestStream.rawValue).first { $0.id == copy })
        #expect(await processor.handle([copyEntry]).isEmpty)
        #expect(try await harness.published().count == 6)
        await harness.stop()
    }

    @Test func partitionMaintenanceCreatesAheadAndDropsPastRetention() async throws {
        let harness = try await IngestHarness.start(consumers: 1, retention: (days: 30, monthsAhead: 3))
        let tenant = UUID()
        // An event 500 days old goes to the default partition (older than every month partition).
        let old = EventTimestamp.microseconds(Date()) - 500 * 86_400 * 1_000_000
        // One transaction, so the service's own maintenance run (at start) sees the event and its
        // id together or neither, never an id without its event.
        try await harness.postgres.withTransaction { tx in
            try await tx.execute(
                """
                INSERT INTO events (tenant_id, event_id, name, subscriber_id, occurred_at)
                VALUES ($1, 'old', 'x', 'u1', timestamptz 'epoch' + $2::int8 * interval '1 microsecond')
                """, [tenant, old])
            try await tx.execute(
                "INSERT INTO event_ids (tenant_id, event_id, entry_id) VALUES ($1, 'old', '0-1')", [tenant])
        }
        // Retention of 30 days, 3 months ahead: exactly the months from the cutoff's to three after
        // this one remain (the migration had created 13 months back), and the old row goes with its id.
        try await harness.postgres.query("SELECT bk_events_maintain(30, 3)")
        let mismatched = try await harness.count(
            """
            WITH expected AS (
                SELECT 'events_p' || to_char(m, 'YYYYMM') AS name
                FROM generate_series(date_trunc('month', (now() - interval '30 days') AT TIME ZONE 'UTC'),
                                     date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
                                     interval '1 month') AS m
            ), actual AS (
                SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename ~ '^events_p[0-9]{6}$'
            )
            SELECT count(*) FROM ((SELECT name FROM expected EXCEPT SELECT name FROM actual)
                                  UNION ALL (SELECT name FROM actual EXCEPT SELECT name FROM expected)) d
            """, [harness.schema.name])
        #expect(mismatched == 0)
        #expect(try await harness.storedEvents(tenant: tenant) == 0)
        #expect(try await harness.count("SELECT count(*) FROM event_ids WHERE tenant_id = $1", [tenant]) == 0)
        await harness.stop()
    }
}
