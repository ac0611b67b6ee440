import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import GatewayApp

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

    /// Every `$ref` names a schema the document has, every named schema is used, and no module
    /// names one twice (the later would silently replace the earlier).
    @Test func everyReferenceResolvesAndEveryNamedSchemaIsUsed() {
        let document = OpenAPIDocument.build(routes: GatewayRoute.table)
        let schemas = document["components"]?["schemas"]?.objectValue ?? [:]
        var referenced = Set<String>()
        Self.walk(document) { node in
            if let ref = node["$ref"]?.stringValue {
                let name = String(ref.dropFirst("#/components/schemas/".count))
                #expect(ref.hasPrefix("#/components/schemas/") && schemas[name] != nil, "\(ref) names nothing")
                referenced.insert(name)
            }
        }
        for name in schemas.keys where !["ErrorCode", "Error", "ValidationIssue", "Metadata"].contains(name) {
            #expect(referenced.contains(name), "components.schemas.\(name) is never used")
        }
        let named = OpenAPIDocument.namedSchemas.flatMap(\.keys)
        #expect(Set(named).count == named.count, "a schema name is given twice: \(named.sorted())")
    }

    /// No string of a request body may hold U+0000, nor any key: every string a request can carry
    /// states it (a pattern that refuses U+0000, or values that cannot hold it), and every object
    /// that takes members of the caller's choosing names them with such a pattern.
    @Test func requestBodiesStateThatNoStringHoldsNUL() throws {
        let document = OpenAPIDocument.build(routes: GatewayRoute.table)
        let schemas = document["components"]?["schemas"]?.objectValue ?? [:]
        var seen = Set<String>()
        var problems: [String] = []
        func check(_ node: JSONValue, _ path: String) {
            if let ref = node["$ref"]?.stringValue {
                let name = String(ref.dropFirst("#/components/schemas/".count))
                if seen.insert(name).inserted, let target = schemas[name] { check(target, name) }
                return
            }
            guard case .object(let o) = node else { return }
            let types = o["type"]?.stringValue.map { [$0] } ?? (o["type"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            // Values that cannot hold U+0000: a list of them, a UUID, a date-time, or one of BuzzKit's
            // formats (zone names, expressions, keys, cursors: each defined without it).
            let format = o["format"]?.stringValue ?? ""
            let closed =
                o["enum"] != nil || o["const"] != nil || ["uuid", "date-time"].contains(format)
                || format.hasPrefix("buzzkit-")
            if types.contains("string") && !closed {
                if let pattern = o["pattern"]?.stringValue {
                    if let regex = try? NSRegularExpression(pattern: pattern) {
                        for sample in ["\u{0}", "a\u{0}", "\u{0}a", "a:\u{0}", "https://\u{0}", "{{\u{0}", "en\u{0}"] {
                            let range = NSRange(sample.startIndex..., in: sample)
                            if regex.firstMatch(in: sample, range: range) != nil {
                                problems.append("\(path): pattern \(pattern) matches \(sample.debugDescription)")
                            }
                        }
                    } else {
                        problems.append("\(path): pattern \(pattern) does not compile")
                    }
                } else if o["anyOf"] == nil && o["oneOf"] == nil {
                    problems.append("\(path): a string with no pattern")
                }
            }
            if types.contains("object") {
                let extra = o["additionalProperties"]
                if extra != .bool(false) && o["propertyNames"]?["pattern"] != .string(Schema.withoutNUL) {
                    problems.append("\(path): an open object whose keys may hold U+0000")
                }
                if extra == .bool(true) { problems.append("\(path): additionalProperties true (any JSON, U+0000 too)") }
            }
            // Conditionals (allOf of if/then, not) only narrow the shape: what a body may hold is below
            // properties, items, additionalProperties and the unions.
            let skipped = [
                "enum", "const", "example", "x-rules", "description", "required", "allOf", "if", "then", "else", "not"
            ]
            for (key, value) in o where !skipped.contains(key) {
                switch value {
                case .object(let members) where key == "properties":
                    for (name, member) in members { check(member, path + "." + name) }
                case .object: check(value, path + "/" + key)
                case .array(let items): for (i, item) in items.enumerated() { check(item, path + "/\(key)[\(i)]") }
                default: break
                }
            }
        }
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for (method, operation) in item.objectValue ?? [:] {
                if let body = operation["requestBody"]?["content"]?["application/json"]?["schema"] {
                    check(body, "\(method.uppercased()) \(path)")
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.sorted().joined(separator: "\n"))")
        #expect(seen.contains("JSONValue") && seen.contains("SendMessageRequest"))
    }

    /// A time zone is a string the server checks against its zone database (a 600-value enum made
    /// generators fail on names like GMT0 and GMT-0, and tied clients to one release of the
    /// database): format `buzzkit-time-zone`, the format alone (see `Schema.custom`), and no zone
    /// list anywhere in the document.
    @Test func aTimeZoneIsAStringOfItsOwnFormat() throws {
        let document = OpenAPIDocument.build(routes: GatewayRoute.table)
        let zone = try #require(document["components"]?["schemas"]?["TimeZone"]?.objectValue)
        #expect(Set(zone.keys) == ["type", "format", "description", "example"])
        #expect(zone["type"] == "string" && zone["format"] == "buzzkit-time-zone")
        #expect(TimeZoneNames.isKnown(zone["example"]?.stringValue ?? ""))
        #expect(TimeZoneNames.all.count > 300)
        let text = String(decoding: document.jsonBytes, as: UTF8.self)
        #expect(!text.contains("Africa/Abidjan") && !text.contains("GMT0"))
    }

    /// Request bodies and answers a client generator makes types of are objects with members, not
    /// unions at their top (a union made openapi-python-client drop members into extra properties).
    @Test func requestSchemasAreObjectsWithMembers() {
        let document = OpenAPIDocument.build(routes: GatewayRoute.table)
        let schemas = document["components"]?["schemas"]?.objectValue ?? [:]
        for name in [
            "SendMessageRequest", "PreviewMessageRequest", "LiveActivitySendRequest", "WorkflowDefinition",
            "WorkflowStep", "WorkflowSend", "EventBatch", "Message", "Delivery", "DeliveryDetail"
        ] {
            let schema = schemas[name]
            #expect(schema?["type"] == "object" && schema?["properties"]?.objectValue?.isEmpty == false, "\(name)")
            #expect(schema?["oneOf"] == nil && schema?["anyOf"] == nil, "\(name) is a union at its top")
        }
    }

    static func walk(_ node: JSONValue, _ visit: (JSONValue) -> Void) {
        visit(node)
        switch node {
        case .object(let members): for value in members.values { walk(value, visit) }
        case .array(let items): for item in items { walk(item, visit) }
        default: break
        }
    }

    private func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String) {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("bk_openapi_check_\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try await Subprocess.run([executable] + arguments, outputPath: outputPath)
        return (status, (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
    }
}
