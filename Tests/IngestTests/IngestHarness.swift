import BuzzKitContracts
import BuzzKitCore
import BuzzKitIntake
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import IngestApp

/// One isolated ingest pipeline: its own Postgres schema (all migrations applied), its own
/// `bk:ingest` / `bk:events` stream names, and the ingest services running in-process.
final class IngestHarness: Sendable {
    let schema: MigratedSchema
    var postgres: PostgresClient { schema.postgres }
    let redis: RedisClient
    let configuration: IngestConfiguration
    let producer: IngestProducer
    let intake: EventIntake
    let services: [any Service]
    let running: RunningServices

    private init(schema: MigratedSchema, redis: RedisClient, configuration: IngestConfiguration) {
        self.schema = schema
        self.redis = redis
        self.configuration = configuration
        producer = IngestProducer(redis: redis, stream: configuration.ingestStream)
        intake = EventIntake(producer: producer, logger: .silent())
        services = IngestService.makeServices(
            postgres: schema.postgres, redis: redis, configuration: configuration,
            logger: .silent(), metrics: MetricsRegistry())
        running = RunningServices(services)
    }

    /// - Parameter redis: a client on another Redis (the restart test's own server); default the shared one.
    /// - Parameter retention: the in-process maintenance service's (days, months ahead), so a test that
    ///   runs `bk_events_maintain` itself gets the same outcome whichever of the two runs last.
    static func start(
        redis: RedisClient? = nil, consumers: Int = 2,
        retention: (days: Int, monthsAhead: Int)? = nil
    ) async throws -> IngestHarness {
        let schema = try await MigratedSchema.start("ingest")
        var configuration = IngestConfiguration(consumerName: TestEnvironment.uniqueName("ingest"))
        configuration.ingestStream = StreamName(TestEnvironment.uniqueName("bk:ingest"))
        configuration.eventsStream = StreamName(TestEnvironment.uniqueName("bk:events"))
        configuration.consumers = consumers
        configuration.readBatchSize = 20
        // Longer than any write takes even on a CI machine busy with the whole suite: a sibling
        // consumer reclaiming an entry still being written made a batch land after one sent later.
        configuration.claimIdleTime = .seconds(10)
        configuration.writeAttempts = 20
        if let retention {
            configuration.retentionDays = retention.days
            configuration.partitionsAhead = retention.monthsAhead
        }
        return IngestHarness(
            schema: schema, redis: try redis ?? RedisTestSupport.client(),
            configuration: configuration)
    }

    func stop() async {
        await running.stop()
        _ = try? await redis.del(keys: [configuration.ingestStream.rawValue, configuration.eventsStream.rawValue])
        await schema.stop()
    }

    // MARK: - Helpers

    func count(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
        try await postgres.query(sql, parameters).first?.decode(Int.self, at: 0) ?? 0
    }

    func storedEvents(tenant: UUID) async throws -> Int {
        try await count("SELECT count(*) FROM events WHERE tenant_id = $1", [tenant])
    }

    /// Waits until `tenant` has `expected` stored events (bounded), then returns the count found.
    func waitForEvents(tenant: UUID, expected: Int) async throws -> Int {
        _ = try await RedisTestSupport.eventually { try await self.storedEvents(tenant: tenant) >= expected }
        return try await storedEvents(tenant: tenant)
    }

    /// Waits until every `bk:ingest` entry is acknowledged by the ingest group.
    func waitUntilDrained() async throws -> Bool {
        try await RedisTestSupport.eventually {
            // One XINFO reply for both numbers: an XPENDING before and an XINFO after a consumer's
            // read saw "nothing pending" and "nothing unread" while the entry was being stored.
            // Not drained while the consumers have not created their group yet (NOGROUP).
            guard
                let info = try? await self.redis.send("XINFO", "GROUPS", self.configuration.ingestStream.rawValue),
                let group = info.array?.first?.array
            else { return false }
            var numbers: [String: Int] = [:]
            for i in stride(from: 0, to: group.count - 1, by: 2) {
                if let name = group[i].string, let number = group[i + 1].int { numbers[name] = number }
            }
            // pending 0: everything read was acknowledged; lag 0 (null when unknown): nothing unread.
            return numbers["pending"] == 0 && numbers["lag"] == 0
        }
    }

    /// Every event published on `bk:events` so far, entry by entry.
    func published() async throws -> [PublishedEvent] {
        try await redis.xrange(configuration.eventsStream.rawValue).flatMap {
            try PublishedEventBatch(entry: $0).publishedEvents
        }
    }

    /// A workspace and tenant row (for tables with foreign keys to tenants).
    func makeTenant() async throws -> UUID {
        let workspace = try await postgres.query("INSERT INTO workspaces (name) VALUES ('test') RETURNING id").first!
            .decode(UUID.self, at: 0)
        return try await postgres.query(
            "INSERT INTO tenants (workspace_id, name) VALUES ($1, 'app') RETURNING id", [workspace]
        )
        .first!.decode(UUID.self, at: 0)
    }
}

/// Builds request bodies.
enum Bodies {
    static let base = EventTimestamp.microseconds(Date()) - 3_600_000_000

    static func event(
        _ id: String, _ name: String = "workout.completed", data: JSONValue = ["duration": 42],
        offsetSeconds: Int = 0
    ) -> JSONValue {
        [
            "id": .string(id), "name": .string(name), "data": data,
            "timestamp": .string(EventTimestamp.format(microseconds: base + Int64(offsetSeconds) * 1_000_000))
        ]
    }

    static func batch(subscriber: String? = nil, anonymous: String? = nil, _ events: [JSONValue]) -> JSONValue {
        var body: [String: JSONValue] = ["events": .array(events)]
        if let subscriber { body["subscriberId"] = .string(subscriber) }
        if let anonymous { body["anonymousId"] = .string(anonymous) }
        return .object(body)
    }

    static func events(prefix: String, count: Int) -> [JSONValue] {
        (0..<count).map { event("\(prefix)-\($0)", offsetSeconds: $0) }
    }
}
