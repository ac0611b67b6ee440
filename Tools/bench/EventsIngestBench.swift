import BuzzKitContracts
import BuzzKitCore
import BuzzKitIntake
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitWire
import Foundation
import IngestApp

/// The throughput benchmark behind `bench/events_ingest.sh` (`buzzkit-bench events-ingest ...`): events/s through
/// `IngestProducer` + the ingest consumers into Postgres (durable: committed), against a raw
/// `COPY` of the same rows into `events` in the same run. Expects a migrated, empty database.
enum EventsIngestBench {
    /// Runs and returns the report lines (`name value`).
    static func run(arguments: [String]) async throws -> [String] {
        var options: [String: String] = [:]
        var i = 0
        while i + 1 < arguments.count {
            options[arguments[i]] = arguments[i + 1]
            i += 2
        }
        let events = Int(options["--events"] ?? "") ?? 300_000
        let consumers = Int(options["--consumers"] ?? "") ?? 2
        let producers = Int(options["--producers"] ?? "") ?? 4
        let logger = Logger(label: "events-bench", logLevel: .warning)
        var pgConfiguration = try PostgresConfiguration(
            url: options["--postgres"] ?? "postgres://buzzkit@127.0.0.1:5432/buzzkit")
        pgConfiguration.poolSize = consumers + 2
        let postgres = PostgresClient(configuration: pgConfiguration, logger: logger)
        var redisConfiguration = try RedisConfiguration(url: options["--redis"] ?? "redis://127.0.0.1:6379")
        redisConfiguration.poolSize = producers + 4
        let redis = RedisClient(configuration: redisConfiguration, logger: logger)
        defer { redis.close() }

        // Rows: 100 events per batch, 10k subscribers, 20 names, ~60 B of data each.
        let batches = events / EventBatch.maxEvents
        let tenant = UUID()
        let base = EventTimestamp.microseconds(Date()) - 86_400_000_000
        func entry(_ b: Int, tenant: UUID) -> IngestEntry {
            IngestEntry(
                tenantId: tenant, batchId: "b\(b)", identity: .subscriber("user-\(b % 10_000)"),
                receivedAtMicroseconds: base + Int64(b),
                events: (0..<EventBatch.maxEvents).map { e in
                    IngestEntry.Event(
                        id: "evt-\(b)-\(e)", name: "event.name.\((b + e) % 20)",
                        timestampMicroseconds: base + Int64(b * 100 + e) * 1000,
                        dataJSON: Array(#"{"duration":\#(e),"program":"legs","source":"bench"}"#.utf8))
                })
        }

        // 1. Durable path: producers XADD (pipelined, 20 batches per round trip) while consumers store.
        var configuration = IngestConfiguration(consumerName: "bench")
        configuration.consumers = consumers
        let metrics = MetricsRegistry()
        let services = IngestService.makeServices(
            postgres: postgres, redis: redis, configuration: configuration,
            logger: logger, metrics: metrics)
        let stored = metrics.counter("bk_ingest_events_stored_total", help: "Events newly stored in Postgres.")
        let producer = IngestProducer(redis: redis)
        let clock = ContinuousClock()
        let start = clock.now
        var produced = Duration.zero
        var durable = Duration.zero
        try await runServices(services) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for p in 0..<producers {
                    group.addTask {
                        var chunk: [IngestEntry] = []
                        for b in stride(from: p, to: batches, by: producers) {
                            chunk.append(entry(b, tenant: tenant))
                            if chunk.count == 20 {
                                try await producer.enqueue(chunk)
                                chunk.removeAll()
                            }
                        }
                        if !chunk.isEmpty { try await producer.enqueue(chunk) }
                    }
                }
                try await group.waitForAll()
            }
            produced = clock.now - start
            while stored.current < batches * EventBatch.maxEvents { try await Task.sleep(for: .milliseconds(20)) }
            durable = clock.now - start
        }

        // 2. Raw COPY of the same rows (another tenant), two streams like the two consumers.
        let copyTenant = UUID()
        let copyStart = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for s in 0..<consumers {
                group.addTask {
                    var rows: [[any PostgresEncodable]] = []
                    for b in stride(from: s, to: batches, by: consumers) {
                        let e = entry(b, tenant: copyTenant)
                        for event in e.events {
                            rows.append([
                                copyTenant, event.id, event.name, e.identity.value, String?.none,
                                String(decoding: event.dataJSON, as: UTF8.self),
                                Date(timeIntervalSince1970: Double(event.timestampMicroseconds) / 1e6),
                                Date(timeIntervalSince1970: Double(e.receivedAtMicroseconds) / 1e6)
                            ])
                        }
                    }
                    _ = try await postgres.copy(
                        into: "events",
                        columns: [
                            "tenant_id", "event_id", "name", "subscriber_id",
                            "anonymous_id", "data", "occurred_at", "received_at"
                        ], rows: rows)
                }
            }
            try await group.waitForAll()
        }
        let copied = clock.now - copyStart
        await postgres.shutdown()
        let total = Double(batches * EventBatch.maxEvents)
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        return [
            "events \(Int(total))",
            "produce_rate \(Int(total / seconds(produced)))",
            "durable_rate \(Int(total / seconds(durable)))",
            "copy_rate \(Int(total / seconds(copied)))"
        ]
    }
}
