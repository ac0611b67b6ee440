import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Testing

/// The run store's webhook events (`workflow_run.completed`, `.failed`, `.cancelled`), enqueued by
/// the statements that end a run, against a real Postgres: one outbox row per run that ends, with
/// the document's data; none when the statement runs again (a trigger redelivered, a transaction
/// redone) or for a run that stays live or ends `throttled`.
@Suite("workflow run webhook events", .requiresPostgres)
struct WorkflowRunWebhookEventsTests {
    static let types = ["workflow_run.completed", "workflow_run.failed", "workflow_run.cancelled"]

    static func start(
        _ f: WorkflowStoreFixture, key: String, version: Int, definition: WorkflowDefinition, trigger: String
    ) -> WorkflowRunInsert {
        let id = UUID()
        let advance = WorkflowEngine.start(
            runId: id.lowercasedText, workflowKey: key, version: version, definition: definition,
            trigger: WorkflowEvent(id: trigger, name: definition.trigger.event, data: [:], occurredAt: Date()),
            subscriber: WorkflowSubscriber(id: "alice"),
            environment: WorkflowEnvironment(now: Date(), messageId: { r, s, p in "\(r)/\(s)/\(p.rawValue)" }))
        return WorkflowRunInsert(
            id: id, tenantId: f.tenantId, triggerKey: trigger, reactsTo: definition.reactsToEvents.sorted(),
            state: advance.state)
    }

    @Test func eachRunThatEndsIsReportedOnceWithItsStatus() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenantId, types: Self.types)
            let quick = try await f.save(
                "quick", #"{"trigger": {"event": "go"}, "steps": [{"name": "stop", "exit": {}}]}"#)
            let nudge = try await f.save("nudge", nudgeDefinition)

            // A run that ends as it starts (completed) is reported by its insert, once: the same
            // trigger again (a redelivered entry) inserts nothing and reports nothing.
            let done = Self.start(f, key: "quick", version: quick.version, definition: quick.definition, trigger: "e1")
            #expect(done.state.status == .completed)
            for _ in 0..<2 {
                _ = try await f.postgres.withTransaction {
                    try await WorkflowRunStore.insertStarted(
                        on: $0,
                        [
                            Self.start(
                                f, key: "quick", version: quick.version, definition: quick.definition, trigger: "e1")
                        ])
                }
            }
            var events = try await f.schema.outbox()
            #expect(events.count == 1 && events.first?.type == "workflow_run.completed")
            #expect(events.first?.data["workflowKey"] == "quick" && events.first?.data["status"] == "completed")
            #expect(events.first?.data["failureCode"] == .null && events.first?.data["reason"] == .null)

            // Live runs report nothing; cancelled (batch save), failed (single save), throttled
            // (nothing), each saved twice.
            let runs = (1...3).map {
                Self.start(f, key: "nudge", version: nudge.version, definition: nudge.definition, trigger: "n\($0)")
            }
            _ = try await f.postgres.withTransaction { try await WorkflowRunStore.insertStarted(on: $0, runs) }
            #expect(try await f.schema.outbox().count == 1)
            let now = Date()
            var cancelled = runs[0].state
            var failed = runs[1].state
            var throttled = runs[2].state
            cancelled.status = .cancelled
            cancelled.cancelReason = "cancelOn[0]: workout.completed"
            cancelled.endedAt = now
            failed.status = .failed
            failed.failure = WorkflowRunFailure(code: .contentInvalid, message: "the title is empty")
            failed.endedAt = now
            throttled.status = .throttled
            throttled.endedAt = now
            for _ in 0..<2 {
                try await f.postgres.withTransaction { tx in
                    try await WorkflowRunStore.save(
                        on: tx,
                        [
                            WorkflowRunSave(id: runs[0].id, state: cancelled, lastInputId: nil),
                            WorkflowRunSave(id: runs[2].id, state: throttled, lastInputId: nil)
                        ])
                    try await WorkflowRunStore.save(
                        on: tx, WorkflowRunSave(id: runs[1].id, state: failed, lastInputId: nil))
                }
            }
            events = try await f.schema.outbox()
            #expect(events.map(\.type) == ["workflow_run.completed", "workflow_run.cancelled", "workflow_run.failed"])
            let byRun = Dictionary(uniqueKeysWithValues: events.map { ($0.data["runId"]?.stringValue ?? "", $0.data) })
            let cancelledData = byRun[runs[0].id.lowercasedText]
            #expect(cancelledData?["reason"] == "cancelOn[0]: workout.completed")
            #expect(cancelledData?["version"]?.intValue == Int64(nudge.version))
            #expect(cancelledData?["startedAt"]?.stringValue != nil && cancelledData?["endedAt"]?.stringValue != nil)
            let failedData = byRun[runs[1].id.lowercasedText]
            #expect(failedData?["failureCode"] == "content_invalid" && failedData?["reason"] == "the title is empty")
            #expect(byRun[runs[2].id.lowercasedText] == nil)
            // The ids are derived from the runs: the same whichever statement wrote them.
            #expect(Set(events.map(\.eventId)).count == 3)
        } finally: {
            await f.stop()
        }
    }

    @Test func aPendingRunThatCannotStartIsReportedFailedOnce() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            try await f.schema.subscribeWebhooks(tenant: f.tenantId, types: ["workflow_run.failed"])
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let start = try await WorkflowRunStore(postgres: f.postgres).requestStart(
                tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "ghost",
                trigger: WorkflowEvent(id: "api-1", name: "workout.scheduled", data: [:], occurredAt: Date()),
                triggerKey: WorkflowRunStore.apiTriggerKey("k1"))
            for _ in 0..<2 {
                try await f.postgres.withTransaction {
                    try await WorkflowRunStore.failPending(
                        on: $0, id: start.runId, code: .subscriberUnknown, now: Date())
                }
            }
            let events = try await f.schema.outbox("workflow_run.failed")
            #expect(events.count == 1)
            #expect(events.first?.data["failureCode"] == "subscriber_unknown")
            #expect(events.first?.data["subscriberId"] == "ghost" && events.first?.data["startedAt"] == .null)
        } finally: {
            await f.stop()
        }
    }
}
