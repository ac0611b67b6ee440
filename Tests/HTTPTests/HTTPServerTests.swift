import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization
import Testing

struct Boom: Error, CustomStringConvertible {
    var description: String { "secret-internal-detail" }
}

@Suite struct HTTPServerTests {
    @Test func routesWithPathParametersAndQuery() async throws {
        try await withServer(routes: { router in
            router.get("/v1/subscribers/:id/devices/:token") { request in
                .json([
                    "id": .string(request.pathParameters["id"] ?? ""),
                    "token": .string(request.pathParameters["token"] ?? ""),
                    "cursor": .string(request.query["cursor"] ?? ""),
                    "q": .string(request.query["q"] ?? ""),
                    "route": .string(request.routePattern)
                ])
            }
        }) { _, base in
            let (status, _, body) = try await send(
                "GET", "\(base)/v1/subscribers/user%201/devices/abc%2Fdef?cursor=a%2Bb&q=x+y")
            #expect(status == 200)
            let envelope = try Envelope.from(body)
            #expect(
                envelope.data == [
                    "id": "user 1", "token": "abc/def", "cursor": "a+b", "q": "x y",
                    "route": "/v1/subscribers/:id/devices/:token"
                ])
        }
    }

    @Test func successEnvelopeCarriesRequestId() async throws {
        try await withServer(routes: { router in
            router.get("/hello") { _ in .json(["message": "hello"], metadata: ["hasMore": false]) }
        }) { _, base in
            let (status, headers, body) = try await send("GET", "\(base)/hello")
            #expect(status == 200)
            #expect(headers["content-type"] == "application/json; charset=utf-8")
            let object = try #require(try JSONValue.parse(body).objectValue)
            #expect(Set(object.keys) == ["success", "data", "error", "metadata"])
            #expect(object["success"] == true)
            #expect(object["error"] == .null)
            #expect(object["data"] == ["message": "hello"])
            let requestId = try #require(headers["x-request-id"])
            #expect(!requestId.isEmpty)
            #expect(object["metadata"] == ["requestId": .string(requestId), "hasMore": false])
        }
    }

    @Test func incomingRequestIdIsEchoedAndInvalidOnesReplaced() async throws {
        try await withServer(routes: { router in
            router.get("/hello") { request in .json(.string(request.requestId)) }
            router.get("/fail") { _ in throw APIError(.conflict, "already there") }
        }) { _, base in
            for path in ["/hello", "/fail", "/missing"] {
                let (_, headers, body) = try await send("GET", base + path, headers: ["X-Request-Id": "req-abc.123"])
                #expect(headers["x-request-id"] == "req-abc.123")
                #expect(try Envelope.from(body).metadata["requestId"] == "req-abc.123")
            }
            let (_, headers, _) = try await send("GET", "\(base)/hello", headers: ["X-Request-Id": "not valid!"])
            let replaced = try #require(headers["x-request-id"])
            #expect(replaced != "not valid!" && !replaced.isEmpty)
        }
    }

    @Test func unknownPathIsNotFound() async throws {
        try await withServer(routes: { router in router.get("/hello") { _ in .json(nil) } }) { _, base in
            let (status, headers, body) = try await send("GET", "\(base)/v1/nothing")
            #expect(status == 404)
            let envelope = try Envelope.from(body)
            #expect(envelope.success == false)
            #expect(envelope.error?.code == .notFound)
            #expect(headers["x-request-id"] != nil)
            #expect(envelope.metadata["requestId"] == headers["x-request-id"].map { .string($0) })
        }
    }

    @Test func wrongMethodIs405WithAllow() async throws {
        try await withServer(routes: { router in
            router.get("/v1/things/:id") { _ in .json(nil) }
            router.delete("/v1/things/:id") { _ in .json(nil) }
        }) { _, base in
            let (status, headers, body) = try await send("POST", "\(base)/v1/things/1", body: Array("{}".utf8))
            #expect(status == 405)
            #expect(headers["allow"] == "DELETE, GET, HEAD")
            #expect(try Envelope.from(body).error?.code == .methodNotAllowed)
            #expect(headers["x-request-id"] != nil)
        }
    }

    @Test(arguments: ["{\"a\":", "not json", ""])
    func invalidJSONIs400(body: String) async throws {
        try await withServer(routes: { router in
            router.post("/echo") { request in .json(try request.jsonBody()) }
        }) { _, base in
            let (status, headers, bytes) = try await send("POST", "\(base)/echo", body: Array(body.utf8))
            #expect(status == 400)
            let envelope = try Envelope.from(bytes)
            #expect(envelope.error?.code == .invalidJSON)
            #expect(envelope.error?.message.isEmpty == false)
            #expect(headers["x-request-id"] != nil)
        }
    }

    @Test func validJSONBodyRoundTrips() async throws {
        try await withServer(routes: { router in
            router.post("/echo") { request in .json(try request.jsonBody(), status: 201) }
        }) { _, base in
            let (status, _, bytes) = try await send("POST", "\(base)/echo", body: Array("{\"n\":[1,2.5,\"x\"]}".utf8))
            #expect(status == 201)
            #expect(try Envelope.from(bytes).data == ["n": [1, 2.5, "x"]])
        }
    }

    @Test(arguments: [false, true])
    func bodyOverLimitIs413(chunked: Bool) async throws {
        let limit = 1024
        try await withServer(
            configuration: .init(maxBodyBytes: limit),
            routes: { router in
                router.post("/upload") { request in .json(.int(Int64(request.body.count))) }
            }
        ) { _, base in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("body"))
            try Data(repeating: 0x61, count: 4 * limit).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            var arguments = ["-s", "-X", "POST", "--data-binary", "@\(file.path)", "-D", "-", "\(base)/upload"]
            if chunked { arguments += ["-H", "Transfer-Encoding: chunked"] }
            let (exitCode, output) = try await curl(arguments)
            #expect(exitCode == 0)
            #expect(output.hasPrefix("HTTP/1.1 413"))
            #expect(output.lowercased().contains("x-request-id: "))
            let body = try #require(output.range(of: "\r\n\r\n").map { String(output[$0.upperBound...]) })
            let envelope = try Envelope.from(Array(body.utf8))
            #expect(envelope.error?.code == .payloadTooLarge)
            #expect(envelope.error?.details == ["limitBytes": .int(Int64(limit))])

            // At the limit it is accepted.
            let (status, _, bytes) = try await send(
                "POST", "\(base)/upload", body: [UInt8](repeating: 0x61, count: limit))
            #expect(status == 200)
            #expect(try Envelope.from(bytes).data == .int(Int64(limit)))
        }
    }

    @Test func unexpectedThrowIs500WithoutLeakingAndIsLogged() async throws {
        let sink = CapturingSink()
        try await withServer(
            logger: Logger(label: "test", logLevel: .debug, sink: sink),
            routes: { router in
                router.get("/boom") { _ in throw Boom() }
                router.get("/boom-sync", sync: { _ in throw Boom() })
            }
        ) { _, base in
            for path in ["/boom", "/boom-sync"] {
                let (status, headers, body) = try await send("GET", base + path)
                #expect(status == 500)
                let text = String(decoding: body, as: UTF8.self)
                #expect(!text.contains("secret-internal-detail"))
                let envelope = try Envelope.from(body)
                #expect(envelope.error?.code == .internalError)
                let requestId = try #require(headers["x-request-id"])
                #expect(sink.captured.contains { $0.contains(requestId) && $0.contains("secret-internal-detail") })
            }
        }
    }

    @Test func thrownAPIErrorBecomesItsEnvelope() async throws {
        try await withServer(routes: { router in
            router.get("/conflict") { _ in throw APIError(.conflict, "it exists", details: ["id": "x"]) }
        }) { _, base in
            let (status, _, body) = try await send("GET", "\(base)/conflict")
            #expect(status == 409)
            let envelope = try Envelope.from(body)
            #expect(envelope.error == APIError(.conflict, "it exists", details: ["id": "x"]))
        }
    }

    @Test func textAndPrometheusResponses() async throws {
        try await withServer(routes: { router in
            router.get("/metrics", sync: { _ in .prometheus("bk_up 1\n") })
        }) { _, base in
            let (status, headers, body) = try await send("GET", "\(base)/metrics")
            #expect(status == 200)
            #expect(headers["content-type"] == "text/plain; version=0.0.4")
            #expect(headers["x-request-id"] != nil)
            #expect(String(decoding: body, as: UTF8.self) == "bk_up 1\n")
        }
    }

    @Test func middlewareWrapsLaterRoutesOnly() async throws {
        try await withServer(routes: { router in
            router.get("/healthz", sync: { _ in .text("ok") })
            router.use { request, next in
                guard request.headers["authorization"] == "Bearer good" else {
                    throw APIError(.unauthorized, "missing or invalid key")
                }
                var response = try await next(request)
                response.headers.replaceOrAdd(name: "X-Middleware", value: "yes")
                return response
            }
            router.get("/private") { _ in .json("secret") }
        }) { _, base in
            #expect(try await send("GET", "\(base)/healthz").status == 200)
            let denied = try await send("GET", "\(base)/private")
            #expect(denied.status == 401)
            #expect(try Envelope.from(denied.body).error?.code == .unauthorized)
            let allowed = try await send("GET", "\(base)/private", headers: ["Authorization": "Bearer good"])
            #expect(allowed.status == 200)
            #expect(allowed.headers["x-middleware"] == "yes")
        }
    }

    @Test func observerSeesRoutePatternStatusAndDuration() async throws {
        let logs = Mutex<[RequestLog]>([])
        try await withServer(
            observer: { log in logs.withLock { $0.append(log) } },
            routes: { router in
                router.get("/v1/subscribers/:id") { _ in .json(nil) }
            }
        ) { _, base in
            _ = try await send("GET", "\(base)/v1/subscribers/42")
            _ = try await send("GET", "\(base)/v1/zzz")
        }
        let seen = logs.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen.first?.route == "/v1/subscribers/:id")
        #expect(seen.first?.status == 200)
        #expect(seen.first?.method == "GET")
        #expect((seen.first?.duration ?? .zero) > .zero)
        #expect(seen.last?.route == RequestLog.unmatchedRoute)
        #expect(seen.last?.status == 404)
    }

    @Test func handlerDeadlineAnswers504() async throws {
        try await withServer(
            configuration: .init(handlerDeadline: .milliseconds(100)),
            routes: { router in
                router.get("/slow") { _ in
                    try await Task.sleep(for: .seconds(30))
                    return .json(nil)
                }
            }
        ) { _, base in
            let (status, _, body) = try await send("GET", "\(base)/slow")
            #expect(status == 504)
            #expect(try Envelope.from(body).error?.code == .upstreamTimeout)
        }
    }

    @Test func portZeroPicksAPortAndStartTwiceFails() async throws {
        try await withServer(routes: { _ in }) { server, _ in
            #expect(server.port > 0)
            #expect(throws: HTTPServerError.self) { try server.start() }
        }
    }
}
