import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

@Suite("Gateway OpenAPI document", .requiresTestStack)
struct OpenAPITests {
    @Test func theDocumentListsExactlyTheRoutesAndEveryOneIsServed() async throws {
        try await withGateway { h in
            let reply = try await h.client.execute(.init(method: .GET, url: h.baseURL + "/openapi.json"))
            #expect(reply.status == 200)
            let document = try JSONValue.parse(reply.body)
            #expect(document["openapi"] == "3.1.0")
            var documented: Set<String> = []
            for (path, item) in document["paths"]?.objectValue ?? [:] {
                for method in (item.objectValue ?? [:]).keys { documented.insert("\(method.uppercased()) \(path)") }
            }
            let table = Set(GatewayRoute.table.map { "\($0.method) \($0.path)" })
            #expect(documented == table)
            for required in [
                "GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json", "PUT /v1/subscribers/{id}",
                "POST /v1/tenants", "DELETE /v1/api-keys/{id}", "POST /v1/identify"
            ] {
                #expect(documented.contains(required), "\(required)")
            }
            // Every documented route is registered: without a key it answers 401 (or 200/503 for the
            // infrastructure), never the router's 404/405.
            for route in GatewayRoute.table {
                let path = RouteSamples.path(route, .init())
                let answer = try await h.send(route.method, path, body: RouteSamples.body(route, .init()))
                #expect(
                    answer.status != 404 && answer.status != 405, "\(route.method) \(route.path) -> \(answer.status)")
                if route.needsKey { #expect(answer.status == 401, "\(route.method) \(route.path)") }
            }
            // Scopes and error codes are in the document.
            let put = document["paths"]?["/v1/subscribers/{id}"]?["put"]
            #expect(put?["x-scopes"] == ["subscribers:write"])
            #expect(
                put?["responses"]?["422"] != nil && put?["responses"]?["429"] != nil && put?["responses"]?["401"] != nil
            )
            let codes = document["components"]?["schemas"]?["ErrorCode"]?["enum"]?.arrayValue ?? []
            let expected = Set(ErrorCode.all.map(\.rawValue)).union(
                GatewayRoute.table.flatMap(\.errorCodes).map(\.rawValue))
            #expect(Set(codes.compactMap(\.stringValue)) == expected)
            #expect(expected.isSuperset(of: ["installation_required", "forbidden_installation", "installation_exists"]))
            // Client-key routes document the installation header; the registration does not need it.
            let track = document["paths"]?["/v1/events"]?["post"]?["parameters"]?.arrayValue ?? []
            #expect(track.contains { $0["name"] == "BuzzKit-Installation" })
            let register = document["paths"]?["/v1/installations"]?["post"]?["parameters"]?.arrayValue ?? []
            #expect(!register.contains { $0["name"] == "BuzzKit-Installation" })
            #expect(h.gateway.openAPIDocument == document)
        }
    }

    @Test func theDocumentIsValidOpenAPI() async throws {
        let document = OpenAPIDocument.build(routes: GatewayRoute.table)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName("openapi") + ".json")
        try Data(document.jsonBytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        let (status, output) = try await run(python, ["-m", "openapi_spec_validator", file.path])
        #expect(status == 0, "\(output)")
    }

    private func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String) {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("bk_openapi_check_\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try await Subprocess.run([executable] + arguments, outputPath: outputPath)
        return (status, (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
    }
}
