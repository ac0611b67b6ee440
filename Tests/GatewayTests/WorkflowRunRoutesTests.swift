import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

private let reminder: JSONValue = [
    "trigger": ["event": "workout.scheduled"],
    "steps": [["name": "pause", "wait": ["duration": "2h"]], ["name": "nudge", "send": ["title": "Leg day"]]]
]

/// The run routes through the real gateway and Postgres. No workflow replica runs here, so a
/// triggered run stays as the gateway wrote it (pending, read as `running`) and a cancel stays a
/// request in the run's inbox: what these tests check is what the gateway writes and reads
/// (the end-to-end runs are the workflow service's tests).
@Suite("Workflow runs through the gateway", .requiresTestStack)
struct WorkflowRunRoutesTests {
    private func setUp(_ h: GatewayHarness) async throws {
        #expect(try await h.send("PUT", "/v1/workflows/reminder", key: h.tenantKey, body: reminder).status == 201)
        for id in ["maya", "sam"] {
            #expect(
                try await h.send("PUT", "/v1/subscribers/\(id)", key: h.tenantKey, body: ["attributes": [:]]).status
                    < 300)
        }
    }

    private func trigger(_ h: GatewayHarness, _ to: String, key: String? = nil, data: JSONValue? = nil) async throws
        -> Reply
    {
        var body: [String: JSONValue] = ["to": .string(to)]
        if let data { body["data"] = data }
        return try await h.send(
            "POST", "/v1/workflows/reminder/trigger", key: h.tenantKey, body: .object(body),
            headers: key.map { ["Idempotency-Key": $0] } ?? [:])
    }

    @Test func triggerStartsOneRunPerIdempotencyKey() async throws {
        try await withGateway { h in
            try await setUp(h)
            let first = try await trigger(h, "maya", key: "order-1", data: ["workoutId": "w-1"])
            #expect(first.status == 202, "\(first.envelope)")
            #expect(
                first.data?["created"] == true && first.data?["version"] == 1 && first.data?["subscriberId"] == "maya")
            let runId = try #require(first.data?["runId"]?.stringValue)
            let replay = try await trigger(h, "maya", key: "order-1", data: ["workoutId": "w-1"])
            #expect(replay.data?["runId"]?.stringValue == runId && replay.envelope.metadata["replayed"] == true)
            // Past the idempotency record's life the key still starts nothing twice: it is the run's trigger key.
            try await h.postgres.execute("DELETE FROM idempotency_records")
            let later = try await trigger(h, "maya", key: "order-1", data: ["workoutId": "w-1"])
            #expect(
                later.status == 202 && later.data?["runId"]?.stringValue == runId && later.data?["created"] == false)
            let other = try await trigger(h, "maya")
            #expect(other.status == 202 && other.data?["runId"]?.stringValue != runId)

            let run = try await h.send("GET", "/v1/workflow-runs/\(runId)", key: h.tenantKey)
            #expect(run.status == 200, "\(run.envelope)")
            #expect(
                run.data?["status"] == "running" && run.data?["workflowKey"] == "reminder" && run.data?["version"] == 1)
            #expect(
                run.data?["trigger"]?["name"] == "workout.scheduled"
                    && run.data?["trigger"]?["data"] == ["workoutId": "w-1"])
            #expect(run.data?["steps"] == [] && run.data?["failure"] == .null)
            let stored = try await h.postgres.query(
                "SELECT status, trigger_key FROM workflow_runs WHERE id = $1::uuid", [runId])
            #expect(try stored.first?.decode(String.self, at: 0) == "pending")
            #expect(try stored.first?.decode(String.self, at: 1) == "api:order-1")
        }
    }

    @Test func triggerRefusals() async throws {
        try await withGateway { h in
            try await setUp(h)
            let unknown = try await trigger(h, "nobody")
            #expect(unknown.status == 404 && unknown.envelope.error?.details?.arrayValue?.first?["path"] == "to")
            let bad = try await h.send(
                "POST", "/v1/workflows/reminder/trigger", key: h.tenantKey, body: ["data": 3, "extra": true])
            let paths = Set((bad.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(bad.status == 422 && paths == ["to", "data", "extra"], "\(bad.envelope)")
            let missing = try await h.send("POST", "/v1/workflows/nope/trigger", key: h.tenantKey, body: ["to": "maya"])
            #expect(missing.status == 404 && missing.code == "not_found")
            #expect(try await h.send("POST", "/v1/workflows/reminder/disable", key: h.tenantKey).status == 200)
            let disabled = try await trigger(h, "maya")
            #expect(disabled.status == 409 && disabled.code == "workflow_disabled")
            let count = try await h.postgres.query("SELECT count(*) FROM workflow_runs")
            #expect(try count.first?.decode(Int.self, at: 0) == 0)
        }
    }

    @Test func listNewestFirstWithFiltersAndACursor() async throws {
        try await withGateway { h in
            try await setUp(h)
            var ids: [String] = []
            for to in ["maya", "sam", "maya"] {
                ids.append(try #require(try await trigger(h, to).data?["runId"]?.stringValue))
            }
            try await h.postgres.execute(
                "UPDATE workflow_runs SET status = 'completed', ended_at = now() WHERE id = $1::uuid", [ids[0]])
            let all = try await h.send("GET", "/v1/workflows/reminder/runs", key: h.tenantKey)
            #expect(
                all.status == 200 && all.items.compactMap { $0["id"]?.stringValue } == ids.reversed(), "\(all.envelope)"
            )
            let maya = try await h.send("GET", "/v1/workflows/reminder/runs?subscriberId=maya", key: h.tenantKey)
            #expect(maya.items.compactMap { $0["id"]?.stringValue } == [ids[2], ids[0]])
            let running = try await h.send(
                "GET", "/v1/workflows/reminder/runs?status=running&subscriberId=", key: h.tenantKey)
            #expect(running.items.compactMap { $0["id"]?.stringValue } == [ids[2], ids[1]])
            let completed = try await h.send("GET", "/v1/workflows/reminder/runs?status=completed", key: h.tenantKey)
            #expect(completed.items.compactMap { $0["id"]?.stringValue } == [ids[0]])

            var seen: [String] = []
            var cursor = ""
            for _ in 0..<4 {
                let page = try await h.send(
                    "GET", "/v1/workflows/reminder/runs?limit=1&cursor=\(cursor)", key: h.tenantKey)
                seen += page.items.compactMap { $0["id"]?.stringValue }
                guard page.envelope.metadata["hasMore"] == true,
                    let next = page.envelope.metadata["cursor"]?.stringValue
                else { break }
                cursor = next
            }
            #expect(seen == ids.reversed())

            let bad = try await h.send(
                "GET", "/v1/workflows/reminder/runs?status=paused&subscriberId=%01", key: h.tenantKey)
            let paths = Set((bad.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(bad.status == 422 && paths == ["status", "subscriberId"], "\(bad.envelope)")
            let foreign = try await h.send("GET", "/v1/workflows/reminder/runs?cursor=bm9wZQ", key: h.tenantKey)
            #expect(foreign.status == 422 && foreign.envelope.error?.details?.arrayValue?.first?["path"] == "cursor")
            // A cursor of another list's shape ("k:nope") is not a runs cursor either.
            let other = try await h.send("GET", "/v1/workflows/reminder/runs?cursor=azpub3Bl", key: h.tenantKey)
            #expect(other.status == 422 && other.envelope.error?.details?.arrayValue?.first?["path"] == "cursor")
            #expect(try await h.send("GET", "/v1/workflows/nope/runs", key: h.tenantKey).status == 404)
            #expect(try await h.send("GET", "/v1/workflow-runs/\(UUID().uuidString)", key: h.tenantKey).status == 404)
            #expect(try await h.send("GET", "/v1/workflow-runs/not-a-uuid", key: h.tenantKey).status == 404)
        }
    }

    @Test func cancelAndDeleteAskTheRunsToCancel() async throws {
        try await withGateway { h in
            try await setUp(h)
            let one = try #require(try await trigger(h, "maya").data?["runId"]?.stringValue)
            let two = try #require(try await trigger(h, "sam").data?["runId"]?.stringValue)
            let ended = try #require(try await trigger(h, "sam").data?["runId"]?.stringValue)
            try await h.postgres.execute(
                "UPDATE workflow_runs SET status = 'completed', ended_at = now(), wake_at = NULL WHERE id = $1::uuid",
                [ended])

            let cancel = try await h.send("POST", "/v1/workflow-runs/\(one)/cancel", key: h.tenantKey)
            #expect(
                cancel.status == 202 && cancel.data?["cancel"] == "requested"
                    && cancel.data?["run"]?["id"]?.stringValue == one,
                "\(cancel.envelope)")
            let late = try await h.send("POST", "/v1/workflow-runs/\(ended)/cancel", key: h.tenantKey)
            #expect(
                late.status == 202 && late.data?["cancel"] == "already_ended"
                    && late.data?["run"]?["status"] == "completed")
            #expect(
                try await h.send("POST", "/v1/workflow-runs/\(UUID().uuidString)/cancel", key: h.tenantKey).status
                    == 404)

            let deleted = try await h.send("DELETE", "/v1/workflows/reminder", key: h.tenantKey)
            #expect(deleted.status == 200 && deleted.data?["runsCancelled"] == 2, "\(deleted.envelope)")
            let inputs = try await h.postgres.query(
                """
                SELECT run_id::text, count(*) FROM workflow_run_inputs WHERE kind = 'cancel' GROUP BY run_id ORDER BY 1
                """)
            let byRun = Dictionary(
                uniqueKeysWithValues: try inputs.map {
                    (try $0.decode(String.self, at: 0), try $0.decode(Int.self, at: 1))
                })
            #expect(byRun == [one: 2, two: 1])
            let due = try await h.postgres.query(
                "SELECT count(*) FROM workflow_runs WHERE wake_at = '-infinity' AND id IN ($1::uuid, $2::uuid)",
                [one, two])
            #expect(try due.first?.decode(Int.self, at: 0) == 2)
            let again = try await h.send("DELETE", "/v1/workflows/reminder", key: h.tenantKey)
            #expect(again.data?["deleted"] == false && again.data?["runsCancelled"] == 0)
        }
    }

    @Test func aMessageNamesTheRunThatSentIt() async throws {
        try await withGateway { h in
            try await setUp(h)
            let run = try #require(try await trigger(h, "maya").data?["runId"]?.stringValue)
            let sent = try await h.send("POST", "/v1/messages", key: h.tenantKey, body: ["to": "maya", "title": "Hi"])
            let plain = try await h.send(
                "POST", "/v1/messages", key: h.tenantKey, body: ["to": "maya", "title": "Hello"])
            let id = try #require(sent.data?["id"]?.stringValue, "\(sent.envelope)")
            // What the workflow service's send writes with the message (migration 0011's columns).
            try await h.postgres.execute(
                """
                UPDATE messages SET workflow_key = 'reminder', workflow_version = 1, workflow_run_id = $2::uuid, workflow_step = 'nudge'
                WHERE id = $1::uuid
                """, [id, run])
            let message = try await h.send("GET", "/v1/messages/\(id)", key: h.tenantKey)
            #expect(
                message.data?["workflow"] == [
                    "workflowKey": "reminder", "version": 1, "runId": .string(run), "step": "nudge"
                ])
            let other = try await h.send(
                "GET", "/v1/messages/\(try #require(plain.data?["id"]?.stringValue))", key: h.tenantKey)
            #expect(other.status == 200 && other.data?["workflow"] == .null)
        }
    }
}
