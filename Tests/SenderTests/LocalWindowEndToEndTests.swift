import BuzzKit
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// Local windows (issue 16) end to end: definitions through the gateway, events through the
/// gateway and ingest onto `bk:events`, runs in the workflow service (a clock the test moves),
/// the plan, `bk.cancel` and the fallback through apns-sender to the APNs simulator, and the real
/// SDK core on the device side (platform fakes for UserNotifications), talking to the gateway.
@Suite("local windows end to end", .serialized, .requiresTestStack)
struct LocalWindowEndToEndTests {
    /// The workflow clock when the trigger arrives: 11:00 in Berlin on 10 January 2027 (CET).
    static let base = EventTimestamp.parse("2027-01-10T10:00:00Z")!
    /// The next 07:00 in Berlin: 06:00 UTC on 11 January.
    static let moment = EventTimestamp.parse("2027-01-11T06:00:00Z")!

    /// The seed's example: a waitUntil, then a local send; `workout.completed` (no where) is the
    /// device's to decide, `workout.moved` (a where) the server's.
    static let legDay = """
        {"trigger": {"event": "workout.scheduled"},
         "cancelOn": [{"event": "workout.completed"},
                      {"event": "workout.moved", "where": "event.data.workoutId == trigger.data.workoutId"}],
         "steps": [{"name": "morning-of", "waitUntil": {"time": "07:00", "timezone": "subscriber"}},
                   {"name": "nudge", "send": {"deliver": "local", "title": "Leg day",
                                              "body": "Workout {{ trigger.data.workoutId }} with Maya.",
                                              "deepLink": "gym://workouts/legs", "data": {"coach": "Maya"}}}]}
        """

    /// A stack with a sender, ingest and one workflow replica whose clock reads `base`.
    func withLocalStack(_ body: (PushStack, WorkflowClockFile) async throws -> Void) async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            clock.set(now: Self.base)
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)
            try await body(stack, clock)
        }
    }

    /// A subscriber in Berlin, with devices given by token (straight in SQL: no SDK answers there).
    func berliner(_ stack: PushStack, _ id: String, tokens: [String] = []) async throws {
        try await stack.addSubscriber(id, tokens: tokens)
        try await stack.postgres.execute(
            "UPDATE subscribers SET timezone = 'Europe/Berlin' WHERE tenant_id = $1::uuid AND id = $2",
            [stack.tenantID, id])
    }

    /// The pushes the simulator accepted for `token`, waiting until there are `count`.
    func pushes(_ stack: PushStack, _ token: String, atLeast count: Int) async throws -> [RecordedPush] {
        var pushes: [RecordedPush] = []
        let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
            pushes = try await stack.simulator.pushes(token: token).map(RecordedPush.init)
            return pushes.count >= count
        }
        guard arrived else {
            throw StackError(description: "\(token.prefix(8)) got \(pushes.count) pushes, not \(count)")
        }
        return pushes
    }

    /// After a pause in which nothing more may arrive: every push `token` got.
    func settledPushes(_ stack: PushStack, _ token: String) async throws -> [RecordedPush] {
        try await Task.sleep(for: .seconds(2))
        return try await stack.simulator.pushes(token: token).map(RecordedPush.init)
    }

    /// The step's outcome in a run's stored state.
    func outcome(
        _ run: (id: String, subscriber: String, status: String, state: JSONValue?, dueAt: Date?), _ step: String
    )
        -> JSONValue?
    {
        run.state?["outcomes"]?.arrayValue?.last { $0["step"]?.stringValue == step }
    }

    /// The silent push's headers are a background push's, as APNs requires for `content-available`.
    func expectSilent(_ push: RecordedPush, _ comment: Comment? = nil) {
        #expect(push.headers["apns-push-type"] == "background", comment)
        #expect(push.headers["apns-priority"] == "5", comment)
        #expect(push.headers["apns-topic"] == PushStack.bundleId, comment)
        #expect(push.isSilent, "aps holds only content-available: \(push.payload)")
    }

    @Test("the loop with the SDK: the plan is scheduled on the device and acknowledged; no fallback at the moment")
    func sdkLoop() async throws {
        try await withLocalStack { stack, clock in
            try await berliner(stack, "alice")
            let phone = try await SDKDevice.launch(on: stack, as: "alice")
            try await stack.putWorkflow("leg-day", Self.legDay)
            try await stack.track("alice", [("e1", "workout.scheduled", ["workoutId": "w1"])])
            let runs = try await stack.waitRuns("leg-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let runId = runs[0].id
            #expect(runs[0].dueAt == Self.moment)

            // At the start of the wait: one silent push carrying the plan.
            let plan = try #require(try await pushes(stack, phone.token, atLeast: 1).first)
            expectSilent(plan)
            let local = try #require(plan.payload["bk"]?["local"])
            #expect(local["id"] == .string("\(runId):nudge"))
            #expect(local["at"] == ["year": 2027, "month": 1, "day": 11, "hour": 7, "minute": 0])
            #expect(local["title"] == "Leg day" && local["body"] == "Workout w1 with Maya.")
            #expect(local["deepLink"] == "gym://workouts/legs" && local["data"] == ["coach": "Maya"])
            #expect(local["cancelOn"] == ["workout.completed"])
            let planMessage = try #require(local["messageId"]?.stringValue)
            #expect(plan.payload["bk"]?["messageId"] == .string(planMessage))
            let message = try await stack.api("GET", "/v1/messages/\(planMessage)")
            #expect(message.data?["kind"] == "local_plan" && message.data?["workflow"]?["step"] == "nudge")

            // iOS hands it to the app: the SDK schedules it, tracks $local.scheduled and flushes.
            #expect(await phone.receive(plan) == .newData)
            let scheduled = try #require(phone.scheduler.pending.first)
            #expect(phone.scheduler.pending.count == 1)
            #expect(
                scheduled.id == "\(runId):nudge"
                    && scheduled.fireAt == .init(year: 2027, month: 1, day: 11, hour: 7, minute: 0))
            #expect(scheduled.title == "Leg day" && scheduled.messageId == planMessage)
            try await stack.waitRuns("leg-day", count: 1) { $0.state?["localPlan"]?["acknowledged"] == true }

            clock.set(now: Self.moment.addingTimeInterval(1))
            let done = try await stack.waitRuns("leg-day", count: 1) { $0.status == "completed" }
            #expect(outcome(done[0], "nudge")?["decision"] == "scheduled_on_device")
            #expect(outcome(done[0], "nudge")?["messageIds"] == [.string(planMessage)])
            #expect(try await settledPushes(stack, phone.token).count == 1, "no fallback")
        }
    }

    @Test("no SDK answers: the fallback arrives at the moment with the same content, once, and the run says why")
    func fallbackWhenNoDeviceAnswers() async throws {
        try await withLocalStack { stack, clock in
            let token = PushStack.token()
            try await berliner(stack, "bob", tokens: [token])
            try await stack.putWorkflow("leg-day", Self.legDay)
            try await stack.track("bob", [("e1", "workout.scheduled", ["workoutId": "w7"])])
            let runs = try await stack.waitRuns("leg-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let plan = try #require(try await pushes(stack, token, atLeast: 1).first)
            expectSilent(plan)
            #expect(try await settledPushes(stack, token).count == 1, "nothing but the plan before the moment")

            clock.set(now: Self.moment.addingTimeInterval(1))
            let done = try await stack.waitRuns("leg-day", count: 1) { $0.status == "completed" }
            let all = try await pushes(stack, token, atLeast: 2)
            let fallback = all[1]
            #expect(fallback.headers["apns-push-type"] == "alert" && fallback.headers["apns-priority"] == "10")
            #expect(fallback.payload["aps"]?["alert"] == ["title": "Leg day", "body": "Workout w7 with Maya."])
            #expect(fallback.payload["bk"]?["deepLink"] == "gym://workouts/legs")
            #expect(fallback.payload["bk"]?["data"] == ["coach": "Maya"])
            let nudge = try #require(outcome(done[0], "nudge"))
            #expect(nudge["decision"] == "fallback_sent")
            let ids = nudge["messageIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(ids.count == 2 && fallback.payload["bk"]?["messageId"] == .string(ids[1]))
            #expect(ids.first == plan.payload["bk"]?["local"]?["messageId"]?.stringValue)
            // The API shows why.
            let run = try await stack.api("GET", "/v1/workflow-runs/\(runs[0].id)")
            let step = run.data?["steps"]?.arrayValue?.first { $0["step"] == "nudge" }
            #expect(step?["decision"] == "fallback_sent")
            #expect(
                step?["reason"]?.stringValue?.contains("no device confirmed") == true, "\(String(describing: step))")
            let kinds = try await stack.postgres.query(
                "SELECT kind FROM messages WHERE workflow_key = 'leg-day' ORDER BY created_at"
            ).map { try $0.decode(String.self, at: 0) }
            #expect(kinds == ["local_plan", "push"])
            clock.advance(86_400)
            #expect(try await settledPushes(stack, token).count == 2, "the fallback once")
        }
    }

    @Test("two devices, one acknowledges: the subscriber is acknowledged, neither device gets a fallback")
    func twoDevicesOneAcknowledges() async throws {
        try await withLocalStack { stack, clock in
            let tablet = PushStack.token()
            try await berliner(stack, "carol", tokens: [tablet])
            let phone = try await SDKDevice.launch(on: stack, as: "carol")
            try await stack.putWorkflow("leg-day", Self.legDay)
            try await stack.track("carol", [("e1", "workout.scheduled", ["workoutId": "w2"])])
            try await stack.waitRuns("leg-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let onPhone = try #require(try await pushes(stack, phone.token, atLeast: 1).first)
            let onTablet = try #require(try await pushes(stack, tablet, atLeast: 1).first)
            expectSilent(onTablet, "the plan goes to every active device")
            #expect(onTablet.payload["bk"]?["local"] == onPhone.payload["bk"]?["local"])
            #expect(await phone.receive(onPhone) == .newData)
            try await stack.waitRuns("leg-day", count: 1) { $0.state?["localPlan"]?["acknowledged"] == true }
            clock.set(now: Self.moment.addingTimeInterval(1))
            let done = try await stack.waitRuns("leg-day", count: 1) { $0.status == "completed" }
            #expect(outcome(done[0], "nudge")?["decision"] == "scheduled_on_device")
            #expect(try await settledPushes(stack, phone.token).count == 1)
            #expect(try await settledPushes(stack, tablet).count == 1)
        }
    }

    @Test("quiet hours shift the plan's moment: the device fires at the window's end, the fallback waits for it")
    func quietHoursShiftThePlan() async throws {
        try await withLocalStack { stack, clock in
            try await stack.postgres.execute(
                "UPDATE tenants SET quiet_hours_start = '22:00', quiet_hours_end = '08:00' WHERE id = $1::uuid",
                [stack.tenantID])
            let token = PushStack.token()
            try await berliner(stack, "dan", tokens: [token])
            try await stack.putWorkflow("leg-day", Self.legDay)
            try await stack.track("dan", [("e1", "workout.scheduled", ["workoutId": "w3"])])
            let runs = try await stack.waitRuns("leg-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let shifted = Self.moment.addingTimeInterval(3600)  // 08:00 in Berlin
            #expect(runs[0].dueAt == shifted)
            #expect(outcome(runs[0], "morning-of")?["shiftedFrom"] != nil)
            let plan = try #require(try await pushes(stack, token, atLeast: 1).first)
            #expect(
                plan.payload["bk"]?["local"]?["at"] == ["year": 2027, "month": 1, "day": 11, "hour": 8, "minute": 0])
            clock.set(now: Self.moment.addingTimeInterval(60))  // 07:01: still quiet, nothing yet
            #expect(try await settledPushes(stack, token).count == 1)
            clock.set(now: shifted.addingTimeInterval(1))
            try await stack.waitRuns("leg-day", count: 1) { $0.status == "completed" }
            #expect(try await pushes(stack, token, atLeast: 2).count == 2)
        }
    }

    @Test("across both DST changes in the subscriber's zone the plan carries the local wall clock")
    func dstWindows() async throws {
        try await withLocalStack { stack, clock in
            let token = PushStack.token()
            try await berliner(stack, "erin", tokens: [token])
            try await stack.putWorkflow("leg-day", Self.legDay)
            // Spring forward (29 March 2026, 02:00 CET -> 03:00 CEST): 07:00 is 05:00 UTC.
            // Fall back (25 October 2026, 03:00 CEST -> 02:00 CET): 07:00 is 06:00 UTC.
            let cases: [(trigger: String, start: String, due: String, day: (Int64, Int64))] = [
                ("spring", "2026-03-28T12:00:00Z", "2026-03-29T05:00:00Z", (3, 29)),
                ("fall", "2026-10-24T12:00:00Z", "2026-10-25T06:00:00Z", (10, 25))
            ]
            for (n, c) in cases.enumerated() {
                clock.set(now: EventTimestamp.parse(c.start)!)
                try await Task.sleep(for: .milliseconds(200))
                try await stack.track("erin", [(c.trigger, "workout.scheduled", ["workoutId": .string(c.trigger)])])
                let runs = try await stack.waitRuns("leg-day", count: n + 1) {
                    $0.dueAt != nil || $0.status != "running"
                }
                #expect(runs.last?.dueAt == EventTimestamp.parse(c.due))
                let plan = try await pushes(stack, token, atLeast: 2 * n + 1)[2 * n]
                #expect(
                    plan.payload["bk"]?["local"]?["at"] == [
                        "year": 2026, "month": .int(c.day.0), "day": .int(c.day.1), "hour": 7, "minute": 0
                    ])
                clock.set(now: EventTimestamp.parse(c.due)!.addingTimeInterval(1))
                try await stack.waitRuns("leg-day", count: n + 1) { $0.status == "completed" }
                let fallback = try await pushes(stack, token, atLeast: 2 * n + 2)[2 * n + 1]
                #expect(fallback.payload["aps"]?["alert"]?["body"] == .string("Workout \(c.trigger) with Maya."))
            }
        }
    }

    @Test(
        "cancel mid-window (route, DELETE of the workflow): bk.cancel once, the SDK removes the run's notifications"
    )
    func centralCancel() async throws {
        try await withLocalStack { stack, clock in
            try await berliner(stack, "fay")
            let phone = try await SDKDevice.launch(on: stack, as: "fay")
            let other = PushStack.token()
            try await berliner(stack, "gus", tokens: [other])
            try await stack.putWorkflow("leg-day", Self.legDay)
            try await stack.putWorkflow(
                "arm-day", Self.legDay.replacingOccurrences(of: "workout.scheduled", with: "arms.scheduled"))
            try await stack.track("fay", [("e1", "workout.scheduled", ["workoutId": "w1"])])
            try await stack.track("gus", [("e2", "arms.scheduled", ["workoutId": "a1"])])
            let runs = try await stack.waitRuns("leg-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            try await stack.waitRuns("arm-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let runId = runs[0].id
            let plan = try #require(try await pushes(stack, phone.token, atLeast: 1).first)
            #expect(await phone.receive(plan) == .newData)
            // Another notification of the same run and one of another run, already on the device.
            try await phone.scheduler.schedule(
                LocalNotificationRequest(
                    id: "\(runId):later", fireAt: .init(year: 2027, month: 1, day: 12, hour: 7, minute: 0),
                    title: "Later", body: nil, payload: PushPayload(aps: .init(), bk: .init())))
            try await phone.scheduler.schedule(
                LocalNotificationRequest(
                    id: "someone-else:nudge", fireAt: .init(year: 2027, month: 1, day: 12, hour: 7, minute: 0),
                    title: "Other", body: nil, payload: PushPayload(aps: .init(), bk: .init())))
            #expect(phone.scheduler.pending.count == 3)

            let cancel = try await stack.api("POST", "/v1/workflow-runs/\(runId)/cancel")
            #expect(cancel.status == 202, "\(cancel.envelope)")
            try await stack.waitRuns("leg-day", count: 1) { $0.status == "cancelled" }
            let both = try await pushes(stack, phone.token, atLeast: 2)
            let bkCancel = both[1]
            expectSilent(bkCancel)
            #expect(bkCancel.payload["bk"]?["cancel"] == ["runId": .string(runId)])
            #expect(await phone.receive(bkCancel) == .newData)
            #expect(phone.scheduler.pending.map(\.id) == ["someone-else:nudge"])

            let deleted = try await stack.api("DELETE", "/v1/workflows/arm-day")
            #expect(deleted.status == 200, "\(deleted.envelope)")
            let armRuns = try await stack.waitRuns("arm-day", count: 1) { $0.status == "cancelled" }
            let gusPushes = try await pushes(stack, other, atLeast: 2)
            #expect(gusPushes[1].payload["bk"]?["cancel"] == ["runId": .string(armRuns[0].id)])

            clock.set(now: Self.moment.addingTimeInterval(1))
            #expect(try await settledPushes(stack, phone.token).count == 2, "bk.cancel once, no fallback")
            #expect(try await settledPushes(stack, other).count == 2)
        }
    }

    @Test(
        "a cancelOn tracked offline removes it on the device; the server stops the run when the event arrives"
    )
    func cancelOnTrackedOffline() async throws {
        try await withLocalStack { stack, clock in
            try await berliner(stack, "hal")
            let phone = try await SDKDevice.launch(on: stack, as: "hal")
            try await stack.putWorkflow("leg-day", Self.legDay)
            try await stack.track("hal", [("e1", "workout.scheduled", ["workoutId": "w1"])])
            try await stack.waitRuns("leg-day", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let plan = try #require(try await pushes(stack, phone.token, atLeast: 1).first)
            #expect(await phone.receive(plan) == .newData)
            try await stack.waitRuns("leg-day", count: 1) { $0.state?["localPlan"]?["acknowledged"] == true }

            phone.network.online = false
            phone.client.track("workout.completed")
            let removed = try await RedisTestSupport.eventually(limit: .seconds(10)) {
                phone.scheduler.pending.isEmpty
            }
            #expect(removed, "removed on the device at once, with no network")
            try await Task.sleep(for: .seconds(1))
            #expect(try await stack.runs("leg-day").first?.status == "running", "the server has not heard yet")

            phone.network.online = true
            await phone.client.flushEvents()
            let cancelled = try await stack.waitRuns("leg-day", count: 1) { $0.status == "cancelled" }
            #expect(cancelled[0].state?["cancelReason"] == "cancelOn[0]: workout.completed")
            clock.set(now: Self.moment.addingTimeInterval(1))
            #expect(try await settledPushes(stack, phone.token).count == 1, "no bk.cancel, no fallback")
        }
    }

    @Test("kill -9 of the workflow service between the plan and the moment: exactly one fallback per run")
    func killBetweenPlanAndMoment() async throws {
        try await withPushStack { stack in
            let clock = WorkflowClockFile()
            clock.set(now: Self.base)
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            let first = try await stack.startWorkflow(clock: clock)
            try await stack.putWorkflow("leg-day", Self.legDay)
            var tokens: [String] = []
            for i in 0..<10 {
                let token = PushStack.token()
                tokens.append(token)
                try await berliner(stack, "k\(i)", tokens: [token])
                try await stack.track("k\(i)", [("e\(i)", "workout.scheduled", ["workoutId": .string("w\(i)")])])
            }
            try await stack.waitRuns("leg-day", count: 10) { $0.status == "running" && $0.dueAt != nil }
            for token in tokens { _ = try await pushes(stack, token, atLeast: 1) }
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(10))
            _ = try await stack.startWorkflow(clock: clock)
            _ = try await stack.startWorkflow(clock: clock)
            clock.set(now: Self.moment.addingTimeInterval(1))
            let done = try await stack.waitRuns("leg-day", count: 10, limit: .seconds(60)) { $0.status == "completed" }
            #expect(done.allSatisfy { outcome($0, "nudge")?["decision"] == "fallback_sent" })
            for token in tokens { _ = try await pushes(stack, token, atLeast: 2) }
            for token in tokens {
                let all = try await settledPushes(stack, token)
                #expect(all.count == 2 && all.filter(\.isSilent).count == 1, "token \(token.prefix(8)): \(all.count)")
            }
            let kinds = try await stack.postgres.query(
                "SELECT kind, count(*)::int FROM messages WHERE workflow_key = 'leg-day' GROUP BY kind ORDER BY kind"
            ).map { try $0.decode((String, Int).self) }
            #expect(kinds.map(\.0) == ["local_plan", "push"] && kinds.map(\.1) == [10, 10])
        }
    }

    @Test("opens of the local notification or of the fallback count for {opened: step}; a dry run sends nothing")
    func opensCountForTheStep() async throws {
        try await withLocalStack { stack, clock in
            let definition = """
                {"trigger": {"event": "workout.scheduled"},
                 "steps": [{"name": "morning-of", "waitUntil": {"time": "07:00", "timezone": "subscriber"}},
                           {"name": "nudge", "send": {"deliver": "local", "title": "Leg day", "body": "Go"}},
                           {"name": "later", "wait": {"duration": "1h"}},
                           {"name": "check", "branch": {"if": {"opened": "nudge"},
                              "then": [{"name": "thanks", "send": {"body": "Nice work", "policy": "ignore"}}],
                              "else": [{"name": "again", "send": {"body": "Missed you", "policy": "ignore"}}]}}]}
                """
            for id in ["ivy", "jon", "kim"] { try await berliner(stack, id) }
            let ivy = try await SDKDevice.launch(on: stack, as: "ivy")  // acknowledges, opens the local one
            let jon = try await SDKDevice.launch(on: stack, as: "jon")  // force-quit: opens the fallback
            let kim = PushStack.token()  // opens nothing
            try await stack.addSubscriber("kim", tokens: [kim])
            try await stack.putWorkflow("opens", definition)

            // A dry run shows the window and sends nothing.
            let dry = try await stack.api(
                "POST", "/v1/workflows/opens/dry-run", body: ["subscriber": "ivy", "event": ["data": [:]]])
            #expect(dry.status == 200, "\(dry.envelope)")
            let kinds = dry.data?["timeline"]?.arrayValue?.compactMap { $0["kind"]?.stringValue } ?? []
            #expect(kinds.contains("plan") && kinds.contains("acknowledgement") && kinds.contains("send"))
            try await Task.sleep(for: .seconds(1))
            #expect(try await stack.postgres.query("SELECT 1 FROM messages").isEmpty)
            #expect(try await stack.runs("opens").isEmpty)

            for (n, id) in ["ivy", "jon", "kim"].enumerated() {
                try await stack.track(id, [("t\(n)", "workout.scheduled", [:])])
            }
            try await stack.waitRuns("opens", count: 3) { $0.status == "running" && $0.dueAt != nil }
            let ivyPlan = try #require(try await pushes(stack, ivy.token, atLeast: 1).first)
            #expect(await ivy.receive(ivyPlan) == .newData)
            _ = try await pushes(stack, jon.token, atLeast: 1)  // never handed over
            try await stack.waitRuns("opens", count: 1) { $0.state?["localPlan"]?["acknowledged"] == true }

            clock.set(now: Self.moment.addingTimeInterval(1))
            try await stack.waitRuns("opens", count: 3) { $0.state?["current"] == "later" }
            // Ivy taps the notification the device scheduled; jon taps the fallback push.
            let local = try #require(ivy.scheduler.pending.first)
            await ivy.open(try JSONValue.parse(local.payload.encode()))
            let fallback = try #require(try await pushes(stack, jon.token, atLeast: 2).last)
            await jon.open(fallback.payload)
            let planId = try #require(local.messageId)
            let fallbackId = try #require(fallback.payload["bk"]?["messageId"]?.stringValue)
            let stored = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.postgres.query(
                    "SELECT 1 FROM message_receipts WHERE message_id = ANY($1) AND kind = 'opened'",
                    [[planId, fallbackId]]
                ).count == 2
            }
            #expect(stored)

            clock.advance(3601)
            let done = try await stack.waitRuns("opens", count: 3) { $0.status == "completed" }
            let decisions = Dictionary(
                uniqueKeysWithValues: done.map { ($0.subscriber, outcome($0, "check")?["decision"]) })
            #expect(decisions["ivy"] == "then" && decisions["jon"] == "then" && decisions["kim"] == "else")
        }
    }
}
