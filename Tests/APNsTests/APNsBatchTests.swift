import BuzzKitAPNs
import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// `send(batch:)` and `sendWithRetries(batch:)` against the simulator: one submission for a whole
/// chunk, with the same results, headers and retries as one request at a time.
@Suite("APNs client batches against the simulator", .requiresTestStack)
struct APNsBatchTests {
    static let topic = "com.example.gym"

    private func request(_ token: String, apnsId: String? = UUID().uuidString.lowercased()) -> APNsRequest {
        APNsRequest(
            deviceToken: token, topic: Self.topic,
            content: MessageContent(title: "Leg day", body: "6:00", data: ["w": 1], collapseId: "legs"),
            messageId: "msg-1", apnsId: apnsId)
    }

    @Test func batchAnswersEachRequestInOrderWithItsOwnHeaders() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        var requests = (0..<300).map { _ in request(APNsSimulatorProcess.deviceToken()) }
        let dead = requests[17].deviceToken
        try await sim.post("unregister", ["token": .string(dead), "timestamp": 1_700_000_000_000])
        requests[42].apnsId = "not-a-uuid"
        requests[99].pushType = .background  // different shared headers mid-batch
        requests[99].priority = 5
        let responses = await client.send(batch: requests, credentials: sim.credentials)
        try #require(responses.count == requests.count)
        for (index, (req, response)) in zip(requests, responses).enumerated() {
            switch index {
            case 17: #expect(response.status == 410 && response.reason == .unregistered)
            case 42: #expect(response.status == 400 && response.reason == .badMessageId)
            default:
                #expect(response.status == 200)
                #expect(response.apnsId?.lowercased() == req.apnsId)
            }
            #expect(response.payload == req.payload)
            // Exactly what the one-at-a-time path records: the request's headers, JWT redacted,
            // then the two libcurl adds.
            let expected = req.headers(authorization: nil).fields.map(\.name)
            #expect(
                response.requestHeaders.fields.map(\.name) == ["authorization"] + expected + [
                    "accept", "content-length"
                ])
            #expect(response.requestHeaders["apns-id"] == req.apnsId)
            #expect(response.requestHeaders["apns-push-type"] == req.pushType.rawValue)
            #expect(response.requestHeaders["content-length"] == String(req.payload.count))
            #expect(response.requestHeaders["authorization"]?.hasPrefix("bearer <redacted kid=") == true)
            #expect(response.tokenIssuedAt != nil)
        }
        let pushes = try await sim.pushes(token: requests[99].deviceToken)
        #expect(pushes.first?["pushType"]?.stringValue == "background")
        #expect(pushes.first?["priority"]?.intValue == 5)
        #expect(try await sim.stats()["accepted"]?.intValue == 298)
        #expect(client.connectionsOpened <= 4)
        await client.shutdown()
        await sim.stop()
    }

    @Test func batchRetriesOnlyWhatNeedsIt() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        // The first 3 requests the simulator sees get 503, every later one 200.
        try await sim.post("fail", ["status": 503, "count": 3])
        let requests = (0..<50).map { _ in request(APNsSimulatorProcess.deviceToken(), apnsId: nil) }
        let sleeps = Mutex(0)
        let results = await client.sendWithRetries(
            batch: requests, credentials: sim.credentials, unitRandom: { 1 },
            sleep: { _ in sleeps.withLock { $0 += 1 } })
        try #require(results.count == 50)
        #expect(results.filter { $0.attempts.count == 2 }.count == 3)
        #expect(results.filter { $0.attempts.count == 1 }.count == 47)
        #expect(sleeps.withLock { $0 } == 3)
        for result in results {
            guard case .delivered = result.outcome else {
                Issue.record("not delivered: \(result.outcome)")
                continue
            }
            #expect(result.attempts.last?.status == 200)
            // An apns-id was chosen once per request and kept across its attempts.
            let ids = Set(result.attempts.compactMap { $0.requestHeaders["apns-id"] })
            #expect(ids.count == 1)
        }
        for req in requests { #expect(try await sim.pushes(token: req.deviceToken).count == 1) }
        await client.shutdown()
        await sim.stop()
    }

    @Test func batchAfterShutdownFailsEveryRequest() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        await client.shutdown()
        let responses = await client.send(
            batch: [
                request(APNsSimulatorProcess.deviceToken()),
                request(APNsSimulatorProcess.deviceToken())
            ], credentials: sim.credentials)
        #expect(responses.count == 2)
        #expect(responses.allSatisfy { $0.status == 0 && $0.transportError?.code == .shutdown })
        await sim.stop()
    }
}
