import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Testing

let nudgeDefinition = """
    {"trigger": {"event": "workout.scheduled"},
     "cancelOn": [{"event": "workout.completed", "where": "event.data.workoutId == trigger.data.workoutId"}],
     "steps": [{"name": "pause", "wait": {"duration": "1h"}},
               {"name": "nudge", "send": {"title": "Go", "body": "Workout {{ trigger.data.workoutId }}"}}]}
    """

/// The run store against real Postgres: what the gateway calls (start, cancel, list, read) and
/// what the workflow service calls (claim, save, route, messages).
@Suite("Workflow run store", .requiresPostgres)
struct WorkflowRunStoreTests {
    func trigger(_ id: String, _ workoutId: String = "w1") -> WorkflowEvent {
        WorkflowEvent(id: id, name: "workout.scheduled", data: ["workoutId": .string(workoutId)], occurredAt: Date())
    }

    @Test func requestStartIsOncePerTriggerKeyAndReadsAsPendingRunning() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let store = WorkflowRunStore(postgres: f.postgres)
            let key = WorkflowRunStore.apiTriggerKey("idem-1")
            let first = try await store.requestStart(
                tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "alice", trigger: trigger("api-1"), triggerKey: key)
            let again = try await store.requestStart(
                tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "alice", trigger: trigger("api-2"), triggerKey: key)
            #expect(first.created)
            #expect(!again.created)
            #expect(again.runId == first.runId)
            let run = try #require(try await store.run(tenantId: f.tenantId, id: first.runId))
            #expect(run.status == .pending)
            #expect(run.status.shown == .running)
            #expect(run.version == version)
            #expect(run.pendingTrigger?.id == "api-1")
            #expect(run.jsonValue["trigger"]?["data"]?["workoutId"] == "w1")
            #expect(run.jsonValue["steps"] == [])
            // Due at once for a replica, with its inbox empty.
            let claimed = try await f.postgres.withTransaction {
                try await WorkflowRunStore.claimDue(on: $0, now: Date(), limit: 10)
            }
            #expect(claimed.map(\.record.id) == [first.runId])
            // Another tenant cannot read it.
            #expect(try await store.run(tenantId: UUID(), id: first.runId) == nil)
        } finally: {
            await f.stop()
        }
    }

    @Test func cancelRequestsGoToTheInboxAndEndedRunsAreLeftAlone() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let store = WorkflowRunStore(postgres: f.postgres)
            let a = try await store.requestStart(
                tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "alice", trigger: trigger("e1"), triggerKey: "e1")
            let b = try await store.requestStart(
                tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "bob", trigger: trigger("e2"), triggerKey: "e2")
            #expect(
                try await store.requestCancel(tenantId: f.tenantId, runId: a.runId, reason: "by test") == .requested)
            #expect(try await store.requestCancel(tenantId: f.tenantId, runId: UUID(), reason: "x") == .notFound)
            #expect(try await store.requestCancel(tenantId: UUID(), runId: a.runId, reason: "x") == .notFound)
            let claimed = try await f.postgres.withTransaction {
                try await WorkflowRunStore.claimDue(on: $0, now: Date(), limit: 10)
            }
            let claimedA = try #require(claimed.first { $0.record.id == a.runId })
            #expect(claimedA.inputs.map(\.kind) == [.cancel(reason: "by test")])

            // The replica ends b (completed): a cancel of it then changes nothing.
            var state = WorkflowRunState(
                runId: b.runId.lowercasedText, workflowKey: "nudge", version: version,
                trigger: trigger("e2"), subscriber: WorkflowSubscriber(id: "bob"), startedAt: Date())
            state.status = .completed
            state.endedAt = Date()
            try await f.postgres.withTransaction {
                try await WorkflowRunStore.save(on: $0, WorkflowRunSave(id: b.runId, state: state, lastInputId: nil))
            }
            #expect(
                try await store.requestCancel(tenantId: f.tenantId, runId: b.runId, reason: "late") == .alreadyEnded)
            let ended = try #require(try await store.run(tenantId: f.tenantId, id: b.runId))
            #expect(ended.status == .completed)
            #expect(ended.endedAt != nil)

            // Cancel all: only the live one, once however often it is asked.
            #expect(
                try await store.requestCancelAll(tenantId: f.tenantId, workflowKey: "nudge", reason: "workflow deleted")
                    == 1)
            #expect(
                try await store.requestCancelAll(tenantId: f.tenantId, workflowKey: "nudge", reason: "workflow deleted")
                    == 0)
        } finally: {
            await f.stop()
        }
    }

    @Test func listFiltersBySubscriberAndStatusAndPagesWithACursor() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let store = WorkflowRunStore(postgres: f.postgres)
            var ids: [UUID] = []
            for i in 0..<7 {
                let start = try await store.requestStart(
                    tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                    subscriberId: i % 2 == 0 ? "alice" : "bob", trigger: trigger("e\(i)"), triggerKey: "e\(i)")
                ids.append(start.runId)
            }
            // One failed run (alice's e0).
            try await f.postgres.withTransaction {
                try await WorkflowRunStore.failPending(on: $0, id: ids[0], code: .subscriberUnknown, now: Date())
            }

            var seen: [UUID] = []
            var cursor: WorkflowRunCursor?
            var pages = 0
            repeat {
                let page = try await store.list(tenantId: f.tenantId, workflowKey: "nudge", after: cursor, limit: 3)
                seen += page.runs.map(\.id)
                cursor = try page.next.map { try #require(WorkflowRunCursor(text: $0.text)) }
                pages += 1
            } while cursor != nil
            #expect(pages == 3)
            #expect(Set(seen) == Set(ids))
            #expect(seen.count == 7)
            let alice = try await store.list(tenantId: f.tenantId, workflowKey: "nudge", subscriberId: "alice")
            #expect(alice.runs.count == 4)
            #expect(alice.runs.allSatisfy { $0.subscriberId == "alice" })
            let running = try await store.list(
                tenantId: f.tenantId, workflowKey: "nudge", subscriberId: "alice", status: .running)
            #expect(Set(running.runs.map(\.id)) == Set([ids[2], ids[4], ids[6]]))
            let failed = try await store.list(tenantId: f.tenantId, workflowKey: "nudge", status: .failed)
            #expect(failed.runs.map(\.id) == [ids[0]])
            #expect(failed.runs[0].jsonValue["failure"]?["code"] == "subscriber_unknown")
            #expect(WorkflowRunCursor(text: "nope") == nil)
        } finally: {
            await f.stop()
        }
    }

    @Test func twoReplicasClaimDisjointRunsAndATimerIsDueOnlyWhenItsTimeComes() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let store = WorkflowRunStore(postgres: f.postgres)
            for i in 0..<6 {
                _ = try await store.requestStart(
                    tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                    subscriberId: "s\(i)", trigger: trigger("e\(i)"), triggerKey: "e\(i)")
            }
            // Replica 1 holds its claim open while replica 2 claims: no run is claimed by both.
            let now = Date()
            let (first, second) = try await f.postgres.withTransaction { tx1 in
                let first = try await WorkflowRunStore.claimDue(on: tx1, now: now, limit: 4)
                let second = try await f.postgres.withTransaction {
                    try await WorkflowRunStore.claimDue(on: $0, now: now, limit: 10)
                }
                // Replica 1 starts its runs: each waits an hour.
                for run in first {
                    let advance = WorkflowEngine.start(
                        runId: run.record.id.lowercasedText, workflowKey: "nudge", version: version,
                        definition: definition,
                        trigger: try #require(run.record.pendingTrigger),
                        subscriber: WorkflowSubscriber(id: run.record.subscriberId),
                        environment: WorkflowEnvironment(now: now, messageId: { r, s, p in "\(r)/\(s)/\(p.rawValue)" }))
                    try await WorkflowRunStore.save(
                        on: tx1, WorkflowRunSave(id: run.record.id, state: advance.state, lastInputId: nil))
                }
                return (first, second)
            }
            #expect(first.count == 4)
            #expect(second.count == 2)
            #expect(Set(first.map(\.record.id)).isDisjoint(with: Set(second.map(\.record.id))))
            // The four are running with a timer an hour on: not due now, due then.
            let notYet = try await f.postgres.withTransaction {
                try await WorkflowRunStore.claimDue(on: $0, now: now.addingTimeInterval(3599), limit: 10)
            }
            #expect(Set(notYet.map(\.record.id)) == Set(second.map(\.record.id)))
            let due = try await f.postgres.withTransaction {
                try await WorkflowRunStore.claimDue(on: $0, now: now.addingTimeInterval(3600), limit: 10)
            }
            #expect(Set(due.map(\.record.id)).isSuperset(of: Set(first.map(\.record.id))))
            let claimed = try #require(due.first { $0.record.id == first[0].record.id })
            #expect(claimed.timerToken == "pause:wait")
            #expect(claimed.record.state?.status == .running)
            #expect(
                claimed.record.dueAt.map { abs($0.timeIntervalSince(now.addingTimeInterval(3600))) < 0.001 } == true)
            let shown = try #require(try await store.run(tenantId: f.tenantId, id: first[0].record.id))
            #expect(shown.jsonValue["current"] == "pause")
            #expect(shown.jsonValue["steps"]?.arrayValue?.first?["kind"] == "wait")
        } finally: {
            await f.stop()
        }
    }

    @Test func startedRunsAreOncePerTriggerEventsAreRoutedOnceAndMessagesNameTheirRun() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let store = WorkflowRunStore(postgres: f.postgres)
            let now = Date()
            func insert(_ trigger: WorkflowEvent) async throws -> (UUID, Set<UUID>) {
                let id = UUID()
                let advance = WorkflowEngine.start(
                    runId: id.lowercasedText, workflowKey: "nudge", version: version, definition: definition,
                    trigger: trigger, subscriber: WorkflowSubscriber(id: "alice"),
                    environment: WorkflowEnvironment(now: now, messageId: { r, s, p in "\(r)/\(s)/\(p.rawValue)" }))
                let run = WorkflowRunInsert(
                    id: id, tenantId: f.tenantId, triggerKey: trigger.id,
                    reactsTo: definition.reactsToEvents.sorted(), state: advance.state)
                return (
                    id, try await f.postgres.withTransaction { try await WorkflowRunStore.insertStarted(on: $0, [run]) }
                )
            }
            let (id1, inserted1) = try await insert(trigger("evt-1"))
            let (_, insertedAgain) = try await insert(trigger("evt-1"))
            let (id2, inserted2) = try await insert(trigger("evt-2", "w2"))
            #expect(inserted1 == [id1])
            #expect(insertedAgain.isEmpty)
            #expect(inserted2 == [id2])

            // workout.completed reaches both of alice's runs (cancelOn), once per event id; other
            // names and other subscribers reach none.
            let done = WorkflowEvent(
                id: "done-1", name: "workout.completed", data: ["workoutId": "w2"], occurredAt: now)
            #expect(
                try await f.postgres.withConnection {
                    try await WorkflowRunStore.route(on: $0, tenantId: f.tenantId, subscriberId: "alice", event: done)
                } == 2)
            #expect(
                try await f.postgres.withConnection {
                    try await WorkflowRunStore.route(on: $0, tenantId: f.tenantId, subscriberId: "alice", event: done)
                } == 0)
            #expect(
                try await f.postgres.withConnection {
                    try await WorkflowRunStore.route(on: $0, tenantId: f.tenantId, subscriberId: "bob", event: done)
                } == 0)
            let other = WorkflowEvent(id: "x", name: "app.opened", occurredAt: now)
            #expect(
                try await f.postgres.withConnection {
                    try await WorkflowRunStore.route(on: $0, tenantId: f.tenantId, subscriberId: "alice", event: other)
                } == 0)
            // Routed runs are due now (not in an hour), with the event in their inbox.
            let claimed = try await f.postgres.withTransaction {
                try await WorkflowRunStore.claimDue(on: $0, now: now, limit: 10)
            }
            #expect(Set(claimed.map(\.record.id)) == [id1, id2])
            #expect(claimed.allSatisfy { $0.inputs.map(\.kind) == [.event(done)] })

            // A message row of a send, written once.
            let messageId = UUID()
            let message = WorkflowMessageInsert(
                id: messageId, tenantId: f.tenantId, subscriberId: "alice", content: ["body": "hi"],
                workflowKey: "nudge", version: version, runId: id1, step: "nudge")
            #expect(
                try await f.postgres.withTransaction { try await Ledger.insertWorkflowMessages(on: $0, [message]) }
                    == [messageId])
            #expect(
                try await f.postgres.withTransaction { try await Ledger.insertWorkflowMessages(on: $0, [message]) }
                    .isEmpty)
            let origin = try #require(try await store.messageOrigin(tenantId: f.tenantId, messageId: messageId))
            #expect(
                origin
                    == WorkflowRunStore.MessageOrigin(workflowKey: "nudge", version: version, runId: id1, step: "nudge")
            )
            #expect(
                try await f.postgres.query("SELECT target FROM messages WHERE id = $1::uuid", [messageId])[0].decode(
                    JSONValue.self, at: 0) == ["to": ["alice"]])

            // A skip is recorded once.
            #expect(
                try await f.postgres.withConnection {
                    try await WorkflowRunStore.recordSkip(
                        on: $0, tenantId: f.tenantId, workflowKey: "nudge", triggerKey: "e9",
                        subscriberId: "ghost", reason: "subscriber_unknown")
                })
            #expect(
                try await !f.postgres.withConnection {
                    try await WorkflowRunStore.recordSkip(
                        on: $0, tenantId: f.tenantId, workflowKey: "nudge", triggerKey: "e9",
                        subscriberId: "ghost", reason: "subscriber_unknown")
                })
        } finally: {
            await f.stop()
        }
    }

    @Test func runsOfADeletedWorkflowAreAskedToCancel() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let (version, definition) = try await f.save("nudge", nudgeDefinition)
            let store = WorkflowRunStore(postgres: f.postgres)
            let run = try await store.requestStart(
                tenantId: f.tenantId, workflowKey: "nudge", version: version, definition: definition,
                subscriberId: "alice", trigger: trigger("e1"), triggerKey: "e1")
            #expect(
                try await f.postgres.withConnection { try await WorkflowRunStore.cancelRunsOfDeletedWorkflows(on: $0) }
                    == 0
            )
            try await f.postgres.execute(
                "UPDATE workflows SET deleted_at = now(), enabled = false WHERE tenant_id = $1::uuid", [f.tenantId])
            #expect(
                try await f.postgres.withConnection { try await WorkflowRunStore.cancelRunsOfDeletedWorkflows(on: $0) }
                    == 1
            )
            #expect(
                try await f.postgres.withConnection { try await WorkflowRunStore.cancelRunsOfDeletedWorkflows(on: $0) }
                    == 0
            )
            let claimed = try await f.postgres.withTransaction {
                try await WorkflowRunStore.claimDue(on: $0, now: Date(), limit: 10)
            }
            #expect(
                claimed.first { $0.record.id == run.runId }?.inputs.map(\.kind) == [.cancel(reason: "workflow deleted")]
            )
        } finally: {
            await f.stop()
        }
    }
}
