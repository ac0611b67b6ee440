import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitRuntime
import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import WorkflowApp

/// The measurements behind `bench/workflows.sh` (`buzzkit-bench workflows ...`), each against a raw
/// baseline in the same run. Expects a migrated, empty database and an empty Redis.
///
/// 1. `lateness`: `--runs` waiting runs (default 1,000,000), `--rate` of them (2,000) falling due
///    every second for `--seconds` (60); the run workers advance them: fired − due p50 / p99 / max.
///    Baseline: the same schedule in a bare table (`id, due_at, fired_at`) claimed by a bare
///    `UPDATE … FOR UPDATE SKIP LOCKED` loop with the same workers, batch and poll interval.
/// 2. `triggers`: `--trigger-events` (200,000) trigger events on `bk:events` (100 per entry) to
///    runs started, through the events consumer. Baseline: the same entries read with
///    XREADGROUP and one bare row per event inserted (unnest) per entry.
enum WorkflowBench {
    static func run(arguments: [String]) async throws -> [String] {
        var options: [String: String] = [:]
        var i = 0
        while i + 1 < arguments.count {
            options[arguments[i]] = arguments[i + 1]
            i += 2
        }
        let logger = Logger(label: "workflow-bench", logLevel: .warning)
        var pg = try PostgresConfiguration(url: options["--postgres"] ?? "postgres://buzzkit@127.0.0.1:5432/buzzkit")
        pg.poolSize = 8
        let postgres = PostgresClient(configuration: pg, logger: logger)
        let redis = RedisClient(
            configuration: try RedisConfiguration(url: options["--redis"] ?? "redis://127.0.0.1:6379"),
            logger: logger)
        defer { redis.close() }
        let tenant = try await makeTenant(postgres)
        var lines: [String] = []
        let only = options["--only"]
        if only == nil || only == "lateness" {
            lines += try await lateness(
                postgres: postgres, redis: redis, tenant: tenant, logger: logger,
                runs: Int(options["--runs"] ?? "") ?? 1_000_000,
                rate: Int(options["--rate"] ?? "") ?? 2_000,
                seconds: Int(options["--seconds"] ?? "") ?? 60)
        }
        if only == nil || only == "triggers" {
            lines += try await triggers(
                postgres: postgres, redis: redis, tenant: tenant, logger: logger,
                events: Int(options["--trigger-events"] ?? "") ?? 200_000)
        }
        await postgres.shutdown()
        return lines
    }

    static func makeTenant(_ postgres: PostgresClient) async throws -> UUID {
        let workspace = try await postgres.query("INSERT INTO workspaces (name) VALUES ('bench') RETURNING id")[0]
            .decode(UUID.self, at: 0)
        return try await postgres.query(
            "INSERT INTO tenants (workspace_id, name) VALUES ($1::uuid, 'bench') RETURNING id",
            [workspace])[0].decode(UUID.self, at: 0)
    }

    static func save(_ postgres: PostgresClient, tenant: UUID, key: String, _ text: String) async throws
        -> WorkflowDefinition
    {
        guard case .success(let definition) = WorkflowDefinition.parse(try JSONValue.parse(text)) else {
            throw WorkflowBenchError("bench definition refused")
        }
        try await postgres.execute(
            "INSERT INTO workflows (tenant_id, key, current_version, trigger_event) VALUES ($1::uuid, $2, 1, $3)",
            [tenant, key, definition.trigger.event])
        try await postgres.execute(
            """
            INSERT INTO workflow_versions (tenant_id, workflow_key, version, definition, digest)
            VALUES ($1::uuid, $2, 1, $3, sha256(convert_to($3, 'UTF8')))
            """, [tenant, key, String(decoding: definition.canonicalJSON, as: UTF8.self)])
        return definition
    }

    /// Runs `services` until `done` says so (polled every 250 ms) or `limit` passes; then stops them.
    static func running(_ services: [any Service], limit: Duration, until done: () async throws -> Bool) async throws {
        try await runServices(services) {
            let clock = ContinuousClock()
            let deadline = clock.now + limit
            while clock.now < deadline, !(try await done()) { try await Task.sleep(for: .milliseconds(250)) }
        }
    }

    // MARK: - 1. Wake-up lateness

    static func lateness(
        postgres: PostgresClient, redis: RedisClient, tenant: UUID, logger: Logger,
        runs: Int, rate: Int, seconds: Int
    ) async throws -> [String] {
        let definition = try await save(
            postgres, tenant: tenant, key: "bench-wait",
            """
            {"trigger": {"event": "bench.go"}, "steps": [{"name": "w", "wait": {"duration": "1h"}}, {"name": "done", "exit": {}}]}
            """)
        try await postgres.execute("INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, 'bench')", [tenant])
        let template = WorkflowEngine.start(
            runId: "RUN", workflowKey: "bench-wait", version: 1, definition: definition,
            trigger: WorkflowEvent(id: "t", name: "bench.go", occurredAt: Date()),
            subscriber: WorkflowSubscriber(id: "bench"),
            environment: WorkflowEnvironment(now: Date(), messageId: { _, _, _ in "" })
        ).state.jsonValue
        let falling = min(runs, rate * seconds)
        // The runs: `falling` of them due at `rate` per second from `start`, the rest a day later.
        // The far ones are inserted first, the falling ones last, just before the workers start.
        func insertRuns(_ from: Int, _ to: Int, start: Date) async throws {
            var first = from
            while first < to {
                let last = min(to, first + 50_000)
                try await postgres.execute(
                    """
                    WITH s AS (
                        SELECT gen_random_uuid() AS id, g,
                               CASE WHEN g < $4 THEN $5::timestamptz + make_interval(secs => g::double precision / $6)
                                    ELSE $5::timestamptz + interval '1 day' END AS due
                        FROM generate_series($2::int, $3::int - 1) AS g)
                    INSERT INTO workflow_runs (id, tenant_id, workflow_key, version, subscriber_id, trigger_key, status, state,
                                               timer_token, timer_due_at, wake_at, started_at)
                    SELECT id, $1::uuid, 'bench-wait', 1, 'bench', 'b' || g, 'running',
                           jsonb_set(jsonb_set(jsonb_set($7::jsonb, '{runId}', to_jsonb(id::text)),
                                               '{timer,dueAt}', to_jsonb(to_char(due AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
                                     '{outcomes,0,dueAt}', to_jsonb(to_char(due AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
                           'w:wait', due, due, now()
                    FROM s
                    """, [tenant, first, last, falling, EventTimestamp.format(start), rate, template])
                first = last
            }
        }
        func insertTimers(_ from: Int, _ to: Int, start: Date) async throws {
            try await postgres.execute(
                """
                INSERT INTO bench_timers (id, due_at)
                SELECT g, CASE WHEN g < $2 THEN $1::timestamptz + make_interval(secs => g::double precision / $3)
                               ELSE $1::timestamptz + interval '1 day' END
                FROM generate_series($4::int, $5::int - 1) AS g
                """, [EventTimestamp.format(start), falling, rate, from, to])
        }
        try await postgres.execute(
            "CREATE TABLE bench_timers (id bigint PRIMARY KEY, due_at timestamptz, fired_at timestamptz)")
        try await postgres.execute("CREATE INDEX bench_timers_due ON bench_timers (due_at) WHERE fired_at IS NULL")
        try await insertRuns(falling, runs, start: Date())
        try await insertTimers(falling, runs, start: Date())
        let start = Date().addingTimeInterval(10 + Double(falling) / 10_000)
        try await insertRuns(0, falling, start: start)
        try await postgres.execute("ANALYZE workflow_runs")

        var configuration = WorkflowConfiguration(consumerName: "bench")
        configuration.eventsStream = StreamName("bench:events:unused")
        let registry = MetricsRegistry()
        let services = WorkflowService.makeServices(
            postgres: postgres, redis: redis, configuration: configuration,
            logger: logger, metrics: registry, parts: [.runWorkers])
        let completed = WorkflowMetrics(registry).runsCompleted
        let deadline = Duration.seconds(max(0, start.timeIntervalSinceNow) + Double(seconds) + 30)
        // Counted in this process (no polling statement to load Postgres); CPU from the first due run.
        try await Task.sleep(for: .seconds(max(0, start.timeIntervalSinceNow)))
        let cpuBefore = await BenchCPU.snapshot(postgres: postgres, redis: redis)
        try await running(services, limit: deadline) { completed.current >= falling }
        let cpuAfter = await BenchCPU.snapshot(postgres: postgres, redis: redis, pids: cpuBefore.pids)
        let measured = try await postgres.query(
            """
            SELECT count(*)::int,
                   (percentile_cont(0.5) WITHIN GROUP (ORDER BY late))::float8, (percentile_cont(0.99) WITHIN GROUP (ORDER BY late))::float8,
                   max(late)::float8
            FROM (SELECT extract(epoch FROM ((state->'outcomes'->0->>'endedAt')::timestamptz
                                             - (state->'outcomes'->0->>'dueAt')::timestamptz)) AS late
                  FROM workflow_runs WHERE status = 'completed') t
            """)[0]

        // The baseline: bare claims of the same schedule, same workers, batch and poll interval.
        let rawStart = Date().addingTimeInterval(10 + Double(falling) / 50_000)
        try await insertTimers(0, falling, start: rawStart)
        try await postgres.execute("ANALYZE bench_timers")
        let batchSize = configuration.claimBatch
        let poll = configuration.pollInterval
        let rawEnd = rawStart.addingTimeInterval(Double(seconds) + 10)
        await withDiscardingTaskGroup { group in
            for _ in 0..<configuration.timerWorkers {
                group.addTask { [postgres] in
                    while Date() < rawEnd {
                        let n =
                            (try? await postgres.execute(
                                """
                                UPDATE bench_timers SET fired_at = clock_timestamp() WHERE id IN (
                                    SELECT id FROM bench_timers WHERE fired_at IS NULL AND due_at <= now()
                                    ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED)
                                """, [batchSize])) ?? 0
                        if n < batchSize { try? await Task.sleep(for: poll) }
                    }
                }
            }
        }
        let raw = try await postgres.query(
            """
            SELECT count(*)::int,
                   (percentile_cont(0.5) WITHIN GROUP (ORDER BY late))::float8, (percentile_cont(0.99) WITHIN GROUP (ORDER BY late))::float8,
                   max(late)::float8
            FROM (SELECT extract(epoch FROM fired_at - due_at) AS late FROM bench_timers WHERE fired_at IS NOT NULL) t
            """)[0]
        func row(_ r: PostgresRow) throws -> String {
            let (n, p50, p99, max) = try r.decode((Int, Double?, Double?, Double?).self)
            return "\(n) \(p50 ?? -1) \(p99 ?? -1) \(max ?? -1)"
        }
        return [
            "lateness_runs \(runs)", "lateness_due \(falling)", "lateness_workflow \(try row(measured))",
            "lateness_raw \(try row(raw))", cpuBefore.line(label: "lateness_cpu", to: cpuAfter, units: falling)
        ]
    }

    // MARK: - 3. Trigger events to runs started

    static func triggers(postgres: PostgresClient, redis: RedisClient, tenant: UUID, logger: Logger, events: Int)
        async throws -> [String]
    {
        _ = try await save(
            postgres, tenant: tenant, key: "bench-trigger",
            """
            {"trigger": {"event": "bench.start"}, "steps": [{"name": "w", "wait": {"duration": "1d"}}, {"name": "done", "exit": {}}]}
            """)
        let subscribers = 1000
        try await postgres.execute(
            "INSERT INTO subscribers (tenant_id, id) SELECT $1::uuid, 'u' || g FROM generate_series(0, $2::int - 1) g",
            [tenant, subscribers])
        let entries = events / 100
        let now = EventTimestamp.microseconds(Date())
        func batch(_ e: Int) -> PublishedEventBatch {
            PublishedEventBatch(
                tenantId: tenant, subscriberId: "u\(e % subscribers)", anonymousId: nil, receivedAtMicroseconds: now,
                events: (0..<100).map { n in
                    IngestEntry.Event(
                        id: "t\(e)-\(n)", name: "bench.start", timestampMicroseconds: now,
                        dataJSON: Array(#"{"n":\#(n)}"#.utf8))
                })
        }
        for stream in ["bench:events", "bench:events:raw"] {
            var e = 0
            while e < entries {
                let upper = min(entries, e + 200)
                for k in e..<upper { try await redis.xadd(stream, fields: batch(k).fields) }
                e = upper
            }
        }
        var configuration = WorkflowConfiguration(consumerName: "bench")
        configuration.eventsStream = StreamName("bench:events")
        configuration.eventsReadBatch = 50
        let registry = MetricsRegistry()
        let services = WorkflowService.makeServices(
            postgres: postgres, redis: redis, configuration: configuration,
            logger: logger, metrics: registry, parts: [.eventsConsumer])
        let runsStarted = WorkflowMetrics(registry).runsStarted
        let clock = ContinuousClock()
        let cpuBefore = await BenchCPU.snapshot(postgres: postgres, redis: redis)
        let began = clock.now
        try await running(services, limit: .seconds(600)) { runsStarted.current >= entries * 100 }
        let workflowSeconds = (clock.now - began).seconds
        let cpuAfter = await BenchCPU.snapshot(postgres: postgres, redis: redis, pids: cpuBefore.pids)
        let started = try await postgres.query(
            "SELECT count(*)::int FROM workflow_runs WHERE workflow_key = 'bench-trigger'")[0]
            .decode(Int.self, at: 0)

        // The baseline: the same entries, one bare row per event.
        try await postgres.execute(
            "CREATE TABLE bench_raw_runs (id uuid PRIMARY KEY, subscriber text, trigger_key text UNIQUE, state jsonb)")
        var rawConsumer = StreamConsumer.Configuration(stream: "bench:events:raw", group: "raw", consumer: "raw")
        rawConsumer.batchSize = 50
        rawConsumer.blockTime = .seconds(1)
        let consumer = StreamConsumer(
            client: redis, configuration: rawConsumer, logger: logger,
            batchHandler: { entries in
                var failures: [StreamEntryID: any Error] = [:]
                for entry in entries {
                    do {
                        let batch = try PublishedEventBatch(entry: entry)
                        try await postgres.execute(
                            """
                            INSERT INTO bench_raw_runs (id, subscriber, trigger_key, state)
                            SELECT gen_random_uuid(), $1, k, '{"status": "running"}'::jsonb FROM unnest($2::text[]) k
                            ON CONFLICT DO NOTHING
                            """, [batch.subscriberId, batch.events.map(\.id)])
                    } catch { failures[entry.id] = error }
                }
                return failures
            })
        let rawBegan = clock.now
        try await running([StreamConsumerService(consumer: consumer)], limit: .seconds(600)) {
            try await postgres.query("SELECT count(*)::int FROM bench_raw_runs")[0].decode(Int.self, at: 0) >= entries
                * 100
        }
        let rawSeconds = (clock.now - rawBegan).seconds
        return [
            "triggers_events \(entries * 100)", "triggers_started \(started)",
            "triggers_rate \(Double(started) / workflowSeconds)",
            "triggers_raw_rate \(Double(entries * 100) / rawSeconds)",
            cpuBefore.line(label: "triggers_cpu", to: cpuAfter, units: started)
        ]
    }
}

struct WorkflowBenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
