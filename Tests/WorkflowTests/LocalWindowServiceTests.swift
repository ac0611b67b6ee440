import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Testing

/// Local windows (issue 16) in the workflow service in-process (real Postgres and Redis, a manual
/// clock): the plan's message at the start of the wait, the acknowledgement routed or looked up,
/// the fallback at the moment, `bk.cancel` once on a central cancel, none for a device-decided one.
@Suite("Workflow service: local windows", .serialized, .requiresTestStack)
struct LocalWindowServiceTests {
    /// Alice in Berlin; the clock at 10:00 UTC on 1 June 2026 (12:00 in Berlin): the moment is
    /// 07:00 Berlin on 2 June, 05:00 UTC.
    static let start = EventTimestamp.parse("2026-06-01T10:00:00Z")!
    static let moment = EventTimestamp.parse("2026-06-02T05:00:00Z")!

    static let definition = """
        {"trigger": {"event": "workout.scheduled"},
         "cancelOn": [{"event": "workout.completed"},
                      {"event": "workout.moved", "where": "event.data.workoutId == trigger.data.workoutId"}],
         "steps": [{"name": "morning-of", "waitUntil": {"time": "07:00", "timezone": "subscriber"}},
                   {"name": "nudge", "send": {"deliver": "local", "title": "Leg day",
                                              "body": "Workout {{ trigger.data.workoutId }}",
                                              "data": {"workoutId": "{{ trigger.data.workoutId }}"},
                                              "deepLink": "gym://workouts/legs"}}]}
        """

    /// A harness with the definition saved and alice known; `body` gets it and the run once its
    /// plan was written (running, waiting for the moment).
    func withWindow(_ body: (WorkflowServiceHarness, WorkflowRunRecord) async throws -> Void) async throws {
        let h = try await WorkflowServiceHarness.start(at: Self.start)
        try await withCleanup {
            try await h.store.save("local", Self.definition)
            try await h.store.subscriber("alice", timezone: "Europe/Berlin")
            try await h.publish("alice", [("e1", "workout.scheduled", ["workoutId": "w1"])])
            let runs = try await h.waitRuns("local", count: 1) { $0.status == .running && $0.dueAt != nil }
            try await body(h, runs[0])
        } finally: {
            await h.stop()
        }
    }

    @Test("the plan is written at the start of the wait: kind local_plan, the wall-clock moment, the content")
    func planAtTheStartOfTheWait() async throws {
        try await withWindow { h, run in
            #expect(run.dueAt == Self.moment)
            let rows = try await h.messageRows("local")
            #expect(rows.count == 1)
            let plan = try #require(rows.first)
            #expect(plan.kind == "local_plan" && plan.step == "nudge")
            let local = try #require(plan.content["local"].flatMap(LocalPlan.init(json:)))
            let runId = run.id.lowercasedText
            #expect(local.id == "\(runId):nudge")
            #expect(local.fireAt == LocalPlan.FireDate(year: 2026, month: 6, day: 2, hour: 7, minute: 0))
            #expect(local.title == "Leg day" && local.body == "Workout w1" && local.deepLink == "gym://workouts/legs")
            #expect(local.data == ["workoutId": "w1"])
            #expect(local.cancelOn == ["workout.completed"], "only the rule without a where can be decided on a device")
            #expect(local.messageId == plan.id)
            #expect(run.state?.localPlan?.localId == local.id)
        }
    }

    @Test("acknowledged while waiting: the step ends scheduled_on_device and nothing else is written")
    func acknowledgedNoFallback() async throws {
        try await withWindow { h, run in
            let localId = "\(run.id.lowercasedText):nudge"
            try await h.publish("alice", [("ack1", "$local.scheduled", ["localId": .string(localId)])])
            try await h.waitRuns("local", count: 1) { $0.state?.localPlan?.acknowledged == true }
            h.clock.set(Self.moment.addingTimeInterval(1))
            let done = try await h.waitRuns("local", count: 1) { $0.status == .completed }
            let nudge = done[0].state?.outcome("nudge")
            #expect(nudge?.decision == .scheduledOnDevice)
            #expect(try await h.messageRows("local").map(\.kind) == ["local_plan"])
        }
    }

    @Test("an acknowledgement stored but never routed is found at the moment; another plan's id does not count")
    func acknowledgementLookedUpAtTheMoment() async throws {
        try await withWindow { h, run in
            let localId = "\(run.id.lowercasedText):nudge"
            // In the events table only (as if its bk:events entry had been lost), and one for another plan.
            for (id, local) in [("ack-stored", localId), ("ack-other", "another-run:nudge")] {
                try await h.store.postgres.execute(
                    """
                    INSERT INTO events (tenant_id, event_id, name, subscriber_id, data, occurred_at, received_at)
                    VALUES ($1::uuid, $2, '$local.scheduled', 'alice', $3::jsonb, now(), now())
                    """, [h.store.tenantId, id, ["localId": .string(local)] as JSONValue])
            }
            h.clock.set(Self.moment.addingTimeInterval(1))
            let done = try await h.waitRuns("local", count: 1) { $0.status == .completed }
            #expect(done[0].state?.outcome("nudge")?.decision == .scheduledOnDevice)
            #expect(try await h.messageRows("local").count == 1)
        }
    }

    @Test("no device answered: at the moment the same content goes as a push, once, and the run says why")
    func fallbackAtTheMoment() async throws {
        try await withWindow { h, run in
            // Someone else's acknowledgement of the same plan id is not alice's.
            try await h.publish(
                "bob", [("ack-bob", "$local.scheduled", ["localId": .string("\(run.id.lowercasedText):nudge")])])
            h.clock.set(Self.moment.addingTimeInterval(1))
            let done = try await h.waitRuns("local", count: 1) { $0.status == .completed }
            let nudge = try #require(done[0].state?.outcome("nudge"))
            #expect(nudge.decision == .fallbackSent)
            #expect(nudge.reason?.contains("no device confirmed") == true)
            let rows = try await h.messageRows("local")
            #expect(rows.map(\.kind) == ["local_plan", "push"])
            let fallback = try #require(rows.last)
            #expect(fallback.step == "nudge")
            #expect(fallback.content["title"] == "Leg day" && fallback.content["body"] == "Workout w1")
            #expect(fallback.content["deepLink"] == "gym://workouts/legs")
            #expect(fallback.content["data"] == ["workoutId": "w1"])
            #expect(nudge.messageIds == rows.map(\.id), "opens of the plan or of the fallback count for the step")
            // The timer firing again (another claim, a redelivery) changes nothing.
            h.clock.advance(3600)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await h.messageRows("local").count == 2)
        }
    }

    @Test("cancelled centrally mid-window: one local_cancel with the run id, no fallback")
    func centralCancelSendsBkCancelOnce() async throws {
        try await withWindow { h, run in
            let store = WorkflowRunStore(postgres: h.store.postgres)
            #expect(
                try await store.requestCancel(tenantId: h.store.tenantId, runId: run.id, reason: "by the API")
                    == .requested)
            try await h.waitRuns("local", count: 1) { $0.status == .cancelled }
            // A cancelOn with a where (decided on the server) after the run ended: nothing more.
            try await h.publish("alice", [("m1", "workout.moved", ["workoutId": "w1"])])
            h.clock.set(Self.moment.addingTimeInterval(1))
            try await Task.sleep(for: .milliseconds(300))
            let rows = try await h.messageRows("local")
            #expect(rows.map(\.kind) == ["local_plan", "local_cancel"])
            #expect(rows.last?.content == ["cancel": ["runId": .string(run.id.lowercasedText)]])
            #expect(rows.last?.step == "nudge")
        }
    }

    @Test("a cancelOn with a where sends bk.cancel; one without stops the run and sends nothing")
    func cancelOnWithAndWithoutWhere() async throws {
        try await withWindow { h, _ in
            try await h.publish("alice", [("e2", "workout.scheduled", ["workoutId": "w2"])])
            try await h.waitRuns("local", count: 2) { $0.status == .running && $0.dueAt != nil }
            try await h.publish("alice", [("m1", "workout.moved", ["workoutId": "w1"])])
            let moved = try await h.waitRuns("local", count: 1) { $0.status == .cancelled }
            let w1 = try #require(moved.first { $0.state?.trigger.id == "e1" })
            #expect(w1.status == .cancelled)
            // workout.completed has no where: it cancels the other run too, decided on the device.
            try await h.publish("alice", [("c1", "workout.completed", [:])])
            try await h.waitRuns("local", count: 2) { $0.status == .cancelled }
            h.clock.set(Self.moment.addingTimeInterval(1))
            try await Task.sleep(for: .milliseconds(300))
            let rows = try await h.messageRows("local")
            #expect(rows.filter { $0.kind == "local_plan" }.count == 2)
            #expect(
                rows.filter { $0.kind == "local_cancel" }.map(\.content) == [
                    ["cancel": ["runId": .string(w1.id.lowercasedText)]]
                ])
            #expect(!rows.contains { $0.kind == "push" })
        }
    }
}
