import BuzzKitCore
import BuzzKitWire
import Testing

@testable import BuzzKitHTTPServer

@Suite struct RouterTests {
    private func router() -> Router {
        var router = Router()
        router.get("/v1/subscribers/:id") { _ in .json(nil) }
        router.delete("/v1/subscribers/:id") { _ in .json(nil) }
        router.get("/v1/subscribers/:id/devices/:token") { _ in .json(nil) }
        router.get("/v1/messages/search") { _ in .json(nil) }
        router.post("/v1/messages/:id") { _ in .json(nil) }
        router.get("/healthz", sync: { _ in .text("ok") })
        return router
    }

    @Test(arguments: [
        ("GET", "/v1/subscribers/abc", "/v1/subscribers/:id", ["id": "abc"]),
        ("GET", "/v1/subscribers/abc/", "/v1/subscribers/:id", ["id": "abc"]),
        (
            "GET", "/v1/subscribers/a%20b%2Fc/devices/t%C3%A9", "/v1/subscribers/:id/devices/:token",
            ["id": "a b/c", "token": "té"]
        ),
        ("GET", "/v1/messages/search", "/v1/messages/search", [:]),
        ("POST", "/v1/messages/search", "/v1/messages/:id", ["id": "search"]),
        ("HEAD", "/healthz", "/healthz", [:])
    ])
    func matches(method: String, path: String, pattern: String, parameters: [String: String]) {
        guard case .found(let route, let bound) = router().match(method: method, path: path) else {
            Issue.record("\(method) \(path) did not match")
            return
        }
        #expect(route.pattern == pattern)
        #expect(bound == parameters)
    }

    @Test func unknownPathIsNotFound() {
        guard case .notFound = router().match(method: "GET", path: "/v1/nothing") else {
            Issue.record("expected notFound")
            return
        }
        guard case .notFound = router().match(method: "GET", path: "/v1/subscribers/a/b") else {
            Issue.record("expected notFound for a deeper path")
            return
        }
    }

    @Test func wrongMethodListsAllowedMethods() {
        guard case .methodNotAllowed(let allow) = router().match(method: "PUT", path: "/v1/subscribers/x") else {
            Issue.record("expected methodNotAllowed")
            return
        }
        #expect(allow == ["DELETE", "GET", "HEAD"])
    }

    /// With `literalPathsAreResources` a literal path is its own resource: another method is 405
    /// with its methods, not a fall-through to `/v1/messages/:id` (which the default keeps, above).
    @Test func aLiteralPathCanBeItsOwnResource() {
        var exclusive = router()
        exclusive.literalPathsAreResources = true
        guard case .methodNotAllowed(let allow) = exclusive.match(method: "POST", path: "/v1/messages/search") else {
            Issue.record("expected methodNotAllowed")
            return
        }
        #expect(allow == ["GET", "HEAD"])
        guard case .found = exclusive.match(method: "POST", path: "/v1/messages/other") else {
            Issue.record("expected the pattern route")
            return
        }
    }

    @Test func syncRouteIsInlineOnlyWithoutMiddleware() {
        var router = Router()
        router.get("/before", sync: { _ in .text("a") })
        router.use { request, next in try await next(request) }
        router.get("/after", sync: { _ in .text("b") })
        guard case .found(let before, _) = router.match(method: "GET", path: "/before"),
            case .found(let after, _) = router.match(method: "GET", path: "/after")
        else {
            Issue.record("routes did not match")
            return
        }
        #expect(before.inline != nil)
        #expect(after.inline == nil)
    }

    @Test func queryStringParsing() {
        let items = QueryString.parse("cursor=a%2Bb&q=x+y&flag&=empty&limit=10&limit=20")
        #expect(items.map(\.name) == ["cursor", "q", "flag", "", "limit", "limit"])
        #expect(items.map(\.value) == ["a+b", "x y", "", "empty", "10", "20"])
        let request = Request(method: "GET", path: "/", rawQuery: "limit=10&limit=20&bad=%zz")
        #expect(request.query["limit"] == "20")
        #expect(request.query["bad"] == "%zz")
    }

    @Test(arguments: [
        ("abc-123", true), ("a.b_c:d", true), ("", false), ("has space", false),
        (String(repeating: "x", count: 129), false), ("<script>", false)
    ])
    func requestIdValidation(id: String, valid: Bool) {
        #expect(RequestID.isValid(id) == valid)
        let request = Request(method: "GET", path: "/", headers: ["x-request-id": id])
        #expect((request.requestId == id) == valid)
        #expect(RequestID.isValid(request.requestId))
    }

    @Test func headersAreCaseInsensitive() {
        var headers: HTTPHeaders = ["Content-Type": "application/json", "X-A": "1"]
        headers.add(name: "x-a", value: "2")
        #expect(headers["content-type"] == "application/json")
        #expect(headers["X-a"] == "1, 2")
        headers.replaceOrAdd(name: "X-A", value: "3")
        #expect(headers["x-a"] == "3")
        #expect(headers["missing"] == nil)
    }

    @Test func jsonBodyErrors() throws {
        let empty = Request(method: "POST", path: "/")
        #expect(throws: APIError.self) { try empty.jsonBody() }
        #expect(try empty.jsonBodyIfPresent() == nil)
        let broken = Request(method: "POST", path: "/", body: Array("{\"a\":".utf8))
        do {
            _ = try broken.jsonBody()
            Issue.record("expected invalid_json")
        } catch {
            #expect(error.code == .invalidJSON)
        }
        let good = Request(method: "POST", path: "/", body: Array("{\"a\":1}".utf8))
        #expect(try good.jsonBody() == ["a": 1])
    }
}
