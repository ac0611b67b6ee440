import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRetention
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Testing
import WorkflowApp

/// Retention of workflow runs (migration 0024): weekly partitions dropped past the retention,
/// never one holding a live run or a run ended within the retention, never blocking a writer.
/// Time is moved by passing the pass its `now` (the partitions are made around it).
@Suite("Workflow run retention", .requiresPostgres)
struct RunRetentionTests {
    static let day: TimeInterval = 86_400

    func trigger(_ id: String) -> WorkflowEvent {
        WorkflowEvent(id: id, name: "workout.scheduled", data: ["workoutId": "w1"], occurredAt: Date())
    }

    func start(_ f: WorkflowStoreFixture, _ key: String) async throws -> UUID {
        let (version, definition) = try await f.save("nudge", nudgeDefinition)
        return try await WorkflowRunStore(postgres: f.postgres).requestStart(
            tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
            subscriberId: "alice", trigger: trigger(key), triggerKey: key
        ).runId
    }

    func end(_ f: WorkflowStoreFixture, _ id: UUID, daysFromNow: Int = 0) async throws {
        try await f.postgres.execute(
            """
            UPDATE workflow_runs SET status = 'completed', wake_at = NULL,
                   ended_at = now() + make_interval(days => $2)
            WHERE id = $1::uuid
            """, [id, daysFromNow])
    }

    func count(_ f: WorkflowStoreFixture, _ sql: String) async throws -> Int {
        try await f.postgres.query(sql)[0].decode(Int.self, at: 0)
    }

    @Test func aWeekIsKeptWhileItHoldsALiveOrRecentlyEndedRunThenDropped() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let waiting = try await start(f, "t-waiting")
            let late = try await start(f, "t-late")
            try await f.postgres.execute(
                "INSERT INTO workflow_run_inputs (run_id, kind, payload) VALUES ($1::uuid, 'cancel', '{}')", [late])
            // `late` ended 50 days from now (it waited long); `waiting` still waits.
            try await end(f, late, daysFromNow: 50)
            let retention = WorkflowRunRetention(postgres: f.postgres, retentionDays: 30)
            let in60 = Date().addingTimeInterval(60 * Self.day)

            var pass = try await retention.maintain(now: in60)
            #expect(pass.ran)
            #expect(pass.kept == [.init(partition: "workflow_runs_legacy", liveRuns: 1, recentlyEnded: 1)])
            // The empty weeks between now and the cutoff went; the weeks ahead of `in60` were made.
            #expect(!pass.dropped.isEmpty)
            #expect(pass.dropped.allSatisfy { $0.hasPrefix("workflow_runs_p") })
            #expect(pass.partitionsAhead >= 4)
            let oldestKept = try #require(pass.oldest)
            #expect(oldestKept <= Date())

            try await end(f, waiting)
            pass = try await retention.maintain(now: in60)
            #expect(pass.kept == [.init(partition: "workflow_runs_legacy", liveRuns: 0, recentlyEnded: 1)])
            #expect(try await count(f, "SELECT count(*) FROM workflow_runs") == 2)

            // 90 days on, `late` ended 40 days before: the legacy week goes with its side rows.
            let in90 = Date().addingTimeInterval(90 * Self.day)
            pass = try await retention.maintain(now: in90)
            #expect(pass.kept == [])
            #expect(pass.dropped.contains("workflow_runs_legacy"))
            #expect(try await count(f, "SELECT count(*) FROM workflow_runs") == 0)
            #expect(try await count(f, "SELECT count(*) FROM workflow_run_triggers") == 0)
            #expect(try await count(f, "SELECT count(*) FROM workflow_run_inputs") == 0)
            let legacy = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1"
            #expect(try await f.postgres.query(legacy, ["workflow_runs_legacy"])[0].decode(Int.self, at: 0) == 0)
            let oldest = try #require(pass.oldest)
            #expect(oldest > Date().addingTimeInterval(50 * Self.day))
        } finally: {
            await f.stop()
        }
    }

    @Test func aSecondReplicaSkipsWhileAPassHoldsTheLock() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let partitions = TimePartitions(parent: "workflow_runs")
            try await f.postgres.withConnection { held in
                #expect(try await partitions.tryLock(on: held))
                let pass = try await WorkflowRunRetention(postgres: f.postgres).maintain()
                #expect(!pass.ran)
                try await partitions.unlock(on: held)
            }
            #expect(try await WorkflowRunRetention(postgres: f.postgres).maintain().ran)
        } finally: {
            await f.stop()
        }
    }

    /// The drop waits for a transaction writing runs; a run written meanwhile by another session
    /// is not held up behind it (a `DROP TABLE` of an attached partition would queue it).
    @Test func aDropDoesNotBlockRunsBeingWritten() async throws {
        let f = try await WorkflowStoreFixture.start(poolSize: 6)
        try await withCleanup {
            let old = try await start(f, "t-old")
            try await end(f, old)
            let retention = WorkflowRunRetention(postgres: f.postgres, retentionDays: 30)
            let in60 = Date().addingTimeInterval(60 * Self.day)
            // Make the weeks around `in60` first, so the writers below have a partition.
            try await f.postgres.withConnection {
                try await TimePartitions(parent: "workflow_runs").createWeeks(on: $0, now: in60, weeksAhead: 1)
            }
            let (version, _) = try await f.save("nudge", nudgeDefinition)
            let insert = """
                INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status,
                                           wake_at, created_at)
                VALUES ($1::uuid, $2::uuid, 'nudge', $3, 'bob', $4, 'running', NULL, now() + interval '61 days')
                """
            let writerOpen = OneShot<Void>()
            let writerMayCommit = OneShot<Void>()
            let writer = Task {
                try await f.postgres.withTransaction { tx in
                    try await tx.execute(insert, [UUID(), f.tenantId, version, "w-1"])
                    _ = writerOpen.fulfill(())
                    try await writerMayCommit.wait()
                    try await tx.execute(insert, [UUID(), f.tenantId, version, "w-2"])
                }
            }
            try await writerOpen.wait()
            let drop = Task { try await retention.maintain(now: in60) }
            // The detach is waiting for the writer's transaction.
            var waited = false
            for _ in 0..<200 where !waited {
                waited =
                    try await count(
                        f,
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database() AND query LIKE 'ALTER TABLE "workflow_runs" DETACH PARTITION%'
                          AND wait_event_type = 'Lock'
                        """) > 0
                if !waited { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(waited)
            // Meanwhile another session writes a run, and is not held up.
            let started = ContinuousClock.now
            try await f.postgres.execute(insert, [UUID(), f.tenantId, version, "other"])
            #expect(ContinuousClock.now - started < .seconds(2))
            _ = writerMayCommit.fulfill(())
            try await writer.value
            let pass = try await drop.value
            #expect(pass.dropped.contains("workflow_runs_legacy"))
            #expect(try await count(f, "SELECT count(*) FROM workflow_runs") == 3)
        } finally: {
            await f.stop()
        }
    }

    @Test func theServiceShowsTheSettingAndTheOldestDataKept() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            var configuration = WorkflowConfiguration(consumerName: "t")
            configuration.runRetentionDays = 12
            let registry = MetricsRegistry()
            let service = RunRetentionService(
                postgres: f.postgres, configuration: configuration, logger: .silent(), metrics: registry)
            let pass = try await service.pass()
            #expect(pass.ran)
            let text = registry.render()
            for line in RetentionMetricsText.afterFirstPass(table: "workflow_runs", days: 12) {
                #expect(text.contains(line), "\(line)")
            }
            // And what the gateway shows (GET /v1/retention): the same, recorded by the pass.
            let status = try await RetentionStatus.all(on: f.postgres)
            #expect(status.map(\.table) == ["workflow_runs"])
            #expect(status.first?.retention == .seconds(12 * 86_400) && status.first?.partitionsAhead == 4)
            #expect(status.first?.oldestKept == nil && status.first?.partitionsKept == 0)
            #expect(
                try WorkflowConfiguration(consumerName: "t", environment: ["BUZZKIT_RUN_RETENTION_DAYS": "90"])
                    .runRetentionDays == 90)
            #expect(throws: ConfigurationError.self) {
                try WorkflowConfiguration(consumerName: "t", environment: ["BUZZKIT_RUN_RETENTION_DAYS": "0"])
            }
        } finally: {
            await f.stop()
        }
    }
}
