import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The API document as a client generator reads it: openapi-python-client (pinned in
/// `deploy/lib/common.sh`), default settings, generates a client from the gateway's served
/// `GET /openapi.json` and must report no error and no warning; then `Tests/GeneratedClient/
/// client_test.py` uses that client end to end against the real stack (gateway, apns-sender,
/// liveactivity, the APNs simulator): registers a device, sends a message, reads it, its
/// deliveries and one delivery with its attempts, saves and reads a workflow, sends a Live
/// Activity update. Every answer must parse into its documented type and the type must hold all
/// of it (a member a model lacks, or a response that does not parse, fails the run).
@Suite("generated client", .serialized, .requiresTestStack)
struct GeneratedClientTests {
    @Test("openapi-python-client: no warning, and the client works end to end")
    func theGeneratedClientWorksEndToEnd() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        let bin = URL(fileURLWithPath: python).deletingLastPathComponent().path
        let generator = bin + "/openapi-python-client"
        try #require(
            FileManager.default.isExecutableFile(atPath: generator), "openapi-python-client is not in the venv")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("client")
        ).path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await withPushStack { stack in
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startLiveActivity()
            // The generator reads the served document itself; it formats with ruff from the
            // same venv (PATH), as its default post-generation step does.
            let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let generate = try ServiceProcess(
                path: generator, name: "openapi-python-client", environment: ["PATH": path],
                arguments: [
                    "generate", "--url", stack.gatewayURL + "/openapi.json", "--output-path", folder + "/client",
                    "--fail-on-warning"
                ])
            let generated = await generate.waitForExit(timeout: .seconds(300))
            let log = generate.output
            #expect(generated == 0, "openapi-python-client failed:\n\(log)")
            for word in ["Warning", "WARNING", "Error", "Unable to", "Skipping"] {
                #expect(!log.contains(word), "openapi-python-client said \(word):\n\(log)")
            }
            try #require(generated == 0)
            let run = try ServiceProcess(
                path: python, name: "generated-client",
                environment: [
                    "BK_URL": stack.gatewayURL, "BK_TENANT_KEY": stack.tenantKey, "PYTHONPATH": folder + "/client",
                    "BK_PACKAGE": "buzz_kit_api_client"
                ], arguments: [TestEnvironment.repositoryRoot + "/Tests/GeneratedClient/client_test.py"])
            let status = await run.waitForExit(timeout: .seconds(300))
            #expect(
                status == 0,
                "the generated client's run failed:\n\(run.output)\ngateway:\n\(stack.gateway.output.suffix(3000))")
            for step in [
                "registered a device", "sent a message", "read the message", "listed its deliveries",
                "read one delivery with its attempts", "saved and read a workflow", "sent a Live Activity update"
            ] {
                #expect(run.output.contains("ok: " + step), "no \(step) in:\n\(run.output)")
            }
        }
    }
}
