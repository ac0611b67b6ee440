import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflows
import Foundation
import Testing

/// The events consumer routes and starts a whole entry in a few statements: the outcome is the
/// one of an event at a time in the entry's order. An entry's event reaches the runs that existed
/// before it and those an earlier event of the same entry started, never one a later event starts;
/// a redelivered entry starts nothing twice and does not give its own runs the events before their
/// trigger (it did, one statement per event: a redelivered [cancel w9, start w9] cancelled w9).
@Suite("Workflow events consumer, whole entries", .serialized, .requiresTestStack)
struct EventRouterBatchTests {
    @Test func anEntryTriggersAndCancelsInItsOwnOrder() async throws {
        let h = try await WorkflowServiceHarness.start()
        try await withCleanup {
            try await h.store.save("nudge", nudgeDefinition)
            try await h.store.subscriber("alice")
            try await h.publish("alice", [("e0", "workout.scheduled", ["workoutId": "w0"])])
            try await h.waitRuns("nudge", count: 1) { $0.status == .running && $0.dueAt != nil }
            // One entry: two starts, a cancel of the older run and of one started just before it,
            // another start; a cancel of w9 before its trigger does not reach the run that follows.
            let entry: [(id: String, name: String, data: JSONValue)] = [
                ("e1", "workout.scheduled", ["workoutId": "w1"]), ("e2", "workout.scheduled", ["workoutId": "w2"]),
                ("c0", "workout.completed", ["workoutId": "w0"]), ("c1", "workout.completed", ["workoutId": "w1"]),
                ("c9", "workout.completed", ["workoutId": "w9"]), ("e9", "workout.scheduled", ["workoutId": "w9"])
            ]
            try await h.publish("alice", entry)
            let runs = try await h.waitRuns("nudge", count: 2) { $0.status == .cancelled }
            func status(_ workout: String) -> WorkflowRunStatus? {
                runs.first { $0.state?.trigger.data["workoutId"]?.stringValue == workout }?.status
            }
            #expect(runs.count == 4)
            #expect(status("w0") == .cancelled && status("w1") == .cancelled)
            #expect(status("w2") == .running && status("w9") == .running)
            // The same entry again (a redelivery): no run starts twice, the two left keep running
            // (c9 does not reach w9, which its entry started after it).
            try await h.publish("alice", entry)
            try await Task.sleep(for: .milliseconds(500))
            let after = try await h.runs("nudge")
            #expect(after.count == 4)
            #expect(after.filter { $0.status == .running }.count == 2)
            h.clock.advance(3601)
            try await h.waitRuns("nudge", count: 2) { $0.status == .completed }
            #expect(try await h.messages("nudge").compactMap(\.body).sorted() == ["Workout w2", "Workout w9"])
        } finally: {
            await h.stop()
        }
    }

    @Test func manySubscribersEntriesSideBySideEachInItsOwnOrder() async throws {
        let h = try await WorkflowServiceHarness.start()
        try await withCleanup {
            try await h.store.save("nudge", nudgeDefinition)
            let subscribers = (0..<12).map { "s\($0)" }
            for s in subscribers { try await h.store.subscriber(s) }
            // Three entries per subscriber, interleaved on the stream: start w1, cancel it, start w2.
            for step in 0..<3 {
                for s in subscribers {
                    switch step {
                    case 0: try await h.publish(s, [("\(s)-e1", "workout.scheduled", ["workoutId": "w1"])])
                    case 1: try await h.publish(s, [("\(s)-c1", "workout.completed", ["workoutId": "w1"])])
                    default: try await h.publish(s, [("\(s)-e2", "workout.scheduled", ["workoutId": "w2"])])
                    }
                }
            }
            try await h.waitRuns("nudge", count: 12) { $0.status == .cancelled }
            let runs = try await h.waitRuns("nudge", count: 12) { $0.status == .running && $0.dueAt != nil }
            #expect(runs.count == 24)
            for s in subscribers {
                let mine = runs.filter { $0.subscriberId == s }
                #expect(
                    mine.first { $0.state?.trigger.data["workoutId"]?.stringValue == "w1" }?.status == .cancelled,
                    "\(s)")
                #expect(mine.first { $0.state?.trigger.data["workoutId"]?.stringValue == "w2" }?.status == .running)
            }
        } finally: {
            await h.stop()
        }
    }
}
