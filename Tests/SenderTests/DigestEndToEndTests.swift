import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Issue 28 end to end on real processes (gateway, ingest, two workflow replicas, apns-sender) and
/// the APNs simulator: trigger events tracked one request each, all in the same second, spread
/// over the two replicas by their consumer group; the digest's window closed by moving the
/// replicas' clock. One push per key carrying the whole count, also when a replica is killed
/// with -9 in the middle of the window; a throttle lets exactly its limit through.
@Suite("digest and throttle end to end: two replicas, kill -9", .serialized, .requiresTestStack)
struct DigestEndToEndTests {
    static let liked = #"""
        {"trigger": {"event": "photo.liked"},
         "steps": [{"name": "collect", "digest": {"window": "10m", "key": "{{ trigger.data.postId }}", "list": "data.actor"}},
                   {"name": "tell", "send": {"title": "{{ digest.list }} liked your photo",
                                             "body": "{{ digest.count }} likes", "policy": "ignore"}}]}
        """#

    /// Replicas that take over a dead one's pending `bk:events` entries within a second or two.
    static let quickReclaim = ["BUZZKIT_WORKFLOW_CLAIM_IDLE": "1s", "BUZZKIT_WORKFLOW_RECLAIM_INTERVAL": "500ms"]

    /// `events` tracked at once, one request (so one `bk:events` entry) each.
    func trackAll(_ stack: PushStack, _ subscriber: String, _ events: [(id: String, name: String, data: JSONValue)])
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for event in events { group.addTask { try await stack.track(subscriber, [event]) } }
            try await group.waitForAll()
        }
    }

    func likes(_ prefix: String, _ count: Int, post: String) -> [(id: String, name: String, data: JSONValue)] {
        let actors = ["Ana", "Ben", "Cid", "Dee", "Eve"]
        return (0..<count).map {
            ("\(prefix)\($0)", "photo.liked", ["postId": .string(post), "actor": .string(actors[$0 % actors.count])])
        }
    }

    func digestEvents(_ stack: PushStack) async throws -> Int {
        try await stack.postgres.query("SELECT count(*)::int FROM workflow_digest_events")[0].decode(Int.self, at: 0)
    }

    /// The alert pushes `token` got: exactly `count` of them (waited for, then a pause with no more).
    func exactly(_ stack: PushStack, _ token: String, _ count: Int) async throws -> [JSONValue] {
        _ = try await stack.alerts(token, atLeast: count, limit: .seconds(60))
        try await Task.sleep(for: .seconds(2))
        let alerts = try await stack.alerts(token, atLeast: count)
        #expect(alerts.count == count, "\(alerts)")
        return alerts
    }

    @Test("50 events of one key in the same second over two replicas: one push with count 50; two keys, two")
    func oneKeyOnePush() async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)
            _ = try await stack.startWorkflow(clock: clock)
            let token = PushStack.token()
            try await stack.addSubscriber("alice", tokens: [token])
            try await stack.putWorkflow("liked", Self.liked)
            try await trackAll(stack, "alice", likes("a", 50, post: "p1") + likes("b", 10, post: "p2"))
            let absorbed = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                try await digestEvents(stack) == 60
            }
            #expect(absorbed)
            let runs = try await stack.runs("liked")
            #expect(runs.count == 2 && runs.allSatisfy { $0.status == "running" })
            clock.advance(601)
            try await stack.waitRuns("liked", count: 2) { $0.status == "completed" }
            let alerts = try await exactly(stack, token, 2)
            let bodies = Set(alerts.compactMap { $0["aps"]?["alert"]?["body"]?.stringValue })
            #expect(bodies == ["50 likes", "10 likes"])
            // Five actors each: the first two to arrive by name (the requests raced), the rest counted.
            let titles = alerts.compactMap { $0["aps"]?["alert"]?["title"]?.stringValue }
            #expect(
                titles.count == 2 && titles.allSatisfy { $0.hasSuffix(" and 3 others liked your photo") }, "\(titles)")
            // The run shows the 50 events it collected, with their times.
            let p1 = try #require(runs.first { $0.state?["digest"]?["key"] == "p1" })
            let read = try await stack.api("GET", "/v1/workflow-runs/\(p1.id)")
            #expect(read.data?["digest"]?["count"] == 50 && read.data?["digest"]?["closed"] == true)
            let events = read.data?["digest"]?["events"]?.arrayValue ?? []
            #expect(Set(events.compactMap { $0["id"]?.stringValue }) == Set((0..<50).map { "a\($0)" }))
            #expect(events.allSatisfy { $0["joinedAt"]?.stringValue != nil })
        }
    }

    @Test("kill -9 of a replica in the middle of the window: still one push carrying all 50")
    func killMidWindow() async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            let doomed = try await stack.startWorkflow(clock: clock, settings: Self.quickReclaim)
            _ = try await stack.startWorkflow(clock: clock, settings: Self.quickReclaim)
            let token = PushStack.token()
            try await stack.addSubscriber("alice", tokens: [token])
            try await stack.putWorkflow("liked", Self.liked)
            let all = likes("k", 50, post: "p1")
            // Half, and the kill while they are being absorbed; then the other half.
            async let firstHalf: Void = trackAll(stack, "alice", Array(all.prefix(25)))
            try await Task.sleep(for: .milliseconds(150))
            doomed.signal(SIGKILL)
            try await firstHalf
            _ = await doomed.waitForExit(timeout: .seconds(10))
            try await trackAll(stack, "alice", Array(all.suffix(25)))
            // The survivor takes over what the dead one had read and not finished.
            let absorbed = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                try await digestEvents(stack) == 50
            }
            let count = try await digestEvents(stack)
            #expect(absorbed, "digest events: \(count)")
            #expect(try await stack.runs("liked").count == 1)
            clock.advance(601)
            try await stack.waitRuns("liked", count: 1, limit: .seconds(60)) { $0.status == "completed" }
            let alerts = try await exactly(stack, token, 1)
            #expect(alerts.first?["aps"]?["alert"]?["body"] == "50 likes")
        }
    }

    @Test("a throttle burst over two replicas: exactly its limit pass, the rest end throttled with the reason")
    func throttleBurst() async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)
            _ = try await stack.startWorkflow(clock: clock)
            let token = PushStack.token()
            try await stack.addSubscriber("alice", tokens: [token])
            try await stack.putWorkflow(
                "capped",
                #"""
                {"trigger": {"event": "order.shipped"},
                 "steps": [{"name": "cap", "throttle": {"limit": 3, "window": "1d"}},
                           {"name": "tell", "send": {"title": "Shipped", "policy": "ignore"}}]}
                """#)
            try await trackAll(stack, "alice", (0..<30).map { ("o\($0)", "order.shipped", [:]) })
            let runs = try await stack.waitRuns("capped", count: 30, limit: .seconds(60)) {
                $0.status == "completed" || $0.status == "throttled"
            }
            #expect(runs.filter { $0.status == "completed" }.count == 3)
            #expect(runs.filter { $0.status == "throttled" }.count == 27)
            let throttled = try #require(runs.first { $0.status == "throttled" })
            let read = try await stack.api("GET", "/v1/workflow-runs/\(throttled.id)")
            #expect(read.data?["status"] == "throttled")
            #expect(read.data?["throttleReason"]?.stringValue?.contains("3 runs of this workflow passed 'cap'") == true)
            let filtered = try await stack.api("GET", "/v1/workflows/capped/runs?status=throttled&limit=100")
            #expect(filtered.data?.arrayValue?.count == 27)
            _ = try await exactly(stack, token, 3)
        }
    }
}
