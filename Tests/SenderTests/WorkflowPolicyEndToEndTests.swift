import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The send policy in workflows (issue 26): the workflow service decides a send step's policy in
/// the transaction that writes its message, apns-sender applies that decision without deciding
/// again, and the run goes on knowing it. Real gateway, ingest, workflow service, apns-sender and
/// APNs simulator.
@Suite("Workflow sends and the send policy end to end", .serialized, .requiresTestStack)
struct WorkflowPolicyEndToEndTests {
    /// A stack with a sender, ingest and one workflow replica on a clock the test moves.
    func withStack(_ body: (PushStack, WorkflowClockFile) async throws -> Void) async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)
            try await body(stack, clock)
        }
    }

    static let offers = """
        {"trigger": {"event": "cart.abandoned"},
         "steps": [{"name": "offer", "send": {"title": "Still there?", "category": "offers", "policy": "ignore"}},
                   {"name": "check", "branch": {"if": {"suppressed": "offer"},
                      "then": [{"name": "plain", "send": {"title": "Your cart", "policy": "ignore"}}],
                      "else": [{"name": "done", "exit": {}}]}}]}
        """

    /// The step outcomes of the run as `GET /v1/workflow-runs/{id}` answers them, by step.
    func steps(_ stack: PushStack, run: String) async throws -> [String: JSONValue] {
        let reply = try await stack.api("GET", "/v1/workflow-runs/\(run)")
        #expect(reply.status == 200, "\(reply.envelope)")
        var byStep: [String: JSONValue] = [:]
        for step in reply.data?["steps"]?.arrayValue ?? [] {
            if let name = step["step"]?.stringValue { byStep[name] = step }
        }
        return byStep
    }

    @Test("a send step the policy suppresses is recorded, the run goes on and {suppressed} takes the then side")
    func suppressedStepGoesOn() async throws {
        try await withStack { stack, _ in
            #expect(try await stack.api("PUT", "/v1/categories/offers", body: ["name": "Offers"]).status == 201)
            #expect(
                try await stack.api("PATCH", "/v1/settings", body: ["frequencyCaps": [["limit": 5, "window": "1d"]]])
                    .status == 200)
            let token = PushStack.token()
            try await stack.addSubscriber("alice", tokens: [token])
            #expect(
                try await stack.api("PUT", "/v1/subscribers/alice/preferences", body: ["categories": ["offers": false]])
                    .status == 200)
            try await stack.putWorkflow("offers", Self.offers)
            try await stack.track("alice", [("e1", "cart.abandoned", [:])])
            let runs = try await stack.waitRuns("offers", count: 1) { $0.status == "completed" }
            let byStep = try await steps(stack, run: runs[0].id)
            #expect(byStep["offer"]?["decision"] == "suppressed", "\(byStep)")
            #expect(byStep["offer"]?["suppressed"] == "category_disabled")
            #expect(byStep["offer"]?["reason"]?.stringValue?.hasPrefix("suppressed: category_disabled") == true)
            #expect(byStep["check"]?["decision"] == "then")
            #expect(byStep["plain"]?["decision"] == "sent")

            // The message carries the decision; its delivery is suppressed and never reached APNs.
            let offer = try #require(byStep["offer"]?["messageIds"]?.arrayValue?.first?.stringValue)
            let row = try #require(
                try await stack.postgres.query(
                    "SELECT policy_decided_at IS NOT NULL, suppressed_reason FROM messages WHERE id = $1::uuid",
                    [offer]
                ).first)
            let (decided, reason) = try row.decode((Bool, String?).self)
            #expect(decided && reason == "category_disabled")
            _ = try await stack.waitSettled(offer)
            let deliveries = try await stack.deliveries(offer)
            #expect(deliveries.map { $0["status"] } == ["suppressed"])
            #expect(deliveries.first?["suppressedReason"] == "category_disabled")
            let pushes = try await stack.alerts(token, atLeast: 1)
            #expect(pushes.map { $0["aps"]?["alert"]?["title"] } == ["Your cart"])
            // Counted once, by the workflow service: the push let through; the suppressed one not.
            let plain = try #require(byStep["plain"]?["messageIds"]?.arrayValue?.first?.stringValue)
            let counted = try await stack.postgres.query(
                """
                SELECT array_agg(x::text) FROM frequency_cap_counters f, unnest(f.messages) AS x
                WHERE f.tenant_id = $1::uuid AND f.subscriber_id = 'alice'
                """, [stack.tenantID]
            ).first?.decode([String]?.self)
            #expect(counted == .some([plain]), "\(String(describing: counted))")
        }
    }

    @Test("policy drop inside quiet hours: a quiet_hours suppressed delivery, no APNs request, the run goes on")
    func dropInQuietHours() async throws {
        try await withStack { stack, clock in
            try await stack.postgres.execute(
                "UPDATE tenants SET quiet_hours_start = '22:00', quiet_hours_end = '08:00' WHERE id = $1::uuid",
                [stack.tenantID])
            clock.set(now: try #require(EventTimestamp.parse("2027-01-11T23:30:00Z")))
            let token = PushStack.token()
            try await stack.addSubscriber("bob", tokens: [token])
            try await stack.putWorkflow(
                "late",
                """
                {"trigger": {"event": "late.thing"},
                 "steps": [{"name": "ping", "send": {"title": "Late", "policy": "drop"}},
                           {"name": "check", "branch": {"if": {"suppressed": "ping"},
                              "then": [{"name": "gone", "exit": {}}]}}]}
                """)
            try await stack.track("bob", [("e1", "late.thing", [:])])
            let runs = try await stack.waitRuns("late", count: 1) { $0.status == "completed" }
            let byStep = try await steps(stack, run: runs[0].id)
            #expect(byStep["ping"]?["decision"] == "suppressed" && byStep["ping"]?["suppressed"] == "quiet_hours")
            #expect(byStep["check"]?["decision"] == "then" && byStep["gone"]?["decision"] == "exited")
            let message = try #require(byStep["ping"]?["messageIds"]?.arrayValue?.first?.stringValue)
            let settled = try await stack.waitSettled(message)
            #expect(settled["counts"]?["suppressed"] == 1, "\(settled)")
            #expect(try await stack.deliveries(message).first?["suppressedReason"] == "quiet_hours")
            #expect(try await stack.simulator.pushes(token: token).isEmpty)
        }
    }

    @Test(
        "due runs' uncategorized sends: the global opt-out read once per claim suppresses; a cap without a category still decides and counts"
    )
    func uncategorizedSendsOfDueRuns() async throws {
        try await withStack { stack, clock in
            let later = """
                {"trigger": {"event": "signed.up"},
                 "steps": [{"name": "pause", "wait": {"duration": "1h"}},
                           {"name": "ping", "send": {"title": "Hello again"}}]}
                """
            try await stack.putWorkflow("later", later)
            let tokens = ["carol": PushStack.token(), "dave": PushStack.token(), "erin": PushStack.token()]
            for (name, token) in tokens { try await stack.addSubscriber(name, tokens: [token]) }
            #expect(
                try await stack.api("PUT", "/v1/subscribers/carol/preferences", body: ["all": false]).status == 200)
            try await stack.track("carol", [("c1", "signed.up", [:])])
            try await stack.track("dave", [("d1", "signed.up", [:])])
            _ = try await stack.waitRuns("later", count: 2) { $0.dueAt != nil }
            // The runs wake in the workflow service's claim of due runs (RunWorker), not the event's.
            clock.advance(2 * 3600)
            let done = try await stack.waitRuns("later", count: 2) { $0.status == "completed" }
            var sent: [String: String] = [:]
            for run in done {
                let byStep = try await steps(stack, run: run.id)
                #expect(byStep["ping"]?["decision"] == (run.subscriber == "carol" ? "suppressed" : "sent"), "\(byStep)")
                if run.subscriber == "carol" { #expect(byStep["ping"]?["suppressed"] == "unsubscribed") }
                sent[run.subscriber] = byStep["ping"]?["messageIds"]?.arrayValue?.first?.stringValue
            }
            let carol = try #require(sent["carol"])
            _ = try await stack.waitSettled(carol)
            #expect(try await stack.deliveries(carol).first?["suppressedReason"] == "unsubscribed")
            #expect(try await stack.simulator.pushes(token: tokens["carol"]!).isEmpty)
            #expect(try await stack.alerts(tokens["dave"]!, atLeast: 1).count == 1)

            // With a cap that names no category, an uncategorized send is the decision statement's
            // again: counted against the cap.
            #expect(
                try await stack.api("PATCH", "/v1/settings", body: ["frequencyCaps": [["limit": 5, "window": "1d"]]])
                    .status == 200)
            try await stack.track("erin", [("e1", "signed.up", [:])])
            _ = try await stack.waitRuns("later", count: 3) { $0.subscriber != "erin" || $0.dueAt != nil }
            clock.advance(2 * 3600)
            let erin = try #require(
                try await stack.waitRuns("later", count: 3) { $0.status == "completed" }.first {
                    $0.subscriber == "erin"
                })
            let message = try #require(
                try await steps(stack, run: erin.id)["ping"]?["messageIds"]?.arrayValue?.first?.stringValue)
            let counted = try await stack.postgres.query(
                """
                SELECT array_agg(x::text) FROM frequency_cap_counters f, unnest(f.messages) AS x
                WHERE f.tenant_id = $1::uuid AND f.subscriber_id = 'erin'
                """, [stack.tenantID]
            ).first?.decode([String]?.self)
            #expect(counted == .some([message]), "\(String(describing: counted))")
        }
    }

    @Test("the dry run shows the policy's decision and counts nothing")
    func dryRunCountsNothing() async throws {
        try await withPushStack { stack in
            #expect(try await stack.api("PUT", "/v1/categories/offers", body: ["name": "Offers"]).status == 201)
            #expect(try await stack.api("PUT", "/v1/categories/news", body: ["name": "News"]).status == 201)
            #expect(
                try await stack.api("PATCH", "/v1/settings", body: ["frequencyCaps": [["limit": 1, "window": "1d"]]])
                    .status == 200)
            try await stack.addSubscriber("cid", tokens: [PushStack.token()])
            #expect(
                try await stack.api("PUT", "/v1/subscribers/cid/preferences", body: ["categories": ["offers": false]])
                    .status == 200)
            try await stack.putWorkflow(
                "offers",
                """
                {"trigger": {"event": "cart.abandoned"},
                 "steps": [{"name": "offer", "send": {"title": "Still there?", "category": "offers", "policy": "ignore"}},
                           {"name": "check", "branch": {"if": {"suppressed": "offer"},
                              "then": [{"name": "news", "send": {"title": "News", "category": "news", "policy": "ignore"}}]}}]}
                """)
            let counters = "SELECT count(*)::int FROM frequency_cap_counters WHERE tenant_id = $1::uuid"
            let before = try await stack.postgres.query(counters, [stack.tenantID]).first?.decode(Int.self)
            for _ in 0..<2 {
                let reply = try await stack.api(
                    "POST", "/v1/workflows/offers/dry-run", body: ["subscriber": "cid", "event": ["data": [:]]])
                #expect(reply.status == 200, "\(reply.envelope)")
                let steps = reply.data?["steps"]?.arrayValue ?? []
                #expect(steps.map { $0["decision"] } == ["suppressed", "then", "sent"], "\(steps)")
                #expect(steps.first?["suppressed"] == "category_disabled")
                let sends = (reply.data?["timeline"]?.arrayValue ?? []).filter { $0["kind"] == "send" }
                #expect(sends.first?["detail"]?["suppressed"] == "category_disabled")
            }
            // Both walks let the news send through under a cap of 1: nothing was counted.
            #expect(try await stack.postgres.query(counters, [stack.tenantID]).first?.decode(Int.self) == before)
        }
    }

    @Test(
        "{suppressed} naming a step that is not an earlier send step, and drop on a local send, are 422 at their path")
    func badInput() async throws {
        try await withPushStack { stack in
            func problems(_ text: String) async throws -> [String] {
                let reply = try await stack.api("PUT", "/v1/workflows/bad", body: try JSONValue.parse(text))
                #expect(reply.status == 422, "\(reply.envelope)")
                return (reply.envelope.error?.details?.arrayValue ?? []).compactMap { $0["path"]?.stringValue }
            }
            let later = try await problems(
                """
                {"trigger": {"event": "x"},
                 "steps": [{"name": "check", "branch": {"if": {"suppressed": "ping"}, "then": [{"name": "a", "exit": {}}]}},
                           {"name": "ping", "send": {"title": "Hi"}}]}
                """)
            #expect(later == ["steps[0].branch.if.suppressed"])
            let notSend = try await problems(
                """
                {"trigger": {"event": "x"},
                 "steps": [{"name": "pause", "wait": {"duration": "1h"}},
                           {"name": "check", "branch": {"if": {"not": {"suppressed": "pause"}}, "then": [{"name": "a", "exit": {}}]}}]}
                """)
            #expect(notSend == ["steps[1].branch.if.not.suppressed"])
            let local = try await problems(
                """
                {"trigger": {"event": "x"},
                 "steps": [{"name": "morning", "waitUntil": {"time": "09:00"}},
                           {"name": "ping", "send": {"title": "Hi", "deliver": "local", "policy": "drop"}}]}
                """)
            #expect(local == ["steps[1].send.policy"])
        }
    }
}
