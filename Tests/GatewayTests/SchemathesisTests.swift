import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPClient
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// The API document against the real gateway, the way a new user would try it: schemathesis
/// (pinned in `deploy/lib/common.sh`) reads `GET /openapi.json`, generates requests the document
/// calls valid and requests it calls invalid, and checks every answer with every check it has
/// (`--checks all`: valid data accepted, invalid data refused, statuses, content types and
/// response schemas as documented, auth not ignored, no 5xx, ...).
///
/// The stack is real and the test's own: the gateway and ingest executables on a schema of the
/// shared Postgres and a Redis of their own, a bootstrapped workspace whose demo tenant has APNs
/// credentials, and a little data (a subscriber with a device and events, a topic, a segment, a
/// message) so the stateful phase follows links to things that exist. Rate limiting is off in
/// this gateway (`BUZZKIT_RATE_LIMIT_ENABLED=false`): a few thousand requests in a minute must
/// not make 429 what a check sees. Deterministic: a fixed seed and `maxExamples` examples per
/// operation (40, the bar; `BUZZKIT_SCHEMATHESIS_MAX_EXAMPLES` lowers it for a quick local run).
///
/// Every rule is in the document. `Tests/Fixtures/schemathesis/hooks.py` teaches schemathesis
/// only BuzzKit's own formats (zone names, expressions, keys, moments against the clock) and
/// rewrites no request. Two runs:
/// - a workspace key naming the tenant in `BuzzKit-Tenant` (every route), with the opaque
///   `buzzkit-cursor` untaught: schemathesis then sends cursors no list returned, the gateway
///   answers 422 `validation_failed` on `cursor`, and that is the one finding allowed (the
///   documented exception: only a cursor a list returned is valid, which no schema can list);
/// - a tenant key, for which the generated `BuzzKit-Tenant` values (malformed ones included) must
///   be refused, with the cursor taught (empty), so nothing hides behind that exception.
/// In both, a workflow definition refused only for the rules its steps keep across each other
/// (templates, references to earlier steps, unique names: `x-rules`, no schema states them) is the
/// second documented exception; nothing else is allowed.
@Suite("Gateway API document, checked by schemathesis", .serialized, .requiresTestStack)
struct SchemathesisTests {
    static let seed = "20261202"
    static var maxExamples: String {
        ProcessInfo.processInfo.environment["BUZZKIT_SCHEMATHESIS_MAX_EXAMPLES"] ?? "40"
    }

    @Test func theRealGatewayDoesWhatItsDocumentSays() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["TEST_PYTHON"], "run with ./deploy/test")
        let schemathesis = URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent(
            "schemathesis"
        ).path
        let stack = try await SchemathesisStack()
        do {
            let runs: [(name: String, headers: [String], cursor: String)] = [
                (
                    "workspace key + BuzzKit-Tenant, cursor untaught",
                    [
                        "Authorization: Bearer \(stack.workspaceKey)",
                        "BuzzKit-Tenant: \(stack.tenantID.lowercasedText)"
                    ], "untaught"
                ),
                ("tenant key, cursor taught", ["Authorization: Bearer \(stack.tenantKey)"], "empty")
            ]
            for run in runs {
                // The categories hooks.py names, as the run before may have left them.
                try await stack.seedCategories()
                let fixtures = TestEnvironment.repositoryRoot + "/Tests/Fixtures/schemathesis"
                var arguments = [
                    "--config-file", fixtures + "/schemathesis.toml", "--no-color",
                    "run", stack.gatewayURL + "/openapi.json", "--checks", "all", "--seed", Self.seed,
                    "--max-examples", Self.maxExamples, "--workers", "1", "--output-truncate", "false",
                    // How fast hypothesis draws data depends on the machine and its load, not on the API.
                    "--suppress-health-check", "too_slow"
                ]
                for header in run.headers { arguments += ["-H", header] }
                let process = try ServiceProcess(
                    path: schemathesis, name: "schemathesis",
                    environment: [
                        "SCHEMATHESIS_HOOKS": "hooks",
                        "PYTHONPATH": fixtures,
                        "BUZZKIT_SCHEMATHESIS_CURSOR": run.cursor,
                        "BUZZKIT_SCHEMATHESIS_KEEP_KEYS": stack.keyIDs.joined(separator: ",")
                    ], arguments: arguments)
                let status = await process.waitForExit(timeout: .seconds(1800))
                if status == nil { process.signal(SIGKILL) }
                let output = process.output
                // Every operation of the document was tried (none left out, none only skipped).
                let total = Self.operationTotal(output)
                #expect(
                    total > 0 && output.contains("Tested: \(total)\n"),
                    "schemathesis (\(run.name)) did not test every operation:\n\(output)")
                #expect(status != nil, "schemathesis (\(run.name)) did not finish:\n\(output)")
                #expect(!output.contains("ERRORS"), "schemathesis (\(run.name)) could not test:\n\(output)")
                let findings = SchemathesisFindings(output)
                let unexpected = findings.cases.filter {
                    !(run.cursor == "untaught" && $0.isOpaqueCursorRefused) && !$0.isWorkflowCrossStepRuleRefused
                }
                #expect(
                    unexpected.isEmpty && (status == 0 || !findings.cases.isEmpty),
                    "schemathesis (\(run.name)) found failures:\n\(Self.report(output))")
                if run.cursor == "untaught" {
                    // The exception is real where it is claimed: lists refuse a cursor they never returned.
                    #expect(
                        findings.cases.contains { $0.isOpaqueCursorRefused },
                        "no list refused an untaught cursor:\n\(Self.report(output))")
                }
            }
        } catch {
            await stack.close()
            throw error
        }
        await stack.close()
    }

    /// The number of operations the document lists, from the summary's `Selected: N/N`.
    static func operationTotal(_ output: String) -> Int {
        guard let start = output.range(of: "Selected: ") else { return 0 }
        let line = output[start.upperBound...].prefix { $0 != "\n" }
        return line.split(separator: "/").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
    }

    /// The failures and the summary of a run (schemathesis prints the failing requests as curl commands).
    static func report(_ output: String) -> String {
        guard let start = output.range(of: "FAILURES") ?? output.range(of: "ERRORS") else { return output }
        return String(output[start.lowerBound...])
    }
}

/// The failing test cases of a schemathesis report: for each, the checks that failed and the
/// answer. Read from its text (`- ST202 Schema-valid request rejected`, then `[422] ...:` and the
/// body in backquotes).
struct SchemathesisFindings {
    struct Case {
        var operation: String
        var checks: [String]
        var status: Int?
        var body: JSONValue?

        /// A request schemathesis called valid that was refused only for its `cursor`: 422
        /// `validation_failed` whose every detail is on `cursor`.
        var isOpaqueCursorRefused: Bool {
            guard checks.allSatisfy({ $0.hasPrefix("ST202 ") }), !checks.isEmpty, status == 422,
                body?["error"]?["code"] == "validation_failed",
                let details = body?["error"]?["details"]?.arrayValue, !details.isEmpty
            else { return false }
            return details.allSatisfy { $0["path"] == "cursor" }
        }

        /// A workflow definition schemathesis called valid that was refused only for the rules a
        /// definition's steps keep across each other (its `x-rules`: a template that parses, a
        /// condition naming an earlier step, names unique in the whole tree, ...), which no schema
        /// states: 422 `validation_failed` on `PUT /v1/workflows/{key}` whose every detail lies in the
        /// steps or the cancel rules. The second documented exception (docs/api-clients.md).
        var isWorkflowCrossStepRuleRefused: Bool {
            guard operation == "PUT /v1/workflows/{key}", checks.allSatisfy({ $0.hasPrefix("ST202 ") }),
                !checks.isEmpty, status == 422, body?["error"]?["code"] == "validation_failed",
                let details = body?["error"]?["details"]?.arrayValue, !details.isEmpty
            else { return false }
            return details.allSatisfy {
                let path = $0["path"]?.stringValue ?? ""
                return path.hasPrefix("steps[") || path.hasPrefix("cancelOn[")
            }
        }
    }

    var cases: [Case] = []

    init(_ output: String) {
        guard let start = output.range(of: "FAILURES") else { return }
        var section = String(output[start.upperBound...])
        if let end = section.range(of: "\n=====") { section = String(section[..<end.lowerBound]) }
        var operation = ""
        var current: Case?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("___") {
                if let current { cases.append(current) }
                current = nil
                operation = text.trimmingCharacters(in: CharacterSet(charactersIn: "_ "))
            } else if text.range(of: #"^\d+\. Test Case ID"#, options: .regularExpression) != nil {
                if let current { cases.append(current) }
                current = Case(operation: operation, checks: [])
            } else if text.hasPrefix("- ST") {
                current?.checks.append(String(text.dropFirst(2)))
            } else if text.hasPrefix("["), let close = text.firstIndex(of: "]"), current?.status == nil {
                current?.status = Int(text[text.index(after: text.startIndex)..<close])
            } else if text.hasPrefix("`{"), text.hasSuffix("}`"), current?.body == nil {
                current?.body = try? JSONValue.parse(Array(text.dropFirst().dropLast().utf8))
            }
        }
        if let current { cases.append(current) }
    }
}

/// The processes and data of one schemathesis run; `close()` stops the processes and drops the schema.
final class SchemathesisStack: Sendable {
    let schema: String
    let postgres: PostgresClient
    let redis: ThrowawayRedis
    let gateway: ServiceProcess
    let ingest: ServiceProcess
    /// Answers `POST /v1/live-activities/send`; its APNs host is a closed port with one attempt,
    /// so a send fails at once (`failed`, apns_unreachable) instead of retrying past the deadline.
    let liveActivity: ServiceProcess
    let http: HTTPClient
    let gatewayURL: String
    let workspaceKey: String
    let tenantKey: String
    let tenantID: UUID
    /// Every key the bootstrap made: the run must not revoke the keys it runs with.
    let keyIDs: [String]
    let segment = "vip"

    init() async throws {
        schema = TestEnvironment.uniqueName("st")
        postgres = try await PostgresTestSupport.client(schema: schema, poolSize: 1)
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        let key = ES256PrivateKey.generate()
        let secret = SecureRandom.bytes(32)
        let bootstrap = try await Bootstrapper(postgres: postgres, secretKey: secret).run(
            workspace: "schemathesis",
            demo: .init(
                name: "demo", teamID: "TEAM000001", keyID: "KEY0000001",
                privateKey: key.pem, bundleID: "com.example.app", environment: "sandbox"))
        workspaceKey = bootstrap.workspaceKey
        tenantKey = try #require(bootstrap.tenantKey)
        tenantID = try #require(bootstrap.tenantID)
        keyIDs = try await postgres.query("SELECT id::text FROM api_keys").map { try $0.decode(String.self, at: 0) }
        redis = try await ThrowawayRedis.launch()
        let separator = TestEnvironment.postgresURL.contains("?") ? "&" : "?"
        let common = [
            "BUZZKIT_DATABASE_URL": TestEnvironment.postgresURL + separator + "search_path=" + schema,
            "BUZZKIT_REDIS_URL": redis.url, "BUZZKIT_SECRET_KEY": Data(secret).base64EncodedString(),
            "BUZZKIT_LOG_LEVEL": "warning", "BUZZKIT_DB_POOL_SIZE": "2"
        ]
        let port = freeLoopbackPort()
        gatewayURL = "http://127.0.0.1:\(port)"
        gateway = try ServiceProcess(
            executable: "gateway",
            environment: common.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_RATE_LIMIT_ENABLED": "false",
                // Webhook endpoints on loopback (hooks.py's buzzkit-webhook-url); nothing sends to them here.
                "BUZZKIT_WEBHOOKS_ALLOW_PRIVATE": "true"
            ]) { _, new in new })
        let ingestPort = freeLoopbackPort()
        ingest = try ServiceProcess(
            executable: "ingest",
            environment: common.merging([
                "BUZZKIT_HTTP_PORT": String(ingestPort), "BUZZKIT_INGEST_CONSUMERS": "1"
            ]) { _, new in new })
        let liveActivityPort = freeLoopbackPort()
        liveActivity = try ServiceProcess(
            executable: "liveactivity",
            environment: common.merging([
                "BUZZKIT_HTTP_PORT": String(liveActivityPort), "BUZZKIT_APNS_SANDBOX_URL": "https://127.0.0.1:1",
                "BUZZKIT_APNS_PRODUCTION_URL": "https://127.0.0.1:1", "BUZZKIT_APNS_MAX_ATTEMPTS": "1"
            ]) { _, new in new })
        http = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await waitReady(gatewayURL, gateway)
        try await waitReady("http://127.0.0.1:\(ingestPort)", ingest)
        try await waitReady("http://127.0.0.1:\(liveActivityPort)", liveActivity)
        try await seed()
    }

    /// A subscriber with a device and events, a topic with it, the segment messages may name, a message, a
    /// workflow, a webhook endpoint.
    private func seed() async throws {
        let token = Hex.string(Digest.sha256(Array("schemathesis".utf8)))
        try await send("PUT", "/v1/subscribers/alice", ["attributes": ["plan": "pro"], "timezone": "Europe/Berlin"])
        try await send(
            "PUT", "/v1/subscribers/alice/devices/\(token)", ["environment": "sandbox", "bundleId": "com.example.app"])
        try await send("PUT", "/v1/topics/news", ["name": "News"])
        try await send("POST", "/v1/topics/news/subscribers", ["ids": ["alice"]])
        try await send("PUT", "/v1/segments/\(segment)", ["name": "VIP", "where": #"plan == "pro""#])
        try await send(
            "POST", "/v1/events",
            [
                "subscriberId": "alice",
                "events": [
                    [
                        "id": "seed-1", "name": "app.opened",
                        "timestamp": .string(ISO8601DateFormatter().string(from: Date()))
                    ]
                ]
            ])
        try await send("POST", "/v1/messages", ["to": "alice", "title": "Hello", "body": "From the schemathesis run"])
        // What hooks.py points Live Activity sends at: an activity and a push-to-start token of alice.
        try await send(
            "PUT", "/v1/subscribers/alice/live-activities/act-seed",
            ["attributesType": "MatchAttributes", "token": .string(token), "environment": "sandbox"])
        try await send(
            "PUT", "/v1/subscribers/alice/live-activity-start-tokens/MatchAttributes",
            ["token": .string(token), "environment": "sandbox"])
        try await send(
            "PUT", "/v1/workflows/welcome",
            [
                "trigger": ["event": "app.opened"],
                "steps": [
                    ["name": "pause", "wait": ["duration": "1h"]], ["name": "hello", "send": ["title": "Welcome back"]]
                ]
            ])
        try await send(
            "POST", "/v1/webhooks", ["url": "http://127.0.0.1:9/hooks/seed", "events": ["receipt.opened"]])
        try await seedCategories()
    }

    /// The categories hooks.py names (buzzkit-category-key), kept from deletion by an enabled
    /// workflow that sends in both; seeded again before each run (the stateful phase of the one
    /// before may have deleted the workflow and then the categories).
    func seedCategories() async throws {
        try await send("PUT", "/v1/categories/news", ["name": "News"])
        try await send("PUT", "/v1/categories/offers", ["name": "Offers", "defaultEnabled": false])
        try await send(
            "PUT", "/v1/workflows/category-keeper",
            [
                "enabled": true, "trigger": ["event": "category.kept"],
                "steps": [
                    ["name": "first", "send": ["title": "News", "category": "news"]],
                    ["name": "second", "send": ["title": "Offers", "category": "offers"]]
                ]
            ])
    }

    private func send(_ method: String, _ path: String, _ body: JSONValue) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(tenantKey)")
        headers.add(name: "Content-Type", value: "application/json")
        let response = try await http.execute(
            HTTPClientRequest(
                method: HTTPMethod(rawValue: method), url: gatewayURL + path,
                headers: headers, body: body.jsonBytes))
        guard (200..<300).contains(response.status) else {
            throw HarnessError(
                description:
                    "seeding \(method) \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    private func waitReady(_ base: String, _ process: ServiceProcess) async throws {
        let ready = try await RedisTestSupport.eventually(limit: .seconds(60)) {
            guard process.isRunning else { return true }
            let response = try? await http.execute(HTTPClientRequest(url: base + "/readyz"))
            return response?.status == 200
        }
        guard ready, process.isRunning else {
            throw HarnessError(description: "\(process.name) not ready: \(process.output)")
        }
    }

    func close() async {
        for process in [gateway, ingest, liveActivity] { process.signal(SIGTERM) }
        for process in [gateway, ingest, liveActivity] { _ = await process.waitForExit(timeout: .seconds(15)) }
        await http.shutdown()
        redis.stop()
        try? await postgres.execute("DROP SCHEMA \"\(schema)\" CASCADE")
        await postgres.shutdown()
    }
}
