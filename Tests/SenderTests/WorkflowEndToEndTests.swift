import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Workflows end to end: definitions saved through the gateway, events through the gateway and
/// the ingest service onto `bk:events`, runs in the workflow service (real processes, a clock the
/// test moves), pushes through apns-sender to the APNs simulator.
@Suite("workflows end to end", .serialized, .requiresTestStack)
struct WorkflowEndToEndTests {
    /// A stack with a sender, ingest and one workflow replica, and alice with one device.
    func withWorkflowStack(_ body: (PushStack, WorkflowClockFile, String) async throws -> Void) async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)
            let token = PushStack.token()
            try await stack.addSubscriber("alice", tokens: [token])
            try await body(stack, clock, token)
        }
    }

    static let nudge = """
        {"trigger": {"event": "workout.scheduled", "where": "event.data.kind == \\"legs\\""},
         "cancelOn": [{"event": "workout.completed", "where": "event.data.workoutId == trigger.data.workoutId"}],
         "steps": [{"name": "pause", "wait": {"duration": "1h"}},
                   {"name": "nudge", "send": {"title": "Leg day", "body": "Workout {{ trigger.data.workoutId }}", "policy": "ignore"}}]}
        """

    @Test("trigger where, wait, send: one push after the wait, naming workflow, version, run and step")
    func triggerWaitSend() async throws {
        try await withWorkflowStack { stack, clock, token in
            try await stack.putWorkflow("nudge", Self.nudge)
            try await stack.track(
                "alice",
                [
                    ("e-arms", "workout.scheduled", ["kind": "arms", "workoutId": "w0"]),
                    ("e-legs", "workout.scheduled", ["kind": "legs", "workoutId": "w1"])
                ])
            let runs = try await stack.waitRuns("nudge", count: 1) { $0.status == "running" && $0.dueAt != nil }
            #expect(runs.count == 1, "the arms workout matches no trigger where")
            #expect(try await stack.simulator.pushes(token: token).isEmpty)
            // An hour passes.
            clock.advance(3601)
            let done = try await stack.waitRuns("nudge", count: 1) { $0.status == "completed" }
            let pushes = try await stack.alerts(token, atLeast: 1)
            #expect(pushes.count == 1)
            #expect(pushes.first?["aps"]?["alert"]?["body"] == "Workout w1")
            let steps = done[0].state?["outcomes"]?.arrayValue ?? []
            #expect(steps.map { $0["decision"] } == ["waited", "sent"])
            let messageId = try #require(steps.last?["messageIds"]?.arrayValue?.first?.stringValue)
            let origin = try await stack.postgres.query(
                """
                SELECT workflow_key, workflow_version, workflow_run_id::text, workflow_step FROM messages WHERE id = $1::uuid
                """, [messageId])
            let row = try #require(origin.first)
            let (workflowKey, version, runId, step) = try row.decode((String, Int, String, String).self)
            #expect(workflowKey == "nudge" && version == 1 && runId == done[0].id && step == "nudge")
            let message = try await stack.api("GET", "/v1/messages/\(messageId)")
            #expect(message.status == 200)
            // The same trigger event again (a client retry) starts nothing.
            try await stack.track("alice", [("e-legs", "workout.scheduled", ["kind": "legs", "workoutId": "w1"])])
            try await Task.sleep(for: .seconds(2))
            #expect(try await stack.runs("nudge").count == 1)
        }
    }

    @Test("cancelOn with a where on the trigger stops only its own run mid-wait: no push for it")
    func cancelOnMidWait() async throws {
        try await withWorkflowStack { stack, clock, token in
            try await stack.putWorkflow("nudge", Self.nudge)
            try await stack.track(
                "alice",
                [
                    ("e1", "workout.scheduled", ["kind": "legs", "workoutId": "w1"]),
                    ("e2", "workout.scheduled", ["kind": "legs", "workoutId": "w2"])
                ])
            try await stack.waitRuns("nudge", count: 2) { $0.status == "running" }
            try await stack.track("alice", [("c1", "workout.completed", ["workoutId": "w1"])])
            let runs = try await stack.waitRuns("nudge", count: 1) { $0.status == "cancelled" }
            #expect(runs.filter { $0.status == "cancelled" }.count == 1)
            let cancelled = try #require(runs.first { $0.status == "cancelled" })
            #expect(cancelled.state?["trigger"]?["data"]?["workoutId"] == "w1")
            clock.advance(3601)
            try await stack.waitRuns("nudge", count: 1) { $0.status == "completed" }
            let pushes = try await stack.alerts(token, atLeast: 1)
            try await Task.sleep(for: .seconds(1))
            #expect(try await stack.simulator.pushes(token: token).count == 1)
            #expect(pushes.first?["aps"]?["alert"]?["body"] == "Workout w2")
        }
    }

    @Test("waitFor matched and timed out, each branched on")
    func waitForMatchedAndTimedOut() async throws {
        try await withWorkflowStack { stack, clock, token in
            try await stack.putWorkflow(
                "review",
                """
                {"trigger": {"event": "order.placed"},
                 "steps": [{"name": "review", "waitFor": {"event": "review.written", "where": "event.data.orderId == trigger.data.orderId", "timeout": "1d"}},
                           {"name": "check", "branch": {"if": {"matched": "review"},
                              "then": [{"name": "thanks", "send": {"body": "Thanks for the review", "policy": "ignore"}}],
                              "else": [{"name": "ask", "send": {"body": "How was it?", "policy": "ignore"}}]}}]}
                """)
            try await stack.track(
                "alice", [("o1", "order.placed", ["orderId": "1"]), ("o2", "order.placed", ["orderId": "2"])])
            try await stack.waitRuns("review", count: 2) { $0.status == "running" && $0.state?["awaiting"] != nil }
            // A review of another order matches nothing; the one of order 1 matches its run.
            try await stack.track(
                "alice", [("r9", "review.written", ["orderId": "9"]), ("r1", "review.written", ["orderId": "1"])])
            try await stack.waitRuns("review", count: 1) { $0.status == "completed" }
            clock.advance(86_401)
            let runs = try await stack.waitRuns("review", count: 2) { $0.status == "completed" }
            let byOrder = Dictionary(
                uniqueKeysWithValues: runs.map {
                    ($0.state?["trigger"]?["data"]?["orderId"]?.stringValue ?? "", $0.state)
                })
            #expect(byOrder["1"]??["outcomes"]?.arrayValue?.first?["decision"] == "matched")
            #expect(byOrder["2"]??["outcomes"]?.arrayValue?.first?["decision"] == "timed_out")
            let bodies = try await stack.alerts(token, atLeast: 2).compactMap {
                $0["aps"]?["alert"]?["body"]?.stringValue
            }
            #expect(bodies.sorted() == ["How was it?", "Thanks for the review"])
        }
    }

    @Test("branch on opened: the receipt posted with the send's messageId decides")
    func branchOnOpened() async throws {
        try await withWorkflowStack { stack, clock, token in
            try await stack.putWorkflow(
                "onboard",
                """
                {"trigger": {"event": "signed.up"},
                 "steps": [{"name": "welcome", "send": {"body": "Welcome", "policy": "ignore"}},
                           {"name": "pause", "wait": {"duration": "1d"}},
                           {"name": "check", "branch": {"if": {"opened": "welcome"},
                              "then": [{"name": "tip", "send": {"body": "A tip for you", "policy": "ignore"}}],
                              "else": [{"name": "again", "send": {"body": "Welcome again", "policy": "ignore"}}]}}]}
                """)
            try await stack.track("alice", [("s1", "signed.up", [:])])
            let runs = try await stack.waitRuns("onboard", count: 1) { $0.status == "running" && $0.dueAt != nil }
            _ = try await stack.alerts(token, atLeast: 1)
            let welcomeId = try #require(
                runs[0].state?["outcomes"]?.arrayValue?.first?["messageIds"]?.arrayValue?.first?.stringValue)
            try await stack.track(
                "alice", [("rcpt1", "$notification.opened", ["messageId": .string(welcomeId), "action": "open"])])
            _ = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await !stack.postgres.query(
                    "SELECT 1 FROM message_receipts WHERE message_id = $1 AND kind = 'opened'", [welcomeId]
                ).isEmpty
            }
            clock.advance(86_401)
            let done = try await stack.waitRuns("onboard", count: 1) { $0.status == "completed" }
            let check = done[0].state?["outcomes"]?.arrayValue?.first { $0["step"] == "check" }
            #expect(check?["decision"] == "then")
            let bodies = try await stack.alerts(token, atLeast: 2).compactMap {
                $0["aps"]?["alert"]?["body"]?.stringValue
            }
            #expect(bodies == ["Welcome", "A tip for you"])
        }
    }

    @Test("waitUntil 07:00 Europe/Berlin across both DST changes, and quiet hours shift and ignore")
    func dstAndQuietHours() async throws {
        try await withWorkflowStack { stack, clock, token in
            try await stack.postgres.execute(
                "UPDATE subscribers SET timezone = 'Europe/Berlin' WHERE tenant_id = $1::uuid", [stack.tenantID])
            try await stack.putWorkflow(
                "morning",
                """
                {"trigger": {"event": "plan.made"},
                 "steps": [{"name": "morning", "waitUntil": {"time": "07:00", "timezone": "subscriber"}},
                           {"name": "go", "send": {"body": "Good morning", "policy": "ignore"}}]}
                """)
            // Spring forward (29 March 2026, 02:00 CET -> 03:00 CEST): 07:00 is 05:00 UTC.
            clock.set(now: EventTimestamp.parse("2026-03-28T12:00:00Z")!)
            try await Task.sleep(for: .milliseconds(200))
            try await stack.track("alice", [("p1", "plan.made", [:])])
            var runs = try await stack.waitRuns("morning", count: 1) { $0.dueAt != nil }
            #expect(runs[0].dueAt.map { EventTimestamp.format($0) } == "2026-03-29T05:00:00.000Z")
            clock.set(now: EventTimestamp.parse("2026-03-29T05:00:01Z")!)
            try await stack.waitRuns("morning", count: 1) { $0.status == "completed" }
            // Fall back (25 October 2026, 03:00 CEST -> 02:00 CET): 07:00 is 06:00 UTC.
            clock.set(now: EventTimestamp.parse("2026-10-24T12:00:00Z")!)
            try await Task.sleep(for: .milliseconds(200))
            try await stack.track("alice", [("p2", "plan.made", [:])])
            runs = try await stack.waitRuns("morning", count: 2) { $0.status == "completed" || $0.dueAt != nil }
            #expect(runs.last?.dueAt.map { EventTimestamp.format($0) } == "2026-10-25T06:00:00.000Z")
            clock.set(now: EventTimestamp.parse("2026-10-25T06:00:01Z")!)
            try await stack.waitRuns("morning", count: 2) { $0.status == "completed" }
            #expect(try await stack.alerts(token, atLeast: 2).count == 2)

            // Quiet hours 22:00-08:00 (Berlin for alice) at 23:00 Berlin: a respecting send waits
            // for 08:00, an ignoring one goes now.
            try await stack.postgres.execute(
                "UPDATE tenants SET quiet_hours_start = '22:00', quiet_hours_end = '08:00' WHERE id = $1::uuid",
                [stack.tenantID])
            try await stack.putWorkflow(
                "late",
                """
                {"trigger": {"event": "late.thing"},
                 "steps": [{"name": "polite", "send": {"body": "polite", "policy": "respect"}},
                           {"name": "urgent", "send": {"body": "urgent", "policy": "ignore"}}]}
                """)
            clock.set(now: EventTimestamp.parse("2026-11-10T22:00:00Z")!)  // 23:00 CET
            try await Task.sleep(for: .milliseconds(200))
            try await stack.track("alice", [("l1", "late.thing", [:])])
            let late = try await stack.waitRuns("late", count: 1) { $0.dueAt != nil }
            #expect(late[0].dueAt.map { EventTimestamp.format($0) } == "2026-11-11T07:00:00.000Z")  // 08:00 CET
            let polite = late[0].state?["outcomes"]?.arrayValue?.first { $0["step"] == "polite" }
            #expect(polite?["shiftedFrom"] != nil)
            try await Task.sleep(for: .seconds(1))
            #expect(try await stack.simulator.pushes(token: token).count == 2, "nothing sent inside quiet hours yet")
            clock.set(now: EventTimestamp.parse("2026-11-11T07:00:01Z")!)
            try await stack.waitRuns("late", count: 1) { $0.status == "completed" }
            let bodies = try await stack.alerts(token, atLeast: 4).compactMap {
                $0["aps"]?["alert"]?["body"]?.stringValue
            }
            #expect(Array(bodies.suffix(2)).sorted() == ["polite", "urgent"])
        }
    }

    @Test("a new version leaves a running run on its own; an unknown subscriber's trigger is skipped")
    func versionsAndUnknownSubscribers() async throws {
        try await withWorkflowStack { stack, clock, token in
            try await stack.putWorkflow(
                "ver",
                """
                {"trigger": {"event": "go"}, "steps": [{"name": "w", "wait": {"duration": "1h"}}, {"name": "s", "send": {"body": "v1", "policy": "ignore"}}]}
                """)
            try await stack.track("alice", [("g1", "go", [:])])
            try await stack.waitRuns("ver", count: 1) { $0.status == "running" }
            try await stack.putWorkflow(
                "ver",
                """
                {"trigger": {"event": "go"}, "steps": [{"name": "w", "wait": {"duration": "1h"}}, {"name": "s", "send": {"body": "v2", "policy": "ignore"}}]}
                """)
            try await stack.track("alice", [("g2", "go", [:])])
            try await stack.track("nobody", [("g3", "go", [:])])
            try await stack.waitRuns("ver", count: 2) { $0.status == "running" }
            clock.advance(3601)
            try await stack.waitRuns("ver", count: 2) { $0.status == "completed" }
            let bodies = try await stack.alerts(token, atLeast: 2).compactMap {
                $0["aps"]?["alert"]?["body"]?.stringValue
            }
            #expect(bodies.sorted() == ["v1", "v2"])
            #expect(try await stack.runs("ver").count == 2)
            let skips = try await stack.postgres.query(
                "SELECT subscriber_id FROM workflow_trigger_skips WHERE trigger_key = 'g3'")
            #expect(skips.count == 1)
        }
    }

    @Test("kill -9 of the workflow service mid-wait, then two replicas: every run sends exactly once")
    func killAndReplicas() async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            let first = try await stack.startWorkflow(clock: clock)
            try await stack.putWorkflow("nudge", Self.nudge)
            var tokens: [String] = []
            for i in 0..<20 {
                let token = PushStack.token()
                tokens.append(token)
                try await stack.addSubscriber("s\(i)", tokens: [token])
                try await stack.track(
                    "s\(i)", [("e\(i)", "workout.scheduled", ["kind": "legs", "workoutId": .string("w\(i)")])])
            }
            try await stack.waitRuns("nudge", count: 20) { $0.status == "running" && $0.dueAt != nil }
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(10))
            _ = try await stack.startWorkflow(clock: clock)
            _ = try await stack.startWorkflow(clock: clock)
            clock.advance(3601)
            try await stack.waitRuns("nudge", count: 20, limit: .seconds(60)) { $0.status == "completed" }
            for token in tokens { _ = try await stack.alerts(token, atLeast: 1) }
            try await Task.sleep(for: .seconds(2))
            for token in tokens { #expect(try await stack.simulator.pushes(token: token).count == 1) }
            let messages = try await stack.postgres.query(
                "SELECT count(*)::int FROM messages WHERE workflow_key = 'nudge'")
            #expect(try messages[0].decode(Int.self, at: 0) == 20)
        }
    }
}
