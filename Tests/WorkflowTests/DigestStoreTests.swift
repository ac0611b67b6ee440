import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import BuzzKitWorkflowRuns
import BuzzKitWorkflows
import Foundation
import Testing

/// The statements that make digests and throttles exact (issue 28), against real Postgres with
/// many transactions at once: one run per open window whatever the race, a close that takes
/// every event joined before it and none after, a late close taken over, and a throttle that lets
/// exactly `limit` through.
@Suite("Digest windows and throttles in Postgres", .requiresPostgres)
struct DigestStoreTests {
    static func like(_ id: String) -> WorkflowEvent {
        WorkflowEvent(id: id, name: "photo.liked", data: ["actor": .string(id)], occurredAt: Date())
    }

    /// One event opening or joining `key`'s window in its own transaction, as the events consumer
    /// does: answers the run it went to.
    static func join(
        _ f: WorkflowStoreFixture, _ id: String, key: String = "p1", subscriber: String = "alice",
        closesAt: Date, now: Date = Date()
    ) async throws -> UUID {
        try await f.postgres.withTransaction { tx in
            let run = try await WorkflowRunStore.openOrJoinDigests(
                on: tx,
                [
                    WorkflowDigestWindowRequest(
                        tenantId: f.tenantId, workflowKey: "liked", subscriberId: subscriber, key: key,
                        candidateRunId: UUID(), closesAt: closesAt)
                ], now: now)[0]
            _ = try await WorkflowRunStore.collectDigestEvents(
                on: tx,
                [WorkflowDigestEventInsert(tenantId: f.tenantId, workflowKey: "liked", runId: run, event: like(id))],
                joinedAt: now)
            return run
        }
    }

    @Test func concurrentFirstEventsOfOneKeyOpenOneWindowAndTwoKeysTwo() async throws {
        let f = try await WorkflowStoreFixture.start(poolSize: 8)
        try await withCleanup {
            let closes = Date().addingTimeInterval(600)
            let runs = try await withThrowingTaskGroup(of: (String, UUID).self) { group in
                for i in 0..<50 {
                    let key = i % 5 == 4 ? "p2" : "p1"
                    group.addTask { (key, try await Self.join(f, "e\(i)", key: key, closesAt: closes)) }
                }
                var runs: [(String, UUID)] = []
                for try await r in group { runs.append(r) }
                return runs
            }
            #expect(Set(runs.filter { $0.0 == "p1" }.map(\.1)).count == 1)
            #expect(Set(runs.filter { $0.0 == "p2" }.map(\.1)).count == 1)
            #expect(Set(runs.map(\.1)).count == 2)
            let p1 = try #require(runs.first { $0.0 == "p1" }?.1)
            let collected = try await f.postgres.withTransaction {
                try await WorkflowRunStore.closeDigests(
                    on: $0,
                    [
                        WorkflowDigestClose(
                            runId: p1, tenantId: f.tenantId, workflowKey: "liked", subscriberId: "alice", key: "p1")
                    ])
            }
            #expect(collected[p1]?.count == 40)
            #expect(Set(collected[p1]?.map(\.id) ?? []).count == 40)
        } finally: {
            await f.stop()
        }
    }

    @Test func aCloseTakesEveryEventJoinedBeforeItAndTheLaterOnesOpenTheNextDigest() async throws {
        let f = try await WorkflowStoreFixture.start(poolSize: 8)
        try await withCleanup {
            let closes = Date().addingTimeInterval(600)
            let first = try await Self.join(f, "first", closesAt: closes)
            // Joiners and the close at once: every event is either in what the close read or in
            // the digest that opened after it; none is lost or counted twice.
            async let joiners: [UUID] = withThrowingTaskGroup(of: UUID.self) { group in
                for i in 0..<40 { group.addTask { try await Self.join(f, "j\(i)", closesAt: closes) } }
                var runs: [UUID] = []
                for try await r in group { runs.append(r) }
                return runs
            }
            try await Task.sleep(for: .milliseconds(30))
            let collected =
                try await f.postgres.withTransaction {
                    try await WorkflowRunStore.closeDigests(
                        on: $0,
                        [
                            WorkflowDigestClose(
                                runId: first, tenantId: f.tenantId, workflowKey: "liked", subscriberId: "alice",
                                key: "p1")
                        ])
                }[first] ?? []
            let runs = try await joiners
            let joinedFirst = runs.filter { $0 == first }.count
            #expect(collected.count == joinedFirst + 1, "the close read every event that joined its run")
            #expect(Set(runs.filter { $0 != first }).count <= 1, "the later ones share the next digest")
            let rows = try await f.postgres.query(
                "SELECT run_id, count(*)::int FROM workflow_digest_events WHERE tenant_id = $1::uuid GROUP BY run_id",
                [f.tenantId])
            var byRun: [UUID: Int] = [:]
            for row in rows { byRun[try row.decode(UUID.self, at: 0)] = try row.decode(Int.self, at: 1) }
            #expect(byRun[first] == collected.count, "nothing joined the closed run after its close")
            #expect(byRun.values.reduce(0, +) == 41)
            // A redelivered event is not counted again, wherever its window is.
            let again = try await f.postgres.withTransaction {
                try await WorkflowRunStore.collectDigestEvents(
                    on: $0,
                    [
                        WorkflowDigestEventInsert(
                            tenantId: f.tenantId, workflowKey: "liked", runId: UUID(), event: Self.like("j3"))
                    ],
                    joinedAt: Date())
            }
            #expect(again.isEmpty)
        } finally: {
            await f.stop()
        }
    }

    @Test func aWindowWhoseCloseIsLateIsTakenOverByTheNextEvent() async throws {
        let f = try await WorkflowStoreFixture.start()
        try await withCleanup {
            let now = Date()
            let old = try await Self.join(f, "a", closesAt: now.addingTimeInterval(60), now: now)
            #expect(
                try await Self.join(f, "b", closesAt: now.addingTimeInterval(120), now: now.addingTimeInterval(30))
                    == old)
            // The window's time passed; its run has not closed it yet (a late replica).
            let next = try await Self.join(
                f, "c", closesAt: now.addingTimeInterval(200), now: now.addingTimeInterval(61))
            #expect(next != old)
            #expect(
                try await Self.join(f, "d", closesAt: now.addingTimeInterval(300), now: now.addingTimeInterval(62))
                    == next)
            // The late run still reads its own two; its close leaves the new window alone.
            let collected = try await f.postgres.withTransaction {
                try await WorkflowRunStore.closeDigests(
                    on: $0,
                    [
                        WorkflowDigestClose(
                            runId: old, tenantId: f.tenantId, workflowKey: "liked", subscriberId: "alice", key: "p1")
                    ])
            }
            #expect(collected[old]?.map(\.id) == ["a", "b"])
            #expect(
                try await Self.join(f, "e", closesAt: now.addingTimeInterval(300), now: now.addingTimeInterval(63))
                    == next)
            // A long key is kept as its digest, still one window.
            let long = String(repeating: "k", count: 2000)
            let l1 = try await Self.join(f, "l1", key: long, closesAt: now.addingTimeInterval(300))
            #expect(try await Self.join(f, "l2", key: long, closesAt: now.addingTimeInterval(300)) == l1)
            let stored = try await f.postgres.query(
                "SELECT digest_key FROM workflow_digest_windows WHERE run_id = $1::uuid", [l1])
            #expect(try stored.first?.decode(String.self, at: 0).hasPrefix("sha256:") == true)
        } finally: {
            await f.stop()
        }
    }

    @Test func aThrottleLetsExactlyItsLimitThroughUnderABurst() async throws {
        let f = try await WorkflowStoreFixture.start(poolSize: 8)
        try await withCleanup {
            let window = try #require(WorkflowDuration("1h"))
            let now = Date()
            func ask(_ pass: String, key: String = "", at: Date = now) async throws -> WorkflowThrottleAnswer {
                try await f.postgres.withTransaction {
                    try await WorkflowRunStore.throttle(
                        on: $0, tenantId: f.tenantId, workflowKey: "capped", subscriberId: "alice",
                        check: WorkflowThrottleCheck(step: "cap", key: key, limit: 3, window: window, passKey: pass),
                        now: at)
                }
            }
            let answers = try await withThrowingTaskGroup(of: (String, WorkflowThrottleAnswer).self) { group in
                for i in 0..<30 { group.addTask { ("r\(i)", try await ask("r\(i)")) } }
                var all: [(String, WorkflowThrottleAnswer)] = []
                for try await a in group { all.append(a) }
                return all
            }
            let passed = answers.filter(\.1.passed).map(\.0)
            #expect(passed.count == 3)
            #expect(answers.filter { !$0.1.passed }.allSatisfy { $0.1.recent == 3 })
            // A run asking again is the same pass; another key has its own three.
            #expect(try await ask(passed[0]).passed)
            #expect(try await ask("other", key: "berlin").passed)
            #expect(!(try await ask("late")).passed)
            // Rolling: once the window has passed the first passes, runs pass again.
            let later = now.addingTimeInterval(3601)
            #expect(try await ask("next-1", at: later).passed)
            let bucket = try await f.postgres.query(
                "SELECT cardinality(pass_keys) FROM workflow_throttles WHERE tenant_id = $1::uuid AND throttle_key = ''",
                [f.tenantId])
            #expect(try bucket.first?.decode(Int.self, at: 0) == 1)
        } finally: {
            await f.stop()
        }
    }
}
