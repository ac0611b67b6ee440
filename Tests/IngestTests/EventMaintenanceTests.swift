import BuzzKitContracts
import BuzzKitCore
import BuzzKitRedis
import BuzzKitRetention
import BuzzKitTestSupport
import Foundation
import IngestApp
import Testing

/// The maintenance service keeps working after its first round: `bk:ingest` is trimmed every
/// `trimInterval` and partitions are maintained every `maintenanceInterval`, not only at start.
/// Each check runs twice in a row, so the round at start cannot answer both.
@Suite(.requiresTestStack) struct EventMaintenanceTests {
    /// A maintenance service of the test's own on the harness's schema, with short intervals and a
    /// stream of its own (the harness's consumers never read it).
    func withMaintenance(
        _ body: (IngestHarness, IngestConfiguration) async throws -> Void
    ) async throws {
        let harness = try await IngestHarness.start(consumers: 1)
        var configuration = harness.configuration
        configuration.ingestStream = StreamName(TestEnvironment.uniqueName("bk:ingest:maintained"))
        configuration.trimInterval = .milliseconds(100)
        configuration.maintenanceInterval = .milliseconds(300)
        let service = EventMaintenanceService(
            postgres: harness.postgres, redis: harness.redis, configuration: configuration, logger: .silent(),
            metrics: MetricsRegistry())
        let running = RunningServices([service])
        try await withCleanup {
            try await body(harness, configuration)
        } finally: {
            await running.stop()
            _ = try? await harness.redis.del(keys: [configuration.ingestStream.rawValue])
            await harness.stop()
        }
    }

    @Test("bk:ingest is trimmed again after entries are acknowledged later")
    func trimsRepeatedly() async throws {
        try await withMaintenance { harness, configuration in
            let stream = configuration.ingestStream.rawValue
            let redis = harness.redis
            try await redis.createGroup(stream, group: "g")
            for round in 1...2 {
                // 1,000 entries (ten of Redis's 100-entry nodes, so `MINID ~` can drop whole ones),
                // read and acknowledged by the group.
                let entries = (0..<1000).map { [("n", Array("\(round)-\($0)".utf8))] }
                try await redis.xaddBatch(stream, entries: entries)
                var read = 0
                while read < 1000 {
                    let batch = try await redis.readGroup(stream, group: "g", consumer: "c", count: 500)
                    try await redis.ack(stream, group: "g", ids: batch.map(\.id))
                    read += batch.count
                }
                var length = 0
                let trimmed = try await RedisTestSupport.eventually(limit: .seconds(20)) {
                    length = try await redis.xlen(stream)
                    return length < 200
                }
                #expect(trimmed, "round \(round): \(length) entries left untrimmed")
            }
        }
    }

    @Test("a dropped partition ahead is created again, twice")
    func maintainsPartitionsRepeatedly() async throws {
        try await withMaintenance { harness, configuration in
            let name = try #require(
                try await harness.postgres.query(
                    """
                    SELECT 'events_p' || to_char(date_trunc('month', now() AT TIME ZONE 'UTC')
                        + make_interval(months => $1::int), 'YYYYMM')
                    """, [configuration.partitionsAhead]
                ).first?.decode(String.self, at: 0))
            for round in 1...2 {
                try await harness.postgres.execute("DROP TABLE IF EXISTS \"\(name)\"")
                let recreated = try await RedisTestSupport.eventually(limit: .seconds(20)) {
                    try await harness.count(
                        "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = $2",
                        [harness.schema.name, name]) == 1
                }
                #expect(recreated, "round \(round): \(name) was not created again")
            }
            // Each pass records the events' retention for GET /v1/retention and the dashboard (a
            // pass under way when the partition was dropped may record it missing: the next one
            // that ran after it came back shows it).
            var status: RetentionStatus?
            let recorded = try await RedisTestSupport.eventually(limit: .seconds(20)) {
                status = try await RetentionStatus.all(on: harness.postgres).first { $0.table == "events" }
                return (status?.partitionsAhead ?? 0) >= configuration.partitionsAhead
            }
            #expect(recorded, "the events' retention status: \(String(describing: status))")
            #expect(status?.retention == .seconds(configuration.retentionDays * 86_400))
            #expect((status?.partitions ?? 0) >= configuration.partitionsAhead + 1)
            let oldest = try #require(status?.oldestKept)
            #expect(oldest <= Date())
        }
    }
}
