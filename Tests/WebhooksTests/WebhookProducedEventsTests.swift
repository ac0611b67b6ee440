import BuzzKitHTTPClient
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The events the ledger and the workflow runs produce, end to end through the real services: a
/// send through apns-sender and the APNs simulator (`delivery.sent`, `delivery.failed`,
/// `message.completed`), Live Activity sends and the device's end through liveactivity and the
/// gateway (`live_activity.ended`), workflow runs through the workflow service
/// (`workflow_run.completed`, `.failed`, `.cancelled`), each received by a receiver that verifies
/// it with the `standardwebhooks` package and validates it against the API document. And a
/// replica stopped mid-send whose chunk another takes over: every outcome enqueued once.
@Suite("webhooks: the ledger's and the runs' events end to end", .serialized, .requiresTestStack)
struct WebhookProducedEventsTests {
    /// Every request verified with the endpoint's secret (index 0) and as the document says.
    static func expectSignedAndDocumented(_ requests: [JSONValue]) {
        for request in requests {
            #expect(request["verified_with"] == [0], "not verified by standardwebhooks: \(request)")
            #expect(request["schema_error"] == .null, "not as the document says: \(request)")
        }
    }

    /// The `data.deliveries` items of the `delivery.sent` requests received.
    static func sentItems(_ stack: WebhookStack) -> [JSONValue] {
        stack.received("delivery.sent").flatMap { $0["body"]?["data"]?["deliveries"]?.arrayValue ?? [] }
    }

    @Test("a send: each delivery sent (batched) or failed with APNs's reason, and the message's final counts, once")
    func aSendIsReported() async throws {
        try await withWebhookStack(apns: true) { stack in
            let simulator = try #require(stack.simulator)
            try await stack.startReceiver()
            try await stack.startWebhooks()
            try await stack.start("apns-sender")
            let endpoint = try await stack.createEndpoint(events: [
                "delivery.sent", "delivery.failed", "message.completed"
            ])
            try stack.receiverSecrets([endpoint.secret])
            let good = (0..<150).map { _ in APNsSimulator.deviceToken() }
            let gone = APNsSimulator.deviceToken()
            let bad = APNsSimulator.deviceToken()
            try await stack.addSubscribers(
                (0..<150).map { "s\($0)" } + ["gone", "bad"], tokens: good + [gone, bad], topic: "all")
            _ = try await simulator.post("unregister", ["token": .string(gone)])
            _ = try await simulator.post("bad-token", ["token": .string(bad)])
            let reply = try await stack.api("POST", "/v1/messages", body: ["topic": "all", "body": "hello"])
            let id = try #require(reply.data?["id"]?.stringValue, "\(reply.envelope)")
            #expect(try await stack.waitSettled(id)["status"] == "completed")

            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                Self.sentItems(stack).count >= 150 && stack.received("delivery.failed").count >= 2
                    && stack.received("message.completed").count >= 1
            }
            try #require(arrived, "received: \(stack.received().map { $0["type"] ?? .null })")
            try await Task.sleep(for: .seconds(1))  // anything more would be a duplicate
            Self.expectSignedAndDocumented(stack.received())

            // delivery.sent: every delivery APNs accepted, once, in batches of at most 100.
            let batches = stack.received("delivery.sent")
            #expect(batches.count >= 2)
            #expect(batches.allSatisfy { ($0["body"]?["data"]?["deliveries"]?.arrayValue?.count ?? 0) <= 100 })
            let items = Self.sentItems(stack)
            let sentIds = try await stack.postgres.query(
                "SELECT id::text FROM deliveries WHERE message_id = $1::uuid AND status = 'sent'",
                [UUID(uuidString: id)!]
            ).map { try $0.decode(String.self, at: 0) }
            #expect(items.count == 150 && Set(items.compactMap { $0["deliveryId"]?.stringValue }) == Set(sentIds))
            #expect(Set(items.compactMap { $0["deviceToken"]?.stringValue }) == Set(good))
            #expect(
                items.allSatisfy { $0["messageId"]?.stringValue == id.lowercased() && $0["environment"] == "sandbox" })

            // delivery.failed: the two invalid tokens, with APNs's status and reason.
            let failed = stack.received("delivery.failed").compactMap { $0["body"]?["data"] }
            #expect(failed.count == 2)
            let byToken = Dictionary(grouping: failed) { $0["deviceToken"]?.stringValue ?? "" }
            let unregistered = byToken[gone]?.first
            let badToken = byToken[bad]?.first
            #expect(unregistered?["status"] == "invalid_token" && unregistered?["invalidToken"] == true)
            #expect(unregistered?["reason"] == "Unregistered" && unregistered?["httpStatus"] == 410)
            #expect(unregistered?["subscriberId"] == "gone")
            #expect(badToken?["reason"] == "BadDeviceToken" && badToken?["httpStatus"] == 400)
            #expect(badToken?["invalidToken"] == true)

            // message.completed: once, with the final counts.
            let completed = stack.received("message.completed")
            #expect(completed.count == 1)
            let data = completed.first?["body"]?["data"]
            #expect(data?["messageId"]?.stringValue == id.lowercased())
            #expect(data?["status"] == "completed" && data?["kind"] == "push" && data?["error"] == .null)
            #expect(data?["counts"] == ["sent": 150, "failed": 0, "expired": 0, "invalidToken": 2, "total": 152])
        }
    }

    @Test("Live Activities: an end sent and an end on the device are each reported once; the sends are deliveries")
    func liveActivityEndsAreReported() async throws {
        try await withWebhookStack(apns: true) { stack in
            try await stack.startReceiver()
            try await stack.startWebhooks()
            try await stack.start("liveactivity")
            let endpoint = try await stack.createEndpoint(events: [
                "live_activity.ended", "delivery.sent", "message.completed"
            ])
            try stack.receiverSecrets([endpoint.secret])
            try await stack.addSubscribers(["fan"], tokens: [APNsSimulator.deviceToken()])
            for activity in ["match-1", "match-2"] {
                let registered = try await stack.api(
                    "PUT", "/v1/subscribers/fan/live-activities/\(activity)",
                    body: [
                        "attributesType": "MatchAttributes", "token": .string(APNsSimulator.deviceToken()),
                        "environment": "sandbox"
                    ])
                #expect((200..<300).contains(registered.status), "\(registered.envelope)")
            }
            func send(_ event: String, _ timestamp: Int) async throws -> JSONValue? {
                let reply = try await stack.api(
                    "POST", "/v1/live-activities/send",
                    body: [
                        "to": "fan", "event": .string(event), "activityId": "match-1", "contentState": ["score": 1],
                        "timestamp": .int(Int64(timestamp))
                    ])
                #expect(reply.status == 200, "\(reply.envelope)")
                return reply.data?["results"]?.arrayValue?.first?["status"]
            }
            #expect(try await send("update", 1_800_000_000) == "sent")
            #expect(try await send("end", 1_800_000_060) == "sent")
            // Ended already: skipped, nothing sent, nothing reported again.
            #expect(try await send("end", 1_800_000_120) == "activity_ended")
            let deleted = try await stack.api("DELETE", "/v1/subscribers/fan/live-activities/match-2")
            #expect(deleted.data?["ended"] == true, "\(deleted.envelope)")
            #expect(
                try await stack.api("DELETE", "/v1/subscribers/fan/live-activities/match-2").data?["ended"] == false)

            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                stack.received("live_activity.ended").count >= 2 && Self.sentItems(stack).count >= 2
                    && stack.received("message.completed").count >= 2
            }
            try #require(arrived, "received: \(stack.received().map { $0["type"] ?? .null })")
            try await Task.sleep(for: .seconds(1))
            Self.expectSignedAndDocumented(stack.received())
            let ended = stack.received("live_activity.ended").compactMap { $0["body"]?["data"] }
            #expect(ended.count == 2)
            let byActivity = Dictionary(grouping: ended) { $0["activityId"]?.stringValue ?? "" }
            #expect(byActivity["match-1"]?.first?["endedBy"] == "send")
            #expect(byActivity["match-2"]?.first?["endedBy"] == "device")
            #expect(ended.allSatisfy { $0["subscriberId"] == "fan" && $0["attributesType"] == "MatchAttributes" })
            // The update and the end pushes are deliveries of messages of kind live_activity.
            #expect(Self.sentItems(stack).count == 2)
            let completed = stack.received("message.completed").compactMap { $0["body"]?["data"] }
            #expect(completed.count == 2 && completed.allSatisfy { $0["kind"] == "live_activity" })
            #expect(completed.allSatisfy { $0["counts"]?["sent"] == 1 && $0["counts"]?["total"] == 1 })
        }
    }

    @Test("workflow runs: completed, cancelled and failed runs are each reported once; a throttled run is not")
    func workflowRunsAreReported() async throws {
        try await withWebhookStack { stack in
            try await stack.startReceiver()
            try await stack.startWebhooks()
            let endpoint = try await stack.createEndpoint(events: [
                "workflow_run.completed", "workflow_run.failed", "workflow_run.cancelled"
            ])
            try stack.receiverSecrets([endpoint.secret])
            let definitions: [String: String] = [
                "welcome":
                    #"{"trigger": {"event": "signed.up"}, "steps": [{"name": "hello", "send": {"title": "Hi", "body": "Welcome"}}]}"#,
                "later":
                    #"{"trigger": {"event": "trial.started"}, "steps": [{"name": "pause", "wait": {"duration": "1h"}}, {"name": "nudge", "send": {"title": "Hi", "body": "Still there?"}}]}"#,
                "capped":
                    #"{"trigger": {"event": "liked"}, "steps": [{"name": "cap", "throttle": {"limit": 1, "window": "1d"}}, {"name": "hello", "send": {"title": "Hi", "body": "A like"}}]}"#
            ]
            for (key, text) in definitions {
                let saved = try await stack.api("PUT", "/v1/workflows/\(key)", body: try JSONValue.parse(text))
                #expect((200..<300).contains(saved.status), "\(key): \(saved.envelope)")
            }
            try await stack.addSubscribers(
                ["ana", "ben", "temp"],
                tokens: [APNsSimulator.deviceToken(), APNsSimulator.deviceToken(), APNsSimulator.deviceToken()])
            func trigger(_ key: String, _ to: String) async throws -> String {
                let reply = try await stack.api("POST", "/v1/workflows/\(key)/trigger", body: ["to": .string(to)])
                return try #require(reply.data?["runId"]?.stringValue, "\(key): \(reply.envelope)")
            }
            let completed = try await trigger("welcome", "ana")
            let cancelled = try await trigger("later", "ben")
            let cappedRuns = [try await trigger("capped", "ana"), try await trigger("capped", "ana")]
            let failed = try await trigger("welcome", "temp")
            // temp's row is gone before any replica starts its run: it fails (subscriber_unknown). Gone
            // in SQL: DELETE /v1/subscribers/{id} erases the person, their pending run with them.
            try await stack.postgres.execute(
                "DELETE FROM subscribers WHERE tenant_id = $1::uuid AND id = 'temp'", [stack.tenantID])
            try await stack.start("workflow", settings: ["BUZZKIT_WORKFLOW_POLL_INTERVAL": "50ms"])
            let running = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.api("GET", "/v1/workflow-runs/\(cancelled)").data?["status"] == "running"
            }
            try #require(running)
            #expect(try await stack.api("POST", "/v1/workflow-runs/\(cancelled)/cancel").status == 202)

            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                stack.received().filter { $0["type"]?.stringValue?.hasPrefix("workflow_run.") == true }.count >= 4
            }
            try #require(arrived, "received: \(stack.received().map { $0["type"] ?? .null })")
            try await Task.sleep(for: .seconds(1.5))
            Self.expectSignedAndDocumented(stack.received())
            let events = stack.received().compactMap { $0["body"] }
            #expect(events.count == 4, "\(events)")
            let byRun = Dictionary(grouping: events) { $0["data"]?["runId"]?.stringValue ?? "" }
            #expect(byRun[completed]?.first?["type"] == "workflow_run.completed")
            #expect(byRun[completed]?.first?["data"]?["workflowKey"] == "welcome")
            #expect(byRun[cancelled]?.first?["type"] == "workflow_run.cancelled")
            #expect(byRun[cancelled]?.first?["data"]?["reason"]?.stringValue?.isEmpty == false)
            #expect(byRun[failed]?.first?["type"] == "workflow_run.failed")
            #expect(byRun[failed]?.first?["data"]?["failureCode"] == "subscriber_unknown")
            // Of the two capped runs one passed (completed) and one was throttled (not reported).
            let reported = cappedRuns.filter { byRun[$0] != nil }
            #expect(
                reported.count == 1 && reported.first.flatMap { byRun[$0]?.first?["type"] } == "workflow_run.completed")
            let statuses = try await cappedRuns.asyncMap {
                try await stack.api("GET", "/v1/workflow-runs/\($0)").data?["status"]?.stringValue ?? ""
            }
            #expect(statuses.sorted() == ["completed", "throttled"])
        }
    }

    @Test(
        "a replica stopped mid-send and its chunk taken over, then resumed: each outcome enqueued once, received once"
    )
    func aTakenOverChunkIsReportedOnce() async throws {
        let settings = [
            "BUZZKIT_SENDER_CLAIM_IDLE": "2s", "BUZZKIT_SENDER_RECLAIM_INTERVAL": "1s",
            "BUZZKIT_SENDER_STALE_SENDING": "3s", "BUZZKIT_SENDER_CHUNK_SIZE": "20", "BUZZKIT_SENDER_CONCURRENCY": "2"
        ]
        try await withWebhookStack(apns: true) { stack in
            let simulator = try #require(stack.simulator)
            let endpoint = try await stack.createEndpoint(events: [
                "delivery.sent", "delivery.failed", "message.completed"
            ])
            try stack.receiverSecrets([endpoint.secret])
            let good = (0..<60).map { _ in APNsSimulator.deviceToken() }
            let gone = APNsSimulator.deviceToken()
            try await stack.addSubscribers((0..<61).map { "s\($0)" }, tokens: good + [gone], topic: "all")
            _ = try await simulator.post("unregister", ["token": .string(gone)])
            // APNs answers late: replica a holds its chunks while its requests are out.
            _ = try await simulator.post("delay", ["ms": 4000])
            let a = try await stack.start("apns-sender", "sender-a", settings: settings)
            let reply = try await stack.api("POST", "/v1/messages", body: ["topic": "all", "body": "hello"])
            let id = try #require(reply.data?["id"]?.stringValue, "\(reply.envelope)")
            let holding = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await Self.held(stack, by: "sender-a") > 0
            }
            try #require(holding)
            let before = try await Self.recorded(stack, port: a.port)
            a.process.signal(SIGSTOP)
            let held = try await Self.held(stack, by: "sender-a")
            _ = try await simulator.post("delay", ["ms": 0])
            // b takes a's chunks over once stale, sends them again under the same apns-ids, records them.
            try await stack.start("apns-sender", "sender-b", settings: settings)
            #expect(try await stack.waitSettled(id)["status"] == "completed")
            let lost = try await stack.postgres.query(
                "SELECT count(*)::int FROM deliveries WHERE message_id = $1::uuid AND sending_by = 'sender-b' AND attempts::text LIKE '%sender-a%'",
                [UUID(uuidString: id)!])
            #expect(try lost[0].decode(Int.self, at: 0) > 0, "no delivery recorded with a's lost attempt")
            // a resumes, gets its answers and records its chunks: they exist, so nothing is written.
            a.process.signal(SIGCONT)
            let recordedByA = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                (try? await Self.recorded(stack, port: a.port)) ?? 0 >= before + held
            }
            #expect(recordedByA, "a never recorded its chunks: \(a.process.output.suffix(2000))")
            a.process.signal(SIGTERM)
            #expect(await a.process.waitForExit(timeout: .seconds(20)) == 0)

            // The outbox (no webhooks replica yet): each outcome once (delivery.sent in batch rows).
            let items = try await stack.postgres.query(
                """
                SELECT count(*)::int, count(DISTINCT i)::int
                FROM webhook_outbox, unnest(batch_delivery_ids) AS i WHERE event_type = 'delivery.sent'
                """)
            #expect(try items[0].decode(Int.self, at: 0) == 60 && items[0].decode(Int.self, at: 1) == 60)
            let rows = try await stack.postgres.query(
                """
                SELECT event_type, count(*)::int, count(DISTINCT event_id)::int FROM webhook_outbox
                WHERE event_type <> 'delivery.sent' GROUP BY 1
                """)
            var outbox: [String: (Int, Int)] = [:]
            for row in rows {
                outbox[try row.decode(String.self, at: 0)] = (
                    try row.decode(Int.self, at: 1), try row.decode(Int.self, at: 2)
                )
            }
            #expect(outbox["delivery.failed"].map { $0 == (1, 1) } == true, "\(outbox)")
            #expect(outbox["message.completed"].map { $0 == (1, 1) } == true, "\(outbox)")

            // And received once each.
            try await stack.startReceiver()
            try await stack.startWebhooks()
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                Self.sentItems(stack).count >= 60 && stack.received("delivery.failed").count >= 1
                    && stack.received("message.completed").count >= 1
            }
            try #require(arrived, "received: \(stack.received().map { $0["type"] ?? .null })")
            try await Task.sleep(for: .seconds(1))
            Self.expectSignedAndDocumented(stack.received())
            let ids = Self.sentItems(stack).compactMap { $0["deliveryId"]?.stringValue }
            #expect(ids.count == 60 && Set(ids).count == 60)
            #expect(stack.received("delivery.failed").count == 1 && stack.received("message.completed").count == 1)
            #expect(
                stack.received("message.completed").first?["body"]?["data"]?["counts"]
                    == ["sent": 60, "failed": 0, "expired": 0, "invalidToken": 1, "total": 61])
        }
    }

    // MARK: - Helpers

    /// Devices in chunks `replica` holds.
    static func held(_ stack: WebhookStack, by replica: String) async throws -> Int {
        let rows = try await stack.postgres.query(
            "SELECT coalesce(sum(cardinality(tokens)), 0)::int FROM delivery_chunks WHERE sending_by = $1", [replica])
        return try rows[0].decode(Int.self, at: 0)
    }

    /// A sender replica's `bk_sender_deliveries_total` (deliveries it recorded).
    static func recorded(_ stack: WebhookStack, port: Int) async throws -> Int {
        let response = try await stack.http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"))
        let text = String(decoding: response.body, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("bk_sender_deliveries_total ") {
            return Int(Double(line.split(separator: " ").last ?? "") ?? 0)
        }
        return 0
    }
}

extension Array {
    /// `map` with an async transform, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
