import BuzzKitContracts
import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Testing
import WorkflowApp

let likedDefinition = #"""
    {"trigger": {"event": "photo.liked"},
     "cancelOn": [{"event": "photo.deleted", "where": "event.data.postId == trigger.data.postId"}],
     "steps": [{"name": "collect", "digest": {"window": "10m", "key": "{{ trigger.data.postId }}", "list": "data.actor"}},
               {"name": "tell", "send": {"title": "{{ digest.list }} liked your photo",
                                         "body": "{{ digest.count }} likes on {{ digest.first.data.postId }}", "policy": "ignore"}}]}
    """#

let cappedDefinition = #"""
    {"trigger": {"event": "order.shipped"},
     "steps": [{"name": "cap", "throttle": {"limit": 3, "window": "1d"}},
               {"name": "tell", "send": {"title": "Shipped {{ trigger.data.order }}", "policy": "ignore"}}]}
    """#

extension WorkflowServiceHarness {
    /// Another replica of the workflow service on the same schema, streams and clock (its own
    /// consumer name): both read `bk:events` in one group and claim runs with SKIP LOCKED.
    func replica() -> RunningServices {
        var configuration = configuration
        configuration.consumerName = TestEnvironment.uniqueName("wf-replica")
        return RunningServices(
            WorkflowService.makeServices(
                postgres: store.postgres, redis: redis, configuration: configuration,
                logger: Logger(label: "workflow-replica", logLevel: .warning), metrics: MetricsRegistry()))
    }

    /// `count` entries of one event each for `subscriber`, as many ingest batches would put them.
    func publishEach(_ subscriber: String, _ events: [(id: String, name: String, data: JSONValue)]) async throws {
        for event in events { try await publish(subscriber, [event]) }
    }

    func digestEventCount(_ key: String) async throws -> Int {
        try await store.postgres.query(
            "SELECT count(*)::int FROM workflow_digest_events WHERE workflow_key = $1", [key]
        )[0].decode(Int.self, at: 0)
    }
}

/// Digests and throttles through the workflow service, two replicas in one process on real
/// Postgres and Redis with a manual clock (issue 28): 50 events of one key over both replicas make
/// one run and one message with count 50, two keys two; a redelivery after the close counts
/// nothing twice; a cancel in the window lets the next event open a new digest; a run the trigger
/// route made joins an open digest; a throttle burst lets exactly its limit through.
@Suite("Workflow service: digest and throttle", .serialized, .requiresTestStack)
struct DigestServiceTests {
    @Test func fiftyEventsOfOneKeyOverTwoReplicasMakeOneMessageWithCountFifty() async throws {
        let h = try await WorkflowServiceHarness.start()
        let other = h.replica()
        try await withCleanup {
            try await h.store.save("liked", likedDefinition)
            try await h.store.subscriber("alice")
            let actors = ["Ana", "Ben", "Cid", "Dee", "Eve"]
            let p1 = (0..<50).map { i in
                ("l\(i)", "photo.liked", ["postId": "p1", "actor": .string(actors[i % 5])] as JSONValue)
            }
            let p2 = (0..<10).map { i in ("m\(i)", "photo.liked", ["postId": "p2", "actor": "Zoe"] as JSONValue) }
            // Interleaved, one entry each: both replicas read them at once.
            var all: [(String, String, JSONValue)] = []
            for i in 0..<50 {
                all.append(p1[i])
                if i % 5 == 0 { all.append(p2[i / 5]) }
            }
            try await h.publishEach("alice", all)
            let absorbed = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await h.digestEventCount("liked") == 60
            }
            #expect(absorbed)
            let open = try await h.runs("liked")
            #expect(open.count == 2 && open.allSatisfy { $0.status == .running })
            h.clock.advance(601)
            let done = try await h.waitRuns("liked", count: 2) { $0.status == .completed }
            #expect(done.count == 2)
            let messages = try await h.messageRows("liked")
            #expect(messages.count == 2)
            let bodies = Set(messages.compactMap { $0.content["body"]?.stringValue })
            #expect(bodies == ["50 likes on p1", "10 likes on p2"])
            // The list is in order of arrival, and two replicas absorbing at once decide that order
            // between them: two of the five actors named, the three others counted.
            let titles = Set(messages.compactMap { $0.content["title"]?.stringValue })
            #expect(titles.contains("Zoe liked your photo"))
            let named = titles.subtracting(["Zoe liked your photo"]).first?
                .replacingOccurrences(of: " and 3 others liked your photo", with: "")
                .components(separatedBy: ", ")
            #expect(named.map { Set($0).count == 2 && Set($0).isSubset(of: Set(actors)) } == true, "\(titles)")
            // The run shows what it collected.
            let p1Run = try #require(done.first { $0.state?.digest?.key == "p1" })
            let read = try #require(
                try await WorkflowRunStore(postgres: h.store.postgres).run(tenantId: h.store.tenantId, id: p1Run.id))
            #expect(read.jsonValue["digest"]?["count"] == 50 && read.jsonValue["digest"]?["closed"] == true)
            #expect(read.jsonValue["digest"]?["events"]?.arrayValue?.count == 50)
            #expect(read.jsonValue["steps"]?.arrayValue?.first?["decision"] == "collected")
            // The same entries again after the close (a redelivery): nothing opens, nothing is sent.
            try await h.publishEach("alice", Array(all.prefix(12)))
            try await Task.sleep(for: .seconds(1))
            #expect(try await h.runs("liked").count == 2)
            #expect(try await h.digestEventCount("liked") == 60)
            // A new event after the close starts the next digest.
            try await h.publish("alice", [("late", "photo.liked", ["postId": "p1", "actor": "Fay"])])
            try await h.waitRuns("liked", count: 1) { $0.status == .running }
        } finally: {
            await other.stop()
            await h.stop()
        }
    }

    @Test func aCancelInTheWindowEndsItAndTheNextEventOpensANewDigest() async throws {
        let h = try await WorkflowServiceHarness.start()
        try await withCleanup {
            let (version, definition) = try await h.store.save("liked", likedDefinition)
            try await h.store.subscriber("alice")
            try await h.publish("alice", [("a1", "photo.liked", ["postId": "p1", "actor": "Ana"])])
            try await h.waitRuns("liked", count: 1) { $0.status == .running && $0.dueAt != nil }
            try await h.publish("alice", [("d1", "photo.deleted", ["postId": "p1"])])
            try await h.waitRuns("liked", count: 1) { $0.status == .cancelled }
            let windows = try await h.store.postgres.query("SELECT count(*)::int FROM workflow_digest_windows")
            #expect(try windows[0].decode(Int.self, at: 0) == 0, "a run that ended in its window leaves no window")
            try await h.publish("alice", [("a2", "photo.liked", ["postId": "p1", "actor": "Ben"])])
            let runs = try await h.waitRuns("liked", count: 1) { $0.status == .running && $0.dueAt != nil }
            #expect(runs.count == 2)
            // A run the trigger route made joins the open digest (and says so) instead of opening one.
            let store = WorkflowRunStore(postgres: h.store.postgres)
            let api = try await store.requestStart(
                tenantId: h.store.tenantId, workflowKey: "liked", version: version, definition: definition,
                subscriberId: "alice",
                trigger: WorkflowEvent(
                    id: "api:k1", name: "photo.liked", data: ["postId": "p1", "actor": "Cid"], occurredAt: Date()),
                triggerKey: "api:k1")
            let joined = try await h.waitRuns("liked", count: 1) { $0.id == api.runId && $0.status == .completed }
            let outcome = try #require(joined.first { $0.id == api.runId }?.state?.outcomes.first)
            #expect(outcome.decision == .joined)
            h.clock.advance(601)
            try await h.waitRuns("liked", count: 1) { $0.status == .completed && $0.state?.digest?.summary?.count == 2 }
            let titles = try await h.messageRows("liked").compactMap { $0.content["title"]?.stringValue }
            #expect(titles == ["Ben and Cid liked your photo"])
        } finally: {
            await h.stop()
        }
    }

    @Test func aThrottleBurstOverTwoReplicasLetsExactlyItsLimitThrough() async throws {
        let h = try await WorkflowServiceHarness.start()
        let other = h.replica()
        try await withCleanup {
            try await h.store.save("capped", cappedDefinition)
            try await h.store.subscriber("alice")
            try await h.publishEach(
                "alice", (0..<20).map { ("o\($0)", "order.shipped", ["order": .string("#\($0)")] as JSONValue) })
            let runs = try await h.waitRuns("capped", count: 20) { $0.status == .completed || $0.status == .throttled }
            #expect(runs.filter { $0.status == .completed }.count == 3)
            let throttled = runs.filter { $0.status == .throttled }
            #expect(throttled.count == 17)
            #expect(
                throttled.allSatisfy {
                    $0.jsonValue["throttleReason"]?.stringValue?.contains("3 runs of this workflow passed 'cap'")
                        == true
                })
            #expect(try await h.messageRows("capped").count == 3)
            // The window rolls: a day later the next one passes.
            h.clock.advance(86_401)
            try await h.publish("alice", [("o-next", "order.shipped", ["order": "#next"])])
            try await h.waitRuns("capped", count: 4) { $0.status == .completed }
        } finally: {
            await other.stop()
            await h.stop()
        }
    }
}
