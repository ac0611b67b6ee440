import BuzzKit
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The SDK core against the real gateway and ingest processes (one stack per test).
@Suite("SDK end to end", .serialized, .requiresTestStack)
struct EndToEndTests {
    func withStack(_ body: (ServerStack) async throws -> Void) async throws {
        let stack = try await ServerStack()
        do {
            try await body(stack)
        } catch {
            Issue.record(
                "gateway log: \(stack.gateway.output.suffix(2000))\ningest log: \(stack.ingest.output.suffix(2000))")
            await stack.close()
            throw error
        }
        await stack.close()
    }

    @Test func eventsLandOnceWhenTheNetworkFailsMidBatchAndTheProcessRestarts() async throws {
        try await withStack { stack in
            let directory = TemporaryDirectory()
            let subscriber = TestEnvironment.uniqueName("runner")
            let first = try stack.client(
                directory: directory, transport: LosesAnswers(URLSessionTransport(timeout: 10), failures: 1))
            first.identify(subscriber)
            await first.flushEvents()  // the identify itself, no events yet
            for n in 0..<120 { first.track("workout.completed", data: ["n": .int(Int64(n))]) }
            await first.flushEvents()  // batch 1 stored by the server, the answer lost: everything stays queued
            #expect(await first.pendingEventCount() == 120)

            // The process restarts: a new client on the same storage sends the same events again.
            let second = try stack.client(directory: directory)
            await second.flushEvents()
            #expect(await second.pendingEventCount() == 0)
            second.track("sentinel")
            await second.flushEvents()
            let stored = try await stack.waitForEvent("sentinel", of: subscriber)
            let workouts = stored.filter { $0["name"] == "workout.completed" }
            #expect(workouts.count == 120)
            #expect(Set(workouts.compactMap { $0["id"]?.stringValue }).count == 120)
            #expect(Set(workouts.compactMap { $0["data"]?["n"]?.intValue }) == Set(0..<120))
        }
    }

    @Test func identifySplitsBatchesByIdentity() async throws {
        try await withStack { stack in
            let directory = TemporaryDirectory()
            let subscriber = TestEnvironment.uniqueName("member")
            let client = try stack.client(directory: directory)
            let anonymous = client.anonymousId
            client.track("browse.started")
            client.track("browse.item", data: ["sku": "mat"])
            client.identify(subscriber)
            client.track("checkout.completed", data: ["total": 49.9])
            await client.flushEvents()
            #expect(await client.pendingEventCount() == 0)
            let stored = try await stack.waitForEvent("checkout.completed", of: subscriber)
            let byName = Dictionary(stored.map { ($0["name"]?.stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            #expect(byName["browse.started"]?["anonymousId"] == .string(anonymous))
            #expect(byName["browse.item"]?["anonymousId"] == .string(anonymous))
            #expect(byName["browse.item"]?["data"] == ["sku": "mat"])
            #expect(byName["checkout.completed"]?["anonymousId"] == .null)
            #expect(byName["checkout.completed"]?["subscriberId"] == .string(subscriber))
            #expect(byName["checkout.completed"]?["data"] == ["total": 49.9])
        }
    }

    @Test func anAPIRejectedBatchIsDroppedAndTheNextOneGoesThrough() async throws {
        try await withStack { stack in
            let directory = TemporaryDirectory()
            let subscriber = TestEnvironment.uniqueName("clocky")
            let clock = SettableClock()
            let logs = LogCapture()
            let client = try stack.client(directory: directory, clock: clock, logs: logs)
            // A device clock two days ahead: the server refuses the batch (422 validation_failed).
            clock.set(Date().addingTimeInterval(2 * 86_400))
            client.track("from.the.future")
            clock.set(Date())
            client.identify(subscriber)
            client.track("on.time")
            await client.flushEvents()
            #expect(await client.pendingEventCount() == 0)
            #expect(
                logs.all.contains {
                    $0.message.contains("rejected by the API and dropped")
                        && $0.metadata["error.code"] == "validation_failed"
                })
            let stored = try await stack.waitForEvent("on.time", of: subscriber)
            #expect(stored.compactMap { $0["name"]?.stringValue } == ["on.time"])
        }
    }

    @Test func aSilentLocalPlanIsAcknowledgedToTheServer() async throws {
        try await withStack { stack in
            let directory = TemporaryDirectory()
            let subscriber = TestEnvironment.uniqueName("planned")
            let client = try stack.client(directory: directory)
            client.identify(subscriber)
            let plan = LocalPlan(
                id: "run_e2e:nudge", fireAt: .init(year: 2030, month: 1, day: 2, hour: 7, minute: 0),
                title: "Leg day", cancelOn: ["workout.completed"], messageId: "msg_e2e")
            // The payload exactly as the server encodes it, read back as iOS hands it to the app.
            let userInfo = try #require(JSONValue.parse(PushPayload.local(plan).encode()).anyValue as? [String: Any])
            #expect(await client.didReceiveRemoteNotification(userInfo: userInfo) == .newData)
            let stored = try await stack.waitForEvent("$local.scheduled", of: subscriber)
            #expect(
                stored.first { $0["name"] == "$local.scheduled" }?["data"] == [
                    "localId": "run_e2e:nudge", "messageId": "msg_e2e"
                ])
        }
    }

    /// The SDK's Live Activity registration (observe-style, with the platform fakes standing in
    /// for ActivityKit) against this server's routes: tokens, a rotation, push-to-start and the
    /// end all reach it, and nothing reports `server_lacks_live_activities` any more.
    @Test func liveActivityTokensRotationPushToStartAndEndReachTheServer() async throws {
        try await withStack { stack in
            let directory = TemporaryDirectory()
            let logs = LogCapture()
            let client = try stack.client(directory: directory, logs: logs)
            let subscriber = TestEnvironment.uniqueName("fan")
            client.identify(subscriber)
            await client.flushEvents()
            let first = Data((0..<32).map { UInt8($0) })
            let rotated = Data((0..<32).map { UInt8(255 - $0) })
            let start = Data(repeating: 0x5A, count: 40)
            await client.activities.run(
                FakeActivityProvider(
                    attributesType: "MatchAttributes",
                    script: [
                        .activity(id: "act_e2e", attributesType: "MatchAttributes"),
                        .pushToken(id: "act_e2e", attributesType: "MatchAttributes", token: first),
                        .pushToken(id: "act_e2e", attributesType: "MatchAttributes", token: rotated),
                        .pushToStartToken(attributesType: "MatchAttributes", token: start)
                    ]))
            #expect(await client.activities.pendingTokenCount() == 0)
            let activities = try await stack.get("/v1/subscribers/\(subscriber)/live-activities")
            #expect(activities.arrayValue?.count == 1)
            #expect(activities.arrayValue?.first?["token"] == .string(Hex.string(rotated)))  // the rotation replaced it
            #expect(
                activities.arrayValue?.first?["state"] == "active"
                    && activities.arrayValue?.first?["attributesType"] == "MatchAttributes")
            #expect(activities.arrayValue?.first?["environment"] == "sandbox")
            let starts = try await stack.get("/v1/subscribers/\(subscriber)/live-activity-start-tokens")
            #expect(starts.arrayValue?.map { $0["token"] } == [.string(Hex.string(start))])

            await client.activities.end(id: "act_e2e")
            #expect(await client.activities.pendingTokenCount() == 0)
            let after = try await stack.get("/v1/subscribers/\(subscriber)/live-activities")
            #expect(after.arrayValue?.first?["state"] == "ended" && after.arrayValue?.first?["endedBy"] == "device")
            await client.flushEvents()
            #expect(!logs.all.contains { $0.message.contains("no Live Activity routes") })
            #expect(!logs.all.contains { $0.metadata["code"] == "server_lacks_live_activities" })
        }
    }

    @Test func theSDKRegistersItsInstallationAndSendsEveryRequestWithItsToken() async throws {
        try await withStack { stack in
            let directory = TemporaryDirectory()
            let logs = LogCapture()
            let transport = RecordingTransport(URLSessionTransport(timeout: 10))
            let subscriber = TestEnvironment.uniqueName("installed")
            let client = try stack.client(directory: directory, transport: transport, logs: logs)
            client.identify(subscriber)
            client.track("before.logout")
            await client.flushEvents()
            await client.registerDeviceToken(Array(repeating: 0x5A, count: 32))
            client.track("logged.out")
            client.reset()
            client.track("anonymous.again")
            await client.flushEvents()
            #expect(await client.pendingEventCount() == 0)
            #expect(!logs.all.contains { $0.level == .error }, "\(logs.all.filter { $0.level == .error })")
            let registrations = transport.requests.filter { $0.url.path == "/v1/installations" }
            #expect(registrations.count == 2)  // the first anonymous id, then the one after reset
            let others = transport.requests.filter { $0.url.path != "/v1/installations" }
            #expect(others.allSatisfy { $0.headers["BuzzKit-Installation"]?.hasPrefix("bk_inst_") == true })
            let stored = try await stack.waitForEvent("logged.out", of: subscriber)
            #expect(stored.compactMap { $0["name"]?.stringValue } == ["before.logout", "logged.out"])

            // The server insists on it: the same client key without the header is refused.
            let bare = try await stack.http.send(
                TransportRequest(
                    method: "POST", url: URL(string: stack.baseURL.absoluteString + "/v1/events")!,
                    headers: ["Authorization": "Bearer \(stack.clientKey)", "Content-Type": "application/json"],
                    body: JSONValue.object(["subscriberId": .string(subscriber), "events": .array([])]).jsonBytes))
            #expect(bare.status == 401)
            #expect((try? Envelope.decode(bare.body))?.error?.code.rawValue == "installation_required")
        }
    }
}
