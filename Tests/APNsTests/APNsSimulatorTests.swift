import BuzzKitAPNs
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// The transport against a real `apns-sim` (HTTP/2 over TLS, JWT checked), one simulator per test.
@Suite("APNs client against the simulator", .requiresTestStack)
struct APNsSimulatorTests {
    static let topic = "com.example.gym"

    private func request(
        _ token: String,
        content: MessageContent = MessageContent(
            title: "Leg day", body: "6:00 with Maya.",
            data: ["w": 1], collapseId: "legs"),
        apnsId: String? = nil
    ) -> APNsRequest {
        APNsRequest(deviceToken: token, topic: Self.topic, content: content, messageId: "msg-1", apnsId: apnsId)
    }

    @Test func acceptedPushIsRecordedWithExactBytesAndHeaders() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let token = APNsSimulatorProcess.deviceToken()
        let apnsId = UUID().uuidString
        let req = request(token, apnsId: apnsId)
        let response = await client.send(req, credentials: sim.credentials)
        #expect(response.status == 200)
        #expect(response.apnsId?.lowercased() == apnsId.lowercased())
        #expect(response.disposition == .delivered(apnsId: response.apnsId ?? ""))
        #expect(response.payload == req.payload)
        // The ledger's headers: exactly what was sent, the JWT redacted.
        let names = response.requestHeaders.fields.map(\.name)
        #expect(
            names == [
                "authorization", "apns-push-type", "apns-topic", "apns-priority", "apns-collapse-id", "apns-id",
                "accept", "content-length"
            ])
        let authorization = try #require(response.requestHeaders["authorization"])
        #expect(authorization.hasPrefix("bearer <redacted kid=\(sim.credentials.keyId) iat="))
        #expect(!authorization.contains("."))

        let pushes = try await sim.pushes(token: token)
        try #require(pushes.count == 1)
        let push = pushes[0]
        #expect(push["payload"]?.stringValue == String(decoding: req.payload, as: UTF8.self))
        #expect(push["topic"]?.stringValue == Self.topic)
        #expect(push["pushType"]?.stringValue == "alert")
        #expect(push["priority"]?.intValue == 10)
        #expect(push["collapseId"]?.stringValue == "legs")
        #expect(
            push["headers"] == [
                "apns-push-type": "alert", "apns-topic": .string(Self.topic), "apns-priority": "10",
                "apns-collapse-id": "legs", "apns-id": .string(apnsId), "accept": "*/*",
                "content-length": .string(String(req.payload.count))
            ])
        // The ledger's view is what the simulator received, but for the redacted JWT.
        var ledger = response.requestHeadersJSON.objectValue ?? [:]
        ledger["authorization"] = nil
        #expect(push["headers"] == .object(ledger))
        let received = try PushPayload.parse(bytes: Array((push["payload"]?.stringValue ?? "").utf8))
        #expect(received.bk.messageId == "msg-1")
        #expect(received.bk.data == ["w": 1])
        await client.shutdown()
        await sim.stop()
    }

    @Test func silentPushGoesAsBackgroundWithPriorityFive() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let token = APNsSimulatorProcess.deviceToken()
        let req = request(token, content: MessageContent(data: ["sync": true]))
        let response = await client.send(req, credentials: sim.credentials)
        #expect(response.status == 200)
        let push = try #require(try await sim.pushes(token: token).first)
        #expect(push["pushType"]?.stringValue == "background")
        #expect(push["priority"]?.intValue == 5)
        await client.shutdown()
        await sim.stop()
    }

    @Test func unregisteredTokenIsInvalidWithTimestamp() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let token = APNsSimulatorProcess.deviceToken()
        try await sim.post("unregister", ["token": .string(token), "timestamp": 1_700_000_000_123])
        let result = await client.sendWithRetries(request(token), credentials: sim.credentials)
        #expect(result.attempts.count == 1)
        #expect(result.attempts.first?.status == 410)
        #expect(
            result.outcome
                == .invalidToken(reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000.123)))
        #expect(try await sim.pushes(token: token).isEmpty)
        await client.shutdown()
        await sim.stop()
    }

    @Test func badTopicFailsWithoutRetry() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        var req = request(APNsSimulatorProcess.deviceToken())
        req.pushType = .liveactivity
        let sleeps = Mutex(0)
        let result = await client.sendWithRetries(
            req, credentials: sim.credentials, sleep: { _ in sleeps.withLock { $0 += 1 } })
        #expect(result.outcome == .failed(reason: .deviceTokenNotForTopic))
        #expect(result.attempts.count == 1)
        #expect(sleeps.withLock { $0 } == 0)
        await client.shutdown()
        await sim.stop()
    }

    @Test func serviceUnavailableTwiceThenDelivered() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let token = APNsSimulatorProcess.deviceToken()
        try await sim.post("fail", ["status": 503, "count": 2])
        let waits = Mutex<[Duration]>([])
        let seen = Mutex<[APNsOutcome]>([])
        let result = await client.sendWithRetries(
            request(token), credentials: sim.credentials, unitRandom: { 1 },
            sleep: { delay in waits.withLock { $0.append(delay) } },
            onAttempt: { _, outcome in seen.withLock { $0.append(outcome) } })
        #expect(result.attempts.map(\.status) == [503, 503, 200])
        #expect(result.attempts.prefix(2).map(\.reason) == [.serviceUnavailable, .serviceUnavailable])
        #expect(waits.withLock { $0 } == [.milliseconds(500), .seconds(1)])
        let apnsIds = Set(result.attempts.compactMap(\.apnsId))
        #expect(apnsIds.count == 1)  // one apns-id for every attempt of the delivery
        guard case .delivered = result.outcome else {
            Issue.record("not delivered: \(result.outcome)")
            return
        }
        #expect(seen.withLock { $0.count } == 3)
        #expect(try await sim.pushes(token: token).count == 1)
        await client.shutdown()
        await sim.stop()
    }

    @Test func retriesRunOutIntoFailed() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        try await sim.post("fail", ["status": 429, "count": 10])
        let result = await client.sendWithRetries(
            request(APNsSimulatorProcess.deviceToken()), credentials: sim.credentials,
            policy: RetryPolicy(maxAttempts: 3), sleep: { _ in })
        #expect(result.attempts.map(\.status) == [429, 429, 429])
        #expect(result.outcome == .failed(reason: .tooManyRequests))
        await client.shutdown()
        await sim.stop()
    }

    @Test func expiredProviderTokenIsRenewedAndRetried() async throws {
        let sim = try await APNsSimulatorProcess()
        // The cache's clock starts 61 minutes in the past, so its first token is already expired
        // by the simulator's (real) clock; then the clock catches up.
        let clock = ManualClock(Date().addingTimeInterval(-61 * 60))
        let client = try sim.makeClient(tokenCache: APNsTokenCache(now: { clock.now }))
        let token = APNsSimulatorProcess.deviceToken()
        let result = await client.sendWithRetries(
            request(token), credentials: sim.credentials, sleep: { _ in },
            onAttempt: { response, _ in
                if response.reason == .expiredProviderToken { clock.set(Date()) }
            })
        #expect(result.attempts.map(\.status) == [403, 200])
        #expect(result.attempts.first?.reason == .expiredProviderToken)
        let issued = result.attempts.compactMap(\.tokenIssuedAt)
        #expect(issued.count == 2 && issued[0] < issued[1])
        guard case .delivered = result.outcome else {
            Issue.record("not delivered: \(result.outcome)")
            return
        }
        await client.shutdown()
        await sim.stop()
    }

    @Test func wrongKeyFailsAsCredentialProblem() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let stranger = try APNsCredentials(
            teamId: sim.credentials.teamId, keyId: sim.credentials.keyId,
            privateKey: ES256PrivateKey.generate())
        let result = await client.sendWithRetries(
            request(APNsSimulatorProcess.deviceToken()), credentials: stranger, sleep: { _ in })
        #expect(result.outcome == .failed(reason: .invalidProviderToken))
        #expect(APNsReason.invalidProviderToken.isCredentialProblem)
        await client.shutdown()
        await sim.stop()
    }

    @Test func thousandConcurrentSendsShareFewConnections() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let credentials = sim.credentials
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<1000 {
                let req = request(
                    APNsSimulatorProcess.deviceToken(),
                    content: MessageContent(body: "n\(index)", data: ["i": .int(Int64(index))]))
                group.addTask { await client.send(req, credentials: credentials).status }
            }
            var all: [Int] = []
            for await status in group { all.append(status) }
            return all
        }
        #expect(statuses.count == 1000)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(client.connectionsOpened >= 1)
        #expect(client.connectionsOpened <= 4)
        let stats = try await sim.stats()
        #expect(stats["accepted"]?.intValue == 1000)
        #expect((stats["connections"]?["total"]?.intValue ?? 99) <= 4)
        await client.shutdown()
        await sim.stop()
    }

    @Test func transportFailureIsRetryable() async throws {
        // Nothing listens on this port: connect fails, which a sender retries.
        let client = try APNsClient(
            configuration: .init(environment: .sandbox, baseURL: "https://127.0.0.1:1"),
            tokenCache: APNsTokenCache(), logger: .silent())
        let creds = try APNsCredentials(teamId: "T", keyId: "K", privateKey: ES256PrivateKey.generate())
        let response = await client.send(request(APNsSimulatorProcess.deviceToken()), credentials: creds)
        #expect(response.status == 0)
        #expect(response.transportError?.code == .connectFailed)
        #expect(response.disposition == .retryable(reason: nil))
        await client.shutdown()
    }
}
