import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The dashboard in a real browser (Debian's Chromium driven by Playwright, `Tests/Browser`)
/// against the real stack: gateway, ingest, apns-sender, a workflow replica, a liveactivity replica
/// and the APNs simulator on the test Postgres and a Redis of the test's own. Seeds subscribers,
/// devices, a topic, events, receipts and a message whose title is an `<img onerror>`, then runs
/// the browser scenarios; their screenshots go to `$TEST_OUTPUT_DIR/dashboard` (./deploy/test sets it).
@Suite("dashboard in a browser", .serialized, .requiresTestStack)
struct DashboardBrowserTests {
    static let xss = "<img src=x onerror=alert(1)>"

    @Test(
        "sign in, segments, send to a segment, deliveries, workflows, Live Activities, keys and revocation, XSS as text: in Chromium"
    )
    func dashboardInChromium() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        let chromium = ProcessInfo.processInfo.environment["BK_CHROMIUM"] ?? "/usr/bin/chromium"
        try #require(
            FileManager.default.isExecutableFile(atPath: chromium),
            "Debian's chromium is missing (deploy/lib/common.sh installs it)")
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: WorkflowClockFile())
            _ = try await stack.startLiveActivity()
            _ = try await stack.startWebhooks()
            // A tenant's webhook endpoint: verifies with standardwebhooks what the Webhooks page sets up.
            let receiverState = FileManager.default.temporaryDirectory.appendingPathComponent(
                TestEnvironment.uniqueName("receiver")
            ).path
            try FileManager.default.createDirectory(atPath: receiverState, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: receiverState) }
            let document = try await stack.http.execute(HTTPClientRequest(url: stack.gatewayURL + "/openapi.json"))
            try Data(document.body).write(to: URL(fileURLWithPath: receiverState + "/openapi.json"))
            let receiverPort = freeLoopbackPort()
            let receiver = try ServiceProcess(
                path: python, name: "webhook-receiver", environment: [:],
                arguments: [
                    TestEnvironment.repositoryRoot + "/Tests/Fixtures/webhook-receiver/receiver.py", "--port",
                    String(receiverPort), "--state", receiverState, "--openapi", receiverState + "/openapi.json"
                ])
            defer { receiver.signal(SIGKILL) }
            try await seed(stack)
            let output =
                (ProcessInfo.processInfo.environment["TEST_OUTPUT_DIR"]
                    ?? FileManager.default.temporaryDirectory.path) + "/dashboard"
            try? FileManager.default.removeItem(atPath: output)
            let script = TestEnvironment.repositoryRoot + "/Tests/Browser/dashboard_test.py"
            let browser = try ServiceProcess(
                path: python, name: "dashboard-browser",
                environment: [
                    "BK_URL": stack.gatewayURL, "BK_WORKSPACE_KEY": stack.workspaceKey,
                    "BK_TENANT_ID": stack.tenantID.uuidString.lowercased(), "BK_OUTPUT_DIR": output,
                    "BK_CHROMIUM": chromium, "BK_SIMULATOR": "http://127.0.0.1:\(stack.simulator.controlPort)",
                    "BK_WEBHOOK_RECEIVER": "http://127.0.0.1:\(receiverPort)/hook", "BK_WEBHOOK_STATE": receiverState
                ], arguments: [script])
            let status = await browser.waitForExit(timeout: .seconds(600))
            #expect(
                status == 0,
                "the browser scenarios failed:\n\(browser.output)\ngateway:\n\(stack.gateway.output.suffix(3000))")
            for name in [
                "signin", "tenant-picker", "overview", "send", "messages", "message", "delivery", "subscribers",
                "subscriber", "segments", "segment", "segment-error", "keys", "key-created", "signed-out",
                "workflows", "workflow", "workflow-problems", "workflow-runs", "workflow-run", "workflow-run-cancelled",
                "workflow-run-digest", "workflow-run-throttled",
                "live-activities", "live-activity", "live-activity-error", "live-activity-narrow", "overview-narrow",
                "webhooks", "webhook-created", "webhook", "webhook-rotated", "webhook-narrow"
            ] {
                #expect(FileManager.default.fileExists(atPath: "\(output)/\(name).png"), "no screenshot of \(name)")
            }
        }
    }

    /// Three pro subscribers (four devices), a free one, and `xss-1` (an `<img onerror>` attribute,
    /// one active and one inactive device, the topic news, two events), plus a message with an
    /// `<img onerror>` title sent to it and its receipts.
    private func seed(_ stack: PushStack) async throws {
        for (id, tokens) in [("pro-1", 2), ("pro-2", 1), ("pro-3", 1), ("free-1", 1)] {
            let plan = id.hasPrefix("pro") ? "pro" : "free"
            #expect(
                try await stack.api("PUT", "/v1/subscribers/\(id)", body: ["attributes": ["plan": .string(plan)]])
                    .status == 201)
            try await registerDevices(stack, id, count: tokens)
        }
        #expect(
            try await stack.api(
                "PUT", "/v1/subscribers/xss-1",
                body: [
                    "attributes": ["plan": "free", "note": .string(Self.xss)], "timezone": "Europe/Berlin"
                ]
            ).status == 201)
        let tokens = try await registerDevices(stack, "xss-1", count: 2)
        try await stack.postgres.execute(
            "UPDATE devices SET active = false, invalid_reason = 'Unregistered' WHERE token = $1", [tokens[1]])
        #expect(try await stack.api("PUT", "/v1/topics/news", body: ["name": "News"]).status == 201)
        #expect(try await stack.api("POST", "/v1/topics/news/subscribers", body: ["ids": ["xss-1"]]).status == 200)
        let now = Date()
        let stamp = { (ago: TimeInterval) -> JSONValue in
            .string(ISO8601DateFormatter().string(from: now.addingTimeInterval(-ago)))
        }
        #expect(
            try await stack.api(
                "POST", "/v1/events",
                body: [
                    "subscriberId": "xss-1",
                    "events": [
                        ["id": "e1", "name": "$app.opened", "timestamp": stamp(120)],
                        [
                            "id": "e2", "name": "checkout.completed", "data": ["total": 42, "label": .string(Self.xss)],
                            "timestamp": stamp(60)
                        ]
                    ]
                ]
            ).status == 202)
        let message = try await stack.send(["to": "xss-1", "title": .string(Self.xss), "body": "Rendered as text"])
        _ = try await stack.waitSettled(message)
        #expect(
            try await stack.api(
                "POST", "/v1/events",
                body: [
                    "subscriberId": "xss-1",
                    "events": [
                        [
                            "id": "r1", "name": "$notification.delivered", "data": ["messageId": .string(message)],
                            "timestamp": stamp(30)
                        ],
                        [
                            "id": "r2", "name": "$notification.opened", "data": ["messageId": .string(message)],
                            "timestamp": stamp(20)
                        ]
                    ]
                ]
            ).status == 202)
        // The events and receipts are stored (ingest) before the browser looks.
        let stored = try await RedisTestSupport.eventually(limit: .seconds(60)) {
            let events = try await stack.api("GET", "/v1/subscribers/xss-1/events?limit=10")
            let read = try await stack.api("GET", "/v1/messages/\(message)")
            return events.data?.arrayValue?.count == 4 && read.data?["receipts"]?["opened"]?.intValue == 1
        }
        try #require(stored, "ingest did not store the seeded events and receipts")
    }

    @discardableResult
    private func registerDevices(_ stack: PushStack, _ id: String, count: Int) async throws -> [String] {
        var tokens: [String] = []
        for _ in 0..<count {
            let token = PushStack.token()
            let reply = try await stack.api(
                "PUT", "/v1/subscribers/\(id)/devices/\(token)",
                body: ["environment": "sandbox", "bundleId": .string(PushStack.bundleId)])
            #expect(reply.status == 201, "\(reply.envelope)")
            tokens.append(token)
        }
        return tokens
    }
}
