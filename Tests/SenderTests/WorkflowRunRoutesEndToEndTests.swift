import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The run routes with a real workflow replica behind them: a run started through
/// `POST /v1/workflows/{key}/trigger` waits, sends and completes, and the API shows each step's
/// outcome and the message it sent (which names its run); a cancel through the API and the
/// DELETE of a workflow stop runs mid-wait, and nothing is pushed for them.
@Suite("workflow runs through the API, end to end", .serialized, .requiresTestStack)
struct WorkflowRunRoutesEndToEndTests {
    static let reminder = """
        {"trigger": {"event": "workout.scheduled"},
         "steps": [{"name": "pause", "wait": {"duration": "1h"}},
                   {"name": "nudge", "send": {"title": "Leg day", "body": "Workout {{ trigger.data.workoutId }}", "policy": "ignore"}}]}
        """

    private func run(_ stack: PushStack, _ id: String, until condition: @escaping (JSONValue?) -> Bool) async throws
        -> JSONValue?
    {
        var last: JSONValue?
        _ = try await RedisTestSupport.eventually(limit: .seconds(30)) {
            last = try await stack.api("GET", "/v1/workflow-runs/\(id)").data
            return condition(last)
        }
        return last
    }

    @Test("trigger, wait, send through the API; cancel and delete stop runs mid-wait")
    func triggerReadCancelDelete() async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            let replica = try await stack.startWorkflow(clock: clock)
            let alice = PushStack.token()
            let bob = PushStack.token()
            try await stack.addSubscriber("alice", tokens: [alice])
            try await stack.addSubscriber("bob", tokens: [bob])
            try await stack.putWorkflow("reminder", Self.reminder)

            let started = try await stack.api(
                "POST", "/v1/workflows/reminder/trigger",
                body: ["to": "alice", "data": ["workoutId": "w1"]], headers: ["Idempotency-Key": "w1"])
            #expect(started.status == 202, "\(started.envelope)")
            let runId = try #require(started.data?["runId"]?.stringValue)
            let toCancel = try #require(
                try await stack.api("POST", "/v1/workflows/reminder/trigger", body: ["to": "bob"]).data?["runId"]?
                    .stringValue)
            let waiting = try await run(stack, runId) { $0?["steps"]?.arrayValue?.first?["status"] == "running" }
            #expect(
                waiting?["status"] == "running" && waiting?["current"] == "pause" && waiting?["dueAt"] != .null,
                "\(waiting ?? .null)\nworkflow replica:\n\(replica.output.suffix(3000))")
            _ = try await run(stack, toCancel) { $0?["current"] == "pause" }

            let cancel = try await stack.api("POST", "/v1/workflow-runs/\(toCancel)/cancel")
            #expect(cancel.status == 202 && cancel.data?["cancel"] == "requested")
            let cancelled = try await run(stack, toCancel) { $0?["status"] == "cancelled" }
            #expect(
                cancelled?["status"] == "cancelled"
                    && cancelled?["steps"]?.arrayValue?.first?["status"] == "interrupted", "\(cancelled ?? .null)")

            clock.advance(3601)
            let done = try await run(stack, runId) { $0?["status"] == "completed" }
            let steps = done?["steps"]?.arrayValue ?? []
            #expect(
                steps.map { $0["step"] } == ["pause", "nudge"] && steps.map { $0["decision"] } == ["waited", "sent"],
                "\(done ?? .null)")
            let messageId = try #require(steps.last?["messageIds"]?.arrayValue?.first?.stringValue)
            let message = try await stack.api("GET", "/v1/messages/\(messageId)")
            #expect(
                message.data?["workflow"] == [
                    "workflowKey": "reminder", "version": 1, "runId": .string(runId), "step": "nudge"
                ])
            #expect(try await stack.alerts(alice, atLeast: 1).first?["aps"]?["alert"]?["body"] == "Workout w1")
            let listed = try await stack.api("GET", "/v1/workflows/reminder/runs?status=completed")
            #expect(listed.data?.arrayValue?.compactMap { $0["id"]?.stringValue } == [runId])

            // DELETE cancels what is still running: a new run mid-wait ends cancelled and never sends.
            let late = try #require(
                try await stack.api("POST", "/v1/workflows/reminder/trigger", body: ["to": "bob"]).data?["runId"]?
                    .stringValue)
            _ = try await run(stack, late) { $0?["current"] == "pause" }
            let deleted = try await stack.api("DELETE", "/v1/workflows/reminder")
            #expect(deleted.data?["runsCancelled"] == 1, "\(deleted.envelope)")
            let gone = try await run(stack, late) { $0?["status"] == "cancelled" }
            #expect(gone?["status"] == "cancelled")
            clock.advance(3601)
            try await Task.sleep(for: .seconds(1))
            #expect(try await stack.simulator.pushes(token: bob).isEmpty, "a cancelled run sent")
        }
    }
}
