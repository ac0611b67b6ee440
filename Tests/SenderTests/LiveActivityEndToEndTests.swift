import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

extension PushStack {
    /// Starts one liveactivity replica (the sender's APNs settings: the simulator).
    func startLiveActivity(_ instance: String = TestEnvironment.uniqueName("la"), settings: [String: String] = [:])
        async throws
        -> ServiceProcess
    {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "liveactivity",
            environment: senderEnvironment.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INSTANCE_ID": instance
            ]) { _, new in new }.merging(settings) { _, new in new })
        senders.withLock { $0.append(process) }
        let ready = try await RedisTestSupport.eventually(limit: .seconds(30)) {
            guard process.isRunning else { return true }
            return (try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz")))?.status == 200
        }
        guard ready, process.isRunning else {
            throw StackError(description: "liveactivity did not become ready: \(process.output)")
        }
        return process
    }

    func registerActivity(_ subscriber: String, _ activity: String, token: String) async throws {
        let reply = try await api(
            "PUT", "/v1/subscribers/\(subscriber)/live-activities/\(activity)",
            body: ["attributesType": "MatchAttributes", "token": .string(token), "environment": "sandbox"])
        guard (200..<300).contains(reply.status) else {
            throw StackError(description: "register: \(reply.status) \(reply.envelope)")
        }
    }

    func registerStartToken(_ subscriber: String, token: String) async throws {
        let reply = try await api(
            "PUT", "/v1/subscribers/\(subscriber)/live-activity-start-tokens/MatchAttributes",
            body: ["token": .string(token), "environment": "sandbox"])
        guard (200..<300).contains(reply.status) else {
            throw StackError(description: "register: \(reply.status) \(reply.envelope)")
        }
    }

    func sendLiveActivity(_ body: JSONValue, headers: [String: String] = [:]) async throws -> Reply {
        try await api("POST", "/v1/live-activities/send", body: body, headers: headers)
    }

    /// The `aps` object of the `index`th push the simulator accepted for `token`.
    func aps(_ token: String, _ index: Int = 0) async throws -> JSONValue? {
        let pushes = try await simulator.pushes(token: token)
        guard index < pushes.count else { return nil }
        return try JSONValue.parse(Array((pushes[index]["payload"]?.stringValue ?? "").utf8))["aps"]
    }
}

/// Live Activities end to end: the gateway, a liveactivity replica, the APNs simulator and the
/// ledger, all real processes on a private schema and Redis.
@Suite("Live Activities end to end", .serialized, .requiresTestStack)
struct LiveActivityEndToEndTests {
    @Test func startUpdateAndEndCarryExactlyTheHeadersAndPayloadAPNsExpects() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            let startToken = PushStack.token()
            let activityToken = PushStack.token()
            try await stack.registerStartToken("fan", token: startToken)

            let started = try await stack.sendLiveActivity([
                "to": "fan", "event": "start", "attributesType": "MatchAttributes", "attributes": ["matchId": "m_1"],
                "contentState": ["score": 0],
                "alert": ["title": "Kick-off", "body": "The match started", "sound": "default"],
                "timestamp": 1_800_000_000
            ])
            #expect(started.status == 200, "\(started.envelope)")
            let startResults = started.data?["results"]?.arrayValue ?? []
            #expect(startResults.count == 1)
            #expect(startResults.first?["status"] == "sent" && startResults.first?["apnsStatus"] == 200)
            #expect(
                startResults.first?["attributesType"] == "MatchAttributes"
                    && startResults.first?["token"] == .string(startToken))
            let startPush = try #require(try await stack.simulator.pushes(token: startToken).first)
            #expect(startPush["pushType"] == "liveactivity")
            #expect(startPush["topic"] == .string(PushStack.bundleId + ".push-type.liveactivity"))
            #expect(startPush["priority"] == 10)
            #expect(startPush["headers"]?["apns-push-type"] == "liveactivity")
            #expect(
                startPush["apnsId"]?.stringValue?.lowercased()
                    == startResults.first?["apnsId"]?.stringValue?.lowercased())
            #expect(
                try await stack.aps(startToken) == [
                    "timestamp": 1_800_000_000, "event": "start", "content-state": ["score": 0],
                    "attributes-type": "MatchAttributes", "attributes": ["matchId": "m_1"], "input-push-token": 1,
                    "alert": ["title": "Kick-off", "body": "The match started", "sound": "default"]
                ])

            // The new activity reports its token (the SDK does this); then update and end it.
            try await stack.registerActivity("fan", "act-1", token: activityToken)
            let updated = try await stack.sendLiveActivity([
                "to": "fan", "event": "update", "activityId": "act-1", "contentState": ["score": 1],
                "priority": "normal",
                "staleDate": "2027-01-15T12:00:00Z", "timestamp": 1_800_000_060
            ])
            #expect(updated.status == 200, "\(updated.envelope)")
            #expect(updated.data?["results"]?.arrayValue?.first?["status"] == "sent")
            #expect(updated.data?["results"]?.arrayValue?.first?["activityId"] == "act-1")
            let updatePush = try #require(try await stack.simulator.pushes(token: activityToken).first)
            #expect(updatePush["pushType"] == "liveactivity" && updatePush["priority"] == 5)
            #expect(updatePush["topic"] == .string(PushStack.bundleId + ".push-type.liveactivity"))
            #expect(
                try await stack.aps(activityToken) == [
                    "timestamp": 1_800_000_060, "event": "update", "content-state": ["score": 1],
                    "stale-date": 1_800_014_400
                ])

            let ended = try await stack.sendLiveActivity([
                "to": "fan", "event": "end", "activityId": "act-1", "contentState": ["score": 3],
                "dismissalDate": "2027-01-15T13:00:00+01:00", "timestamp": 1_800_000_120,
                "alert": ["title": "Full time", "body": "3-1"]
            ])
            #expect(ended.data?["results"]?.arrayValue?.first?["status"] == "sent", "\(ended.envelope)")
            #expect(
                try await stack.aps(activityToken, 1) == [
                    "timestamp": 1_800_000_120, "event": "end", "content-state": ["score": 3],
                    "dismissal-date": 1_800_014_400,
                    "alert": ["title": "Full time", "body": "3-1"]
                ])
            let registry = try await stack.api("GET", "/v1/subscribers/fan/live-activities")
            let row = registry.data?.arrayValue?.first
            #expect(row?["state"] == "ended" && row?["endedBy"] == "send" && row?["lastEvent"] == "end")
            #expect(row?["lastTimestamp"] == 1_800_000_120)

            // The ledger: a message that says it is a Live Activity send, its delivery and the attempt as sent.
            let messageId = try #require(ended.data?["messageId"]?.stringValue)
            let message = try await stack.api("GET", "/v1/messages/\(messageId)")
            #expect(message.data?["content"]?["liveActivity"]?["event"] == "end")
            let deliveryId = try #require(ended.data?["results"]?.arrayValue?.first?["deliveryId"]?.stringValue)
            let delivery = try await stack.api("GET", "/v1/deliveries/\(deliveryId)")
            #expect(
                delivery.data?["delivery"]?["status"] == "sent"
                    && delivery.data?["delivery"]?["deviceToken"] == .string(activityToken))
            let attempt = delivery.data?["attempts"]?.arrayValue?.first
            #expect(attempt?["status"] == 200)
            // Every attempt carries when it went out, a Live Activity update's as a push's.
            let at = try #require(attempt?["at"]?.stringValue.flatMap(PushEndToEndTests.date), "\(attempt ?? .null)")
            #expect(abs(at.timeIntervalSinceNow) < 120, "\(at)")
            // Written once, with its outcome: the message is done.
            #expect(message.data?["status"] == "completed" && message.data?["pending"] == 0, "\(message.envelope)")
            #expect(message.data?["completedAt"]?.stringValue != nil)
            #expect(attempt?["headers"]?["apns-push-type"] == "liveactivity")
            #expect(attempt?["headers"]?["apns-topic"] == .string(PushStack.bundleId + ".push-type.liveactivity"))
            let sentPayload = try JSONValue.parse(Array((attempt?["payload"]?.stringValue ?? "").utf8))
            #expect(sentPayload["aps"]?["event"] == "end")
            let kinds = try await stack.postgres.query("SELECT kind FROM messages WHERE id = $1::uuid", [messageId])
            #expect(try kinds.first?.decode(String.self, at: 0) == "live_activity")
        }
    }

    @Test func aRotationMidActivityReachesOnlyTheNewToken() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            let old = PushStack.token()
            let new = PushStack.token()
            try await stack.registerActivity("rot", "act", token: old)
            let first = try await stack.sendLiveActivity([
                "to": "rot", "event": "update", "activityId": "act", "contentState": ["n": 1]
            ])
            #expect(first.data?["results"]?.arrayValue?.first?["token"] == .string(old))
            try await stack.registerActivity("rot", "act", token: new)
            let second = try await stack.sendLiveActivity([
                "to": "rot", "event": "update", "activityId": "act", "contentState": ["n": 2]
            ])
            #expect(second.data?["results"]?.arrayValue?.map { $0["token"] } == [.string(new)])
            #expect(try await stack.simulator.pushes(token: old).count == 1)
            #expect(try await stack.simulator.pushes(token: new).count == 1)
            #expect(try await stack.aps(new)?["content-state"] == ["n": 2])
        }
    }

    @Test func pushToStartReachesEveryDeviceOfTheSubscriber() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            let a = PushStack.token()
            let b = PushStack.token()
            try await stack.registerStartToken("two", token: a)
            try await stack.registerStartToken("two", token: b)
            let reply = try await stack.sendLiveActivity([
                "to": "two", "event": "start", "attributesType": "MatchAttributes", "contentState": ["score": 0],
                "alert": ["title": "Starting"]
            ])
            let results = reply.data?["results"]?.arrayValue ?? []
            #expect(Set(results.compactMap { $0["token"]?.stringValue }) == [a, b], "\(reply.envelope)")
            #expect(results.allSatisfy { $0["status"] == "sent" && $0["deliveryId"]?.stringValue != nil })
            for token in [a, b] {
                #expect(try await stack.simulator.pushes(token: token).count == 1)
                #expect(try await stack.aps(token)?["input-push-token"] == 1)
            }
            // Nothing registered: 404 for start, update and end (each with its own code), never a silent success.
            let none = try await stack.sendLiveActivity([
                "to": "nobody", "event": "start", "attributesType": "MatchAttributes", "contentState": [:],
                "alert": ["title": "x"]
            ])
            #expect(none.status == 404 && none.envelope.error?.code.rawValue == "no_push_to_start_token")
            let missing = try await stack.sendLiveActivity([
                "to": "two", "event": "update", "activityId": "nope", "contentState": [:]
            ])
            #expect(missing.status == 404 && missing.envelope.error?.code.rawValue == "live_activity_not_found")
        }
    }

    @Test func aRefusedTokenIsInTheReplyThenSkipped() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            let token = PushStack.token()
            try await stack.registerActivity("gone", "act", token: token)
            _ = try await stack.simulator.post("unregister", ["token": .string(token)])
            let refused = try await stack.sendLiveActivity([
                "to": "gone", "event": "update", "activityId": "act", "contentState": [:]
            ])
            let result = refused.data?["results"]?.arrayValue?.first
            #expect(result?["status"] == "invalid_token" && result?["apnsStatus"] == 410, "\(refused.envelope)")
            #expect(result?["reason"] == "Unregistered")
            let registry = try await stack.api("GET", "/v1/subscribers/gone/live-activities")
            #expect(registry.data?.arrayValue?.first?["tokenStatus"] == "invalid")
            #expect(registry.data?.arrayValue?.first?["tokenInvalidReason"] == "Unregistered")
            let skipped = try await stack.sendLiveActivity([
                "to": "gone", "event": "update", "activityId": "act", "contentState": [:]
            ])
            #expect(skipped.data?["results"]?.arrayValue?.first?["status"] == "token_invalid")
            #expect(skipped.data?["results"]?.arrayValue?.first?["deliveryId"] == .null)
            #expect(try await stack.simulator.stats()["accepted"]?.intValue == 0)
        }
    }

    @Test func anActivityEndedOnTheDeviceAndAnOlderTimestampAreNotSent() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            let token = PushStack.token()
            try await stack.registerActivity("rules", "act", token: token)
            let newer = try await stack.sendLiveActivity([
                "to": "rules", "event": "update", "activityId": "act",
                "contentState": ["v": 2], "timestamp": 2000
            ])
            #expect(newer.data?["results"]?.arrayValue?.first?["status"] == "sent")
            let older = try await stack.sendLiveActivity([
                "to": "rules", "event": "update", "activityId": "act",
                "contentState": ["v": 1], "timestamp": 1000
            ])
            #expect(older.status == 200 && older.data?["results"]?.arrayValue?.first?["status"] == "stale_timestamp")
            #expect(try await stack.simulator.pushes(token: token).count == 1)

            let deleted = try await stack.api("DELETE", "/v1/subscribers/rules/live-activities/act")
            #expect(deleted.data?["ended"] == true)
            let after = try await stack.sendLiveActivity([
                "to": "rules", "event": "update", "activityId": "act",
                "contentState": ["v": 3], "timestamp": 3000
            ])
            #expect(after.data?["results"]?.arrayValue?.first?["status"] == "activity_ended")
            #expect(after.data?["messageId"] == .null)
            #expect(try await stack.simulator.pushes(token: token).count == 1)
        }
    }

    /// Many sends at once through one gateway replica (one reply list, one reader) and one
    /// liveactivity replica (lanes, batches): each request gets its own answer, and sends to one
    /// activity are decided one after another, so the newest of each activity always goes out and
    /// an older one decided after it says `stale_timestamp`.
    @Test func manySendsAtOnceAreEachAnsweredWithTheirOwnResult() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            var tokens: [String] = []
            for n in 0..<8 {
                tokens.append(PushStack.token())
                try await stack.registerActivity("many\(n)", "act\(n)", token: tokens[n])
            }
            let answers = try await withThrowingTaskGroup(of: (Int, Int, Int, JSONValue?).self) { group in
                for n in 0..<8 {
                    for timestamp in 1...3 {
                        group.addTask {
                            let reply = try await stack.sendLiveActivity([
                                "to": .string("many\(n)"), "event": "update", "activityId": .string("act\(n)"),
                                "contentState": ["t": .int(Int64(timestamp))], "timestamp": .int(Int64(timestamp))
                            ])
                            return (n, timestamp, reply.status, reply.data?["results"]?.arrayValue?.first)
                        }
                    }
                }
                var all: [(Int, Int, Int, JSONValue?)] = []
                for try await answer in group { all.append(answer) }
                return all
            }
            #expect(answers.count == 24)
            var sent = 0
            for (n, timestamp, status, result) in answers {
                #expect(status == 200)
                #expect(result?["activityId"] == .string("act\(n)") && result?["token"] == .string(tokens[n]))
                let outcome = result?["status"]?.stringValue
                #expect(timestamp < 3 ? outcome == "sent" || outcome == "stale_timestamp" : outcome == "sent")
                if outcome == "sent" { sent += 1 }
            }
            #expect(try await stack.simulator.stats()["accepted"]?.intValue == Int64(sent))
        }
    }

    /// APNs slower than the deadline: 504 upstream_timeout, and the send still completes and is in
    /// the ledger; the same Idempotency-Key afterwards answers from the ledger without a second push.
    @Test func theDeadlinePassingAnswers504AndTheLedgerStillShowsTheAttempt() async throws {
        try await withPushStack { stack in
            _ = try await stack.startLiveActivity()
            let token = PushStack.token()
            try await stack.registerActivity("slow", "act", token: token)
            _ = try await stack.simulator.post("delay", ["ms": 7000, "count": 1])
            let body: JSONValue = ["to": "slow", "event": "update", "activityId": "act", "contentState": ["v": 1]]
            let late = try await stack.sendLiveActivity(body, headers: ["Idempotency-Key": "slow-1"])
            #expect(late.status == 504 && late.envelope.error?.code.rawValue == "upstream_timeout", "\(late.envelope)")
            let messageId = try #require(late.envelope.error?.details?["messageId"]?.stringValue)
            var deliveries: [JSONValue] = []
            let settled = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                deliveries = try await stack.deliveries(messageId)
                return deliveries.first?["status"] == "sent"
            }
            #expect(settled, "\(deliveries)")
            let deliveryId = try #require(deliveries.first?["id"]?.stringValue)
            let delivery = try await stack.api("GET", "/v1/deliveries/\(deliveryId)")
            #expect(delivery.data?["attempts"]?.arrayValue?.count == 1)
            #expect(delivery.data?["attempts"]?.arrayValue?.first?["status"] == 200)

            let again = try await stack.sendLiveActivity(body, headers: ["Idempotency-Key": "slow-1"])
            #expect(again.status == 200, "\(again.envelope)")
            #expect(again.data?["messageId"] == .string(messageId))
            #expect(again.data?["results"]?.arrayValue?.first?["status"] == "sent")
            #expect(try await stack.simulator.pushes(token: token).count == 1)
        }
    }

    /// Nothing is lost while no replica runs: the request waits on `bk:la` (the caller got its
    /// 504), and the first replica to start sends it.
    @Test func aRequestMadeWhileNoReplicaRunsIsSentByTheNextOne() async throws {
        try await withPushStack { stack in
            let token = PushStack.token()
            try await stack.registerActivity("queued", "act", token: token)
            let late = try await stack.sendLiveActivity([
                "to": "queued", "event": "update", "activityId": "act", "contentState": [:]
            ])
            #expect(late.status == 504 && late.envelope.error?.code.rawValue == "upstream_timeout")
            _ = try await stack.startLiveActivity()
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.simulator.pushes(token: token).count == 1
            }
            #expect(arrived)
        }
    }

    /// A replica killed while its push is with APNs: another one takes the entry over and answers
    /// from the ledger; the push is never sent a second time.
    @Test func aReplicaKilledMidSendIsTakenOverWithoutASecondPush() async throws {
        try await withPushStack { stack in
            let settings = ["BUZZKIT_LA_CLAIM_IDLE": "2s", "BUZZKIT_LA_RECLAIM_INTERVAL": "500ms"]
            let first = try await stack.startLiveActivity(settings: settings)
            let token = PushStack.token()
            try await stack.registerActivity("killed", "act", token: token)
            _ = try await stack.simulator.post("delay", ["ms": 6000, "count": 1])
            async let reply = stack.sendLiveActivity([
                "to": "killed", "event": "update", "activityId": "act", "contentState": [:]
            ])
            // Decided: its chunk is claimed; no delivery row until its outcome is known.
            let sending = try await RedisTestSupport.eventually(limit: .seconds(10)) {
                let rows = try await stack.postgres.query(
                    "SELECT count(*)::int FROM delivery_chunks WHERE kind = 'live_activity' AND sending_by IS NOT NULL")
                return try rows.first?.decode(Int.self, at: 0) == 1
            }
            #expect(sending)
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(10))
            _ = try await stack.startLiveActivity(settings: settings)
            let answer = try await reply
            #expect(answer.status == 200 || answer.status == 504, "\(answer.envelope)")
            if answer.status == 200 {
                #expect(answer.data?["results"]?.arrayValue?.first?["status"] == "sending")
            }
            try await Task.sleep(for: .seconds(7))  // past the simulator's delay: whatever was sent has arrived
            #expect(try await stack.simulator.pushes(token: token).count <= 1)
            let attempts = try await stack.postgres.query("SELECT count(*)::int FROM delivery_attempts")
            // the killed replica recorded nothing; nobody re-sent
            #expect(try attempts.first?.decode(Int.self, at: 0) == 0)
            let deliveries = try await stack.postgres.query("SELECT count(*)::int FROM deliveries")
            #expect(try deliveries.first?.decode(Int.self, at: 0) == 0)

            // Once stale, apns-sender's sweeper records it as lost (never sent again) and the
            // message completes.
            _ = try await stack.startSender(
                TestEnvironment.uniqueName("sender"),
                settings: ["BUZZKIT_SENDER_STALE_SENDING": "1s", "BUZZKIT_OUTBOX_SWEEP_INTERVAL": "500ms"])
            let lost = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                let rows = try await stack.postgres.query(
                    """
                    SELECT count(*)::int FROM deliveries d JOIN messages m ON m.id = d.message_id
                    WHERE d.status = 'failed' AND d.error_code = 'sender_lost' AND m.status = 'completed'
                    """)
                return try rows.first?.decode(Int.self, at: 0) == 1
            }
            #expect(lost)
            #expect(try await stack.postgres.query("SELECT 1 FROM delivery_chunks").isEmpty)
            #expect(try await stack.simulator.pushes(token: token).count <= 1)
        }
    }
}
