import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The producer that lives in apns-sender: a token APNs calls invalid deactivates its device and,
/// in the same statement, enqueues `device.unregistered` (source `apns`) for an endpoint that
/// subscribed; the webhooks service delivers it to a receiver that verifies it with the
/// `standardwebhooks` package and checks it against the API document.
@Suite("webhooks: device.unregistered from APNs", .serialized, .requiresTestStack)
struct WebhookProducerTests {
    @Test func anUnregisteredTokenIsReported() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startWebhooks()
            let state = FileManager.default.temporaryDirectory.appendingPathComponent(
                TestEnvironment.uniqueName("receiver")
            ).path
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: state) }
            let document = try await stack.http.execute(HTTPClientRequest(url: stack.gatewayURL + "/openapi.json"))
            try Data(document.body).write(to: URL(fileURLWithPath: state + "/openapi.json"))
            let port = freeLoopbackPort()
            let receiver = try ServiceProcess(
                path: python, name: "webhook-receiver", environment: [:],
                arguments: [
                    TestEnvironment.repositoryRoot + "/Tests/Fixtures/webhook-receiver/receiver.py", "--port",
                    String(port), "--state", state, "--openapi", state + "/openapi.json"
                ])
            defer { receiver.signal(SIGKILL) }
            let created = try await stack.api(
                "POST", "/v1/webhooks",
                body: ["url": .string("http://127.0.0.1:\(port)/hook"), "events": ["device.unregistered"]])
            let secret = try #require(created.data?["secret"]?.stringValue, "\(created.envelope)")
            try Data(secret.utf8).write(to: URL(fileURLWithPath: state + "/secrets"))
            let good = PushStack.token()
            let dead = PushStack.token()
            try await stack.addSubscriber("dora", tokens: [good, dead])
            try await Task.sleep(for: .milliseconds(20))
            try await stack.simulator.post("unregister", ["token": .string(dead)])
            let id = try await stack.send(["to": ["dora"], "body": "hi"])
            _ = try await stack.waitSettled(id)
            var record: JSONValue?
            let arrived = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                let text = (try? String(contentsOfFile: state + "/received.jsonl", encoding: .utf8)) ?? ""
                record = text.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }.first
                return record != nil
            }
            try #require(
                arrived, "nothing received; webhooks: \(stack.senders.withLock { $0 }.last?.output.suffix(2000) ?? "")")
            #expect(record?["verified_with"] == [0], "\(record ?? .null)")
            #expect(record?["schema_error"] == .null, "\(record ?? .null)")
            let data = record?["body"]?["data"]
            #expect(
                data?["token"]?.stringValue == dead && data?["source"] == "apns" && data?["reason"] == "Unregistered")
            #expect(data?["subscriberId"] == "dora" && data?["environment"] == "sandbox")
        }
    }
}
