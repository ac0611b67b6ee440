import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// A definition as JSON text (test input).
private func document(_ text: String) -> JSONValue {
    do { return try JSONValue.parse(text) } catch { fatalError("bad test JSON \(text)") }
}

private let nudge = """
    {"trigger": {"event": "workout.scheduled"}, "cancelOn": [{"event": "workout.completed", "where": "event.data.workoutId == trigger.data.workoutId"}],
     "steps": [{"name": "morning", "waitUntil": {"time": "07:00", "timezone": "subscriber"}},
               {"name": "nudge", "send": {"title": "Leg day, {{ subscriber.attributes.name }}", "body": "{{ trigger.data.time }} with Maya", "deepLink": "gym://workouts/{{ trigger.data.workoutId }}"}},
               {"name": "later", "wait": {"duration": "2h"}},
               {"name": "check", "branch": {"if": {"opened": "nudge"}, "then": [{"name": "done", "exit": {}}],
                                            "else": [{"name": "again", "send": {"title": "Still on?", "policy": "ignore"}}]}}]}
    """

/// (note, definition, path that must be reported, a piece of its message)
private let invalidDefinitions: [(String, String, String, String)] = [
    (
        "unknown step kind", #"{"trigger": {"event": "a"}, "steps": [{"name": "x", "sleep": {"duration": "1h"}}]}"#,
        "steps[0].sleep", "not a known step kind"
    ),
    (
        "unknown field", #"{"trigger": {"event": "a", "filter": "x"}, "steps": [{"name": "x", "exit": {}}]}"#,
        "trigger.filter", "not a known field"
    ),
    ("missing name", #"{"trigger": {"event": "a"}, "steps": [{"exit": {}}]}"#, "steps[0].name", "required"),
    (
        "duplicate name",
        #"{"trigger": {"event": "a"}, "steps": [{"name": "x", "wait": {"duration": "1h"}}, {"name": "x", "exit": {}}]}"#,
        "steps[1].name", "also the name of steps[0]"
    ),
    (
        "unknown step in a condition",
        #"{"trigger": {"event": "a"}, "steps": [{"name": "b", "branch": {"if": {"opened": "nope"}, "then": []}}]}"#,
        "steps[0].branch.if.opened", "no step"
    ),
    (
        "later step in a condition",
        #"{"trigger": {"event": "a"}, "steps": [{"name": "b", "branch": {"if": {"delivered": "s"}, "then": []}}, {"name": "s", "send": {"title": "a"}}]}"#,
        "steps[0].branch.if.delivered", "comes later"
    ),
    (
        "bad duration", #"{"trigger": {"event": "a"}, "steps": [{"name": "w", "wait": {"duration": "400d"}}]}"#,
        "steps[0].wait.duration", "365 days"
    ),
    (
        "bad time", #"{"trigger": {"event": "a"}, "steps": [{"name": "w", "waitUntil": {"time": "7:00"}}]}"#,
        "steps[0].waitUntil.time", "HH:MM"
    ),
    (
        "unknown zone",
        #"{"trigger": {"event": "a"}, "steps": [{"name": "w", "waitUntil": {"time": "07:00", "timezone": "Europe/Atlantis"}}]}"#,
        "steps[0].waitUntil.timezone", "IANA"
    ),
    (
        "expression syntax",
        #"{"trigger": {"event": "a", "where": "event.data.total >"}, "steps": [{"name": "x", "exit": {}}]}"#,
        "trigger.where", "expected a value"
    ),
    (
        "content over APNs's limits",
        #"{"trigger": {"event": "a"}, "steps": [{"name": "s", "send": {"body": ""# + String(repeating: "é", count: 2100)
            + #""}}]}"#, "steps[0].send.payload", "4096"
    ),
    (
        "template", #"{"trigger": {"event": "a"}, "steps": [{"name": "s", "send": {"title": "{{ trigger.data.x"}}]}"#,
        "steps[0].send.title", "never closed"
    ),
    (
        "local send not after a waitUntil",
        #"{"trigger": {"event": "a"}, "steps": [{"name": "s", "send": {"deliver": "local", "title": "a"}}]}"#,
        "steps[0].send.deliver", "directly after a waitUntil"
    )
]

@Suite("Workflow definitions through the gateway", .requiresTestStack)
struct WorkflowRoutesTests {
    @Test func versionsEnableDisableAndDelete() async throws {
        try await withGateway { h in
            let created = try await h.send("PUT", "/v1/workflows/leg-day", key: h.tenantKey, body: document(nudge))
            #expect(created.status == 201, "\(created.envelope)")
            #expect(
                created.data?["version"] == 1 && created.data?["changed"] == true && created.data?["enabled"] == true)
            #expect(created.data?["triggerEvent"] == "workout.scheduled")
            #expect(created.data?["definition"]?["steps"]?.arrayValue?.count == 4)
            let digest = created.data?["digest"]
            #expect(digest?.stringValue?.count == 64)

            // The same definition again, with defaults written out and keys in another order: nothing changes.
            guard case .object(var same) = document(nudge) else { return }
            same["enabled"] = true
            let again = try await h.send("PUT", "/v1/workflows/leg-day", key: h.tenantKey, body: .object(same))
            #expect(
                again.status == 200 && again.data?["version"] == 1 && again.data?["changed"] == false
                    && again.data?["digest"] == digest)
            let canonical = try await h.send(
                "PUT", "/v1/workflows/leg-day", key: h.tenantKey, body: created.data?["definition"])
            #expect(canonical.data?["version"] == 1 && canonical.data?["changed"] == false)

            // `enabled: false` alone flips the flag without a version.
            same["enabled"] = false
            let disabled = try await h.send("PUT", "/v1/workflows/leg-day", key: h.tenantKey, body: .object(same))
            #expect(
                disabled.data?["version"] == 1 && disabled.data?["enabled"] == false
                    && disabled.data?["changed"] == false)
            let enabled = try await h.send("POST", "/v1/workflows/leg-day/enable", key: h.tenantKey)
            #expect(enabled.status == 200 && enabled.data?["enabled"] == true && enabled.data?["version"] == 1)

            // A change makes version 2; version 1 stays readable as it was.
            let changed = try await h.send(
                "PUT", "/v1/workflows/leg-day", key: h.tenantKey,
                body: document(nudge.replacingOccurrences(of: "07:00", with: "06:30")))
            #expect(changed.status == 200 && changed.data?["version"] == 2 && changed.data?["changed"] == true)
            #expect(changed.data?["digest"] != digest)
            let current = try await h.send("GET", "/v1/workflows/leg-day", key: h.tenantKey)
            #expect(current.data?["version"] == 2)
            #expect(current.data?["definition"]?["steps"]?.arrayValue?.first?["waitUntil"]?["time"] == "06:30")
            let v1 = try await h.send("GET", "/v1/workflows/leg-day/versions/1", key: h.tenantKey)
            #expect(
                v1.status == 200
                    && v1.data?["definition"]?["steps"]?.arrayValue?.first?["waitUntil"]?["time"] == "07:00")
            #expect(v1.data?["digest"] == digest)
            #expect(try await h.send("GET", "/v1/workflows/leg-day/versions/3", key: h.tenantKey).status == 404)
            #expect(try await h.send("GET", "/v1/workflows/leg-day/versions/zero", key: h.tenantKey).status == 404)

            let off = try await h.send("POST", "/v1/workflows/leg-day/disable", key: h.tenantKey)
            #expect(off.status == 200 && off.data?["enabled"] == false)
            #expect(try await h.send("POST", "/v1/workflows/nope/disable", key: h.tenantKey).status == 404)

            // Delete: gone for the API, idempotent; saving it again brings it back as a new version, enabled.
            let deleted = try await h.send("DELETE", "/v1/workflows/leg-day", key: h.tenantKey)
            #expect(deleted.status == 200 && deleted.data?["deleted"] == true)
            #expect(try await h.send("DELETE", "/v1/workflows/leg-day", key: h.tenantKey).data?["deleted"] == false)
            #expect(try await h.send("GET", "/v1/workflows/leg-day", key: h.tenantKey).status == 404)
            #expect(try await h.send("GET", "/v1/workflows/leg-day/versions/1", key: h.tenantKey).status == 404)
            #expect(try await h.send("POST", "/v1/workflows/leg-day/enable", key: h.tenantKey).status == 404)
            #expect(try await h.send("GET", "/v1/workflows", key: h.tenantKey).items.isEmpty)
            let back = try await h.send("PUT", "/v1/workflows/leg-day", key: h.tenantKey, body: document(nudge))
            #expect(back.status == 201 && back.data?["version"] == 3 && back.data?["enabled"] == true)

            // Versions are immutable in the database too.
            await #expect(throws: (any Error).self) {
                try await h.postgres.execute(
                    "UPDATE workflow_versions SET definition = '{}' WHERE workflow_key = 'leg-day'")
            }
        }
    }

    /// The hook the workflow service uses: every change on `bk_workflow_changes`, in order.
    @Test func changesAreAnnouncedForTheRuntime() async throws {
        try await withGateway { h in
            let stream = try await h.postgres.listen("bk_workflow_changes")
            #expect(
                try await h.send("PUT", "/v1/workflows/announced", key: h.tenantKey, body: document(nudge)).status
                    == 201)
            #expect(
                try await h.send("PUT", "/v1/workflows/announced", key: h.tenantKey, body: document(nudge)).data?[
                    "changed"] == false)
            #expect(try await h.send("POST", "/v1/workflows/announced/disable", key: h.tenantKey).status == 200)
            #expect(
                try await h.send(
                    "PUT", "/v1/workflows/announced", key: h.tenantKey,
                    body: document(nudge.replacingOccurrences(of: "2h", with: "3h"))
                ).data?["version"] == 2)
            #expect(try await h.send("DELETE", "/v1/workflows/announced", key: h.tenantKey).data?["deleted"] == true)
            var changes: [String] = []
            for try await notification in stream {
                guard let payload = try? JSONValue.parse(notification.payload),
                    payload["tenantId"]?.stringValue == h.tenantID,
                    payload["key"] == "announced", let change = payload["change"]?.stringValue
                else { continue }
                changes.append("\(change):\(payload["version"]?.intValue ?? 0)")
                if change == "deleted" { break }
            }
            #expect(changes == ["saved:1", "disabled:1", "saved:2", "deleted:2"])
            let row = try await h.postgres.query(
                "SELECT deleted_at IS NOT NULL, enabled FROM workflows WHERE key = 'announced'"
            ).first
            #expect(try row?.decode(Bool.self, at: 0) == true && row?.decode(Bool.self, at: 1) == false)
        }
    }

    @Test func everyValidationErrorWithItsPath() async throws {
        try await withGateway { h in
            for (note, text, path, fragment) in invalidDefinitions {
                let reply = try await h.send("PUT", "/v1/workflows/bad", key: h.tenantKey, body: document(text))
                #expect(reply.status == 422 && reply.code == "validation_failed", "\(note)")
                let details = reply.envelope.error?.details?.arrayValue ?? []
                #expect(
                    details.contains {
                        $0["path"]?.stringValue == path && ($0["message"]?.stringValue ?? "").contains(fragment)
                    },
                    "\(note): \(details)")
            }
            // An expression error carries its line and column.
            let positioned = try await h.send(
                "PUT", "/v1/workflows/bad", key: h.tenantKey,
                body: document(
                    #"{"trigger": {"event": "a", "where": "event.data.a == 1 and\n  oops.b == 2"}, "steps": [{"name": "x", "exit": {}}]}"#
                ))
            let detail = positioned.envelope.error?.details?.arrayValue?.first
            #expect(
                detail?["path"] == "trigger.where" && detail?["line"] == 2 && detail?["column"] == 3,
                "\(String(describing: detail))")
            // Several problems at once, all listed.
            let many = try await h.send(
                "PUT", "/v1/workflows/bad", key: h.tenantKey,
                body: document(
                    #"{"trigger": {"event": ""}, "steps": [{"name": "a", "wait": {"duration": "0s"}}, {"name": "b", "waitUntil": {"time": "25:00"}}]}"#
                ))
            let paths = Set((many.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(paths == ["trigger.event", "steps[0].wait.duration", "steps[1].waitUntil.time"])
            // Nothing was stored.
            #expect(try await h.send("GET", "/v1/workflows/bad", key: h.tenantKey).status == 404)
            let bad = try await h.send("PUT", "/v1/workflows/bad%20key", key: h.tenantKey, body: document(nudge))
            #expect(bad.status == 422 && bad.envelope.error?.details?.arrayValue?.first?["path"] == "path.key")
        }
    }

    @Test func listInKeyOrderWithACursorAndScopes() async throws {
        try await withGateway { h in
            for key in ["b", "a", "c:1", "A"] {
                #expect(
                    try await h.send("PUT", "/v1/workflows/\(key)", key: h.tenantKey, body: document(nudge)).status
                        == 201)
            }
            let first = try await h.send("GET", "/v1/workflows?limit=3", key: h.tenantKey)
            #expect(first.items.compactMap { $0["key"]?.stringValue } == ["A", "a", "b"])
            #expect(first.envelope.metadata["hasMore"] == true)
            let cursor = first.envelope.metadata["cursor"]?.stringValue ?? ""
            let second = try await h.send("GET", "/v1/workflows?limit=3&cursor=\(cursor)", key: h.tenantKey)
            #expect(
                second.items.compactMap { $0["key"]?.stringValue } == ["c:1"]
                    && second.envelope.metadata["hasMore"] == false)

            let reader = try await h.createKey(scopes: ["workflows:read"], tenant: h.tenantID)
            #expect(try await h.send("GET", "/v1/workflows/a", key: reader).status == 200)
            let refused = try await h.send("PUT", "/v1/workflows/a", key: reader, body: document(nudge))
            #expect(refused.status == 403 && refused.code == "forbidden_scope")
            #expect(try await h.send("DELETE", "/v1/workflows/a", key: reader).status == 403)
            #expect(
                try await h.send("PATCH", "/v1/settings", key: reader, body: ["defaultTimezone": "UTC"]).status == 403)
            let writerOnly = try await h.createKey(scopes: ["workflows:write"], tenant: h.tenantID)
            #expect(try await h.send("GET", "/v1/workflows", key: writerOnly).status == 403)
        }
    }

    @Test func settingsQuietHoursAndDefaultZone() async throws {
        try await withGateway { h in
            let empty = try await h.send("GET", "/v1/settings", key: h.tenantKey)
            #expect(
                empty.status == 200 && empty.data?["quietHours"] == .null && empty.data?["defaultTimezone"] == .null)
            let changed = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: ["quietHours": ["start": "22:00", "end": "08:00"], "defaultTimezone": "America/New_York"])
            #expect(changed.status == 200 && changed.data?["quietHours"] == ["start": "22:00", "end": "08:00"])
            #expect(changed.data?["defaultTimezone"] == "America/New_York")
            let zoneOnly = try await h.send("PATCH", "/v1/settings", key: h.tenantKey, body: ["defaultTimezone": nil])
            #expect(
                zoneOnly.data?["quietHours"] == ["start": "22:00", "end": "08:00"]
                    && zoneOnly.data?["defaultTimezone"] == .null)
            let bad = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey,
                body: ["quietHours": ["start": "25:00"], "defaultTimezone": "Mars/Base", "other": 1])
            #expect(bad.status == 422)
            let paths = Set((bad.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(paths == ["other", "quietHours.start", "quietHours.end", "defaultTimezone"])
            // The tenant route shows the same quiet hours.
            let tenant = try await h.send("GET", "/v1/tenants/\(h.tenantID)", key: h.workspaceKey)
            #expect(tenant.data?["quietHours"] == ["start": "22:00", "end": "08:00"])
            #expect(tenant.data?["defaultTimezone"] == .null)
        }
    }

    /// The tenant object carries the default zone wherever it is answered, and its PATCH sets it as
    /// `PATCH /v1/settings` does: the database's zone names (Asia/Kolkata too), null removes it.
    @Test func tenantsCarryTheDefaultZone() async throws {
        try await withGateway { h in
            let set = try await h.send(
                "PATCH", "/v1/settings", key: h.tenantKey, body: ["defaultTimezone": "Asia/Kolkata"])
            #expect(set.status == 200 && set.data?["defaultTimezone"] == "Asia/Kolkata", "\(set.envelope)")
            let list = try await h.send("GET", "/v1/tenants", key: h.workspaceKey)
            let listed = (list.data?.arrayValue ?? []).first { $0["id"]?.stringValue == h.tenantID }
            #expect(listed?["defaultTimezone"] == "Asia/Kolkata")
            let patched = try await h.send(
                "PATCH", "/v1/tenants/\(h.tenantID)", key: h.workspaceKey, body: ["defaultTimezone": "Europe/Berlin"])
            #expect(patched.status == 200 && patched.data?["defaultTimezone"] == "Europe/Berlin", "\(patched.envelope)")
            #expect(
                try await h.send("GET", "/v1/settings", key: h.tenantKey).data?["defaultTimezone"] == "Europe/Berlin")
            let bad = try await h.send(
                "PATCH", "/v1/tenants/\(h.tenantID)", key: h.workspaceKey, body: ["defaultTimezone": "Mars/Base"])
            #expect(bad.status == 422 && bad.envelope.error?.details?.arrayValue?.first?["path"] == "defaultTimezone")
            let cleared = try await h.send(
                "PATCH", "/v1/tenants/\(h.tenantID)", key: h.workspaceKey, body: ["defaultTimezone": nil])
            #expect(cleared.status == 200 && cleared.data?["defaultTimezone"] == .null)
            let created = try await h.send(
                "POST", "/v1/tenants", key: h.workspaceKey, body: ["name": "Second", "defaultTimezone": "UTC"])
            #expect(created.status == 201 && created.data?["defaultTimezone"] == "UTC", "\(created.envelope)")
        }
    }

    @Test func dryRunSendsAndStoresNothing() async throws {
        try await withGateway { h in
            #expect(
                try await h.send("PUT", "/v1/workflows/leg-day", key: h.tenantKey, body: document(nudge)).status == 201)
            #expect(
                try await h.send(
                    "PATCH", "/v1/settings", key: h.tenantKey,
                    body: ["quietHours": ["start": "06:00", "end": "07:15"]]
                ).status == 200)
            let body: JSONValue = [
                "subscriber": ["id": "maya", "attributes": ["name": "Maya"], "timezone": "Europe/Berlin"],
                "event": ["data": ["workoutId": "w-9", "time": "6:00"]],
                "receipts": ["nudge": ["opened": false, "delivered": true]],
                "start": "2024-03-30T12:00:00Z"
            ]
            let run = try await h.send("POST", "/v1/workflows/leg-day/dry-run", key: h.tenantKey, body: body)
            #expect(run.status == 200, "\(run.envelope)")
            #expect(
                run.data?["triggerMatches"] == true && run.data?["status"] == "completed" && run.data?["version"] == 1)
            let timeline = run.data?["timeline"]?.arrayValue ?? []
            let sends = timeline.filter { $0["kind"] == "send" }
            #expect(sends.map { $0["step"] } == ["nudge", "again"])
            // 07:00 Berlin on the morning after spring forward is 05:00Z; quiet hours until 07:15 move it to 05:15Z.
            #expect(sends.first?["at"] == "2024-03-31T05:15:00.000Z")
            #expect(sends.first?["detail"]?["content"]?["title"] == "Leg day, Maya")
            #expect(sends.first?["detail"]?["content"]?["deepLink"] == "gym://workouts/w-9")
            let steps = run.data?["steps"]?.arrayValue ?? []
            #expect(steps.first { $0["step"] == "check" }?["decision"] == "else")

            // A real subscriber by id; an unknown one is refused.
            #expect(
                try await h.send(
                    "PUT", "/v1/subscribers/sam", key: h.tenantKey,
                    body: ["attributes": ["name": "Sam"], "timezone": "America/New_York"]
                ).status == 201)
            let real = try await h.send(
                "POST", "/v1/workflows/leg-day/dry-run", key: h.tenantKey,
                body: ["subscriber": "sam", "event": ["data": ["workoutId": "w-1"]], "start": "2024-06-01T00:00:00Z"])
            let first = real.data?["timeline"]?.arrayValue?.first { $0["kind"] == "send" }
            #expect(
                first?["detail"]?["content"]?["title"] == "Leg day, Sam" && first?["at"] == "2024-06-01T11:15:00.000Z")
            #expect(first?["detail"]?["missing"] == ["trigger.data.time"])
            let unknown = try await h.send(
                "POST", "/v1/workflows/leg-day/dry-run", key: h.tenantKey,
                body: ["subscriber": "nobody", "event": [:]])
            #expect(
                unknown.status == 404 && unknown.envelope.error?.details?.arrayValue?.first?["path"] == "subscriber")
            let invalid = try await h.send(
                "POST", "/v1/workflows/leg-day/dry-run", key: h.tenantKey,
                body: [
                    "subscriber": ["timezone": "Nowhere"], "event": ["data": 1], "start": "soon",
                    "receipts": ["nudge": ["seen": true]]
                ])
            let paths = Set((invalid.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue })
            #expect(paths == ["subscriber.timezone", "event.data", "start", "receipts.nudge.seen"], "\(paths)")
            let tooMany = try await h.send(
                "POST", "/v1/workflows/leg-day/dry-run", key: h.tenantKey,
                body: ["subscriber": "sam", "event": [:], "acknowledged": .array(Array(repeating: "nudge", count: 101))]
            )
            #expect(
                tooMany.status == 422 && tooMany.envelope.error?.details?.arrayValue?.first?["path"] == "acknowledged")
            let acknowledged = try await h.send(
                "POST", "/v1/workflows/leg-day/dry-run", key: h.tenantKey,
                body: ["subscriber": "sam", "event": [:], "acknowledged": ["nudge"]])
            #expect(acknowledged.status == 200)
            #expect(
                try await h.send(
                    "POST", "/v1/workflows/none/dry-run", key: h.tenantKey, body: ["subscriber": "sam", "event": [:]]
                ).status == 404)

            // Nothing was stored or sent.
            let messages = try await h.postgres.query("SELECT count(*) FROM messages")
            #expect(try messages.first?.decode(Int64.self, at: 0) == 0)
        }
    }
}
