import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Synchronization
import Testing
import WorkflowApp

/// A clock the test sets.
final class ManualClock: Sendable {
    private let instant: Mutex<Date>
    init(_ start: Date) { instant = Mutex(start) }
    func set(_ date: Date) { instant.withLock { $0 = date } }
    func advance(_ seconds: Double) { instant.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var now: Date { instant.withLock { $0 } }
    var workflowClock: WorkflowClock { WorkflowClock { [self] in now } }
}

/// The workflow service in-process on a schema of its own, with its own stream names and a
/// manual clock: events are put on its `bk:events` as the ingest service would.
final class WorkflowServiceHarness: Sendable {
    let store: WorkflowStoreFixture
    let redis: RedisClient
    let configuration: WorkflowConfiguration
    let clock: ManualClock
    let services: [any Service]
    let running: RunningServices

    init(store: WorkflowStoreFixture, redis: RedisClient, clock: ManualClock) {
        self.store = store
        self.redis = redis
        self.clock = clock
        var configuration = WorkflowConfiguration(consumerName: TestEnvironment.uniqueName("wf"))
        configuration.eventsStream = StreamName(TestEnvironment.uniqueName("bk:events"))
        configuration.messagesStream = StreamName(TestEnvironment.uniqueName("bk:messages"))
        configuration.pollInterval = .milliseconds(20)
        configuration.clock = clock.workflowClock
        self.configuration = configuration
        services = WorkflowService.makeServices(
            postgres: store.postgres, redis: redis, configuration: configuration,
            logger: Logger(label: "workflow-test", logLevel: .warning), metrics: MetricsRegistry())
        running = RunningServices(services)
    }

    static func start(at start: Date = Date()) async throws -> WorkflowServiceHarness {
        WorkflowServiceHarness(
            store: try await WorkflowStoreFixture.start(poolSize: 8), redis: try RedisTestSupport.client(),
            clock: ManualClock(start))
    }

    func stop() async {
        await running.stop()
        _ = try? await redis.del(keys: [configuration.eventsStream.rawValue, configuration.messagesStream.rawValue])
        await store.stop()
    }

    /// Events of one subscriber as ingest publishes them (stored in `events` first, then on the stream).
    func publish(_ subscriber: String, _ events: [(id: String, name: String, data: JSONValue)]) async throws {
        let received = EventTimestamp.microseconds(Date())
        for event in events {
            try await store.postgres.execute(
                """
                INSERT INTO events (tenant_id, event_id, name, subscriber_id, data, occurred_at, received_at)
                VALUES ($1::uuid, $2, $3, $4, $5::jsonb, $6::timestamptz, $7::timestamptz)
                """,
                [
                    store.tenantId, event.id, event.name, subscriber, event.data, clock.now,
                    Date(timeIntervalSince1970: Double(received) / 1_000_000)
                ])
        }
        let batch = PublishedEventBatch(
            tenantId: store.tenantId, subscriberId: subscriber, anonymousId: nil,
            receivedAtMicroseconds: received,
            events: events.map {
                IngestEntry.Event(
                    id: $0.id, name: $0.name,
                    timestampMicroseconds: EventTimestamp.microseconds(clock.now),
                    dataJSON: $0.data.jsonBytes)
            })
        try await redis.xadd(configuration.eventsStream.rawValue, fields: batch.fields)
    }

    func runs(_ key: String) async throws -> [WorkflowRunRecord] {
        try await WorkflowRunStore(postgres: store.postgres).list(
            tenantId: store.tenantId, workflowKey: key, limit: 1000
        ).runs.reversed()
    }

    @discardableResult
    func waitRuns(_ key: String, count: Int, _ condition: @escaping (WorkflowRunRecord) -> Bool) async throws
        -> [WorkflowRunRecord]
    {
        var last: [WorkflowRunRecord] = []
        let done = try await RedisTestSupport.eventually(limit: .seconds(20)) {
            last = try await runs(key)
            return last.filter(condition).count >= count
        }
        guard done else {
            throw TestFailure("runs of \(key) never reached \(count): \(last.map { $0.jsonValue.jsonString })")
        }
        return last
    }

    /// The messages the runs wrote, with their kind and content, oldest first.
    func messageRows(_ key: String) async throws -> [(id: String, kind: String, content: JSONValue, step: String)] {
        try await store.postgres.query(
            """
            SELECT id::text, kind, content, workflow_step FROM messages WHERE workflow_key = $1 ORDER BY created_at, id
            """, [key]
        ).map {
            (
                try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1),
                try $0.decode(JSONValue.self, at: 2), try $0.decode(String.self, at: 3)
            )
        }
    }

    /// The messages the runs wrote (content body by subscriber), oldest first.
    func messages(_ key: String) async throws -> [(subscriber: String, body: String?, step: String)] {
        try await store.postgres.query(
            """
            SELECT target->'to'->>0, content->>'body', workflow_step FROM messages WHERE workflow_key = $1 ORDER BY created_at, id
            """, [key]
        ).map {
            (try $0.decode(String.self, at: 0), try $0.decode(String?.self, at: 1), try $0.decode(String.self, at: 2))
        }
    }
}

/// The workflow service in-process (real Postgres and Redis, a manual clock): triggers, waits,
/// cancels, waitFor, branches on receipts, the gateway's pending runs and cancel requests.
@Suite("Workflow service", .serialized, .requiresTestStack)
struct WorkflowServiceTests {
    @Test func triggerWaitSendAndCancelOnWithWhere() async throws {
        let h = try await WorkflowServiceHarness.start()
        try await withCleanup {
            try await h.store.save("nudge", nudgeDefinition)
            try await h.store.subscriber("alice")
            try await h.publish(
                "alice",
                [("e1", "workout.scheduled", ["workoutId": "w1"]), ("e2", "workout.scheduled", ["workoutId": "w2"])])
            try await h.waitRuns("nudge", count: 2) { $0.status == .running && $0.dueAt != nil }
            try await h.publish("alice", [("c1", "workout.completed", ["workoutId": "w1"])])
            let runs = try await h.waitRuns("nudge", count: 1) { $0.status == .cancelled }
            #expect(runs.first { $0.status == .cancelled }?.state?.trigger.id == "e1")
            h.clock.advance(3601)
            try await h.waitRuns("nudge", count: 1) { $0.status == .completed }
            let messages = try await h.messages("nudge")
            #expect(messages.map(\.body) == ["Workout w2"])
            // The same entry again (a redelivery) starts nothing.
            try await h.publish("alice", [("e1", "workout.scheduled", ["workoutId": "w1"])])
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await h.runs("nudge").count == 2)
        } finally: {
            await h.stop()
        }
    }

    @Test func pendingRunsFromTheGatewayStartAndCancelRequestsCancel() async throws {
        let h = try await WorkflowServiceHarness.start()
        try await withCleanup {
            let (version, definition) = try await h.store.save("nudge", nudgeDefinition)
            try await h.store.subscriber("alice")
            let store = WorkflowRunStore(postgres: h.store.postgres)
            let trigger = WorkflowEvent(
                id: "api-1", name: "workout.scheduled", data: ["workoutId": "w9"], occurredAt: Date())
            let a = try await store.requestStart(
                tenantId: h.store.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "alice", trigger: trigger, triggerKey: "api:k1")
            let ghost = try await store.requestStart(
                tenantId: h.store.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "ghost", trigger: trigger, triggerKey: "api:k2")
            try await h.waitRuns("nudge", count: 1) { $0.id == a.runId && $0.status == .running && $0.state != nil }
            let failed = try await h.waitRuns("nudge", count: 1) { $0.id == ghost.runId && $0.status == .failed }
            #expect(failed.first { $0.id == ghost.runId }?.failureCode == .subscriberUnknown)
            #expect(
                try await store.requestCancel(tenantId: h.store.tenantId, runId: a.runId, reason: "by the API")
                    == .requested)
            let cancelled = try await h.waitRuns("nudge", count: 1) { $0.id == a.runId && $0.status == .cancelled }
            #expect(cancelled.first { $0.id == a.runId }?.state?.cancelReason == "by the API")
            h.clock.advance(3601)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await h.messages("nudge").isEmpty)
        } finally: {
            await h.stop()
        }
    }
}
