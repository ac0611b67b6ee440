import BuzzKitHTTPServer
import BuzzKitWire
import Foundation
import Testing

@Suite struct HTTPServerLifecycleTests {
    @Test func keepAliveServesSeveralRequestsOverOneConnection() async throws {
        try await withServer(routes: { router in
            router.get("/async/:n") { request in .json(.string(request.pathParameters["n"] ?? "")) }
            router.get("/sync", sync: { _ in .json("sync") })
            router.post("/echo") { request in .json(try request.jsonBody()) }
        }) { _, base in
            let urls = ["\(base)/async/1", "\(base)/sync", "\(base)/missing", "\(base)/async/2", "\(base)/sync"]
            let (exitCode, output) = try await curl(
                ["-s", "-w", "%{http_code} %{num_connects}\n"]
                    + urls.flatMap { ["-o", "/dev/null", $0] })
            #expect(exitCode == 0)
            let lines = output.split(separator: "\n").map { $0.split(separator: " ") }
            #expect(lines.map { String($0[0]) } == ["200", "200", "404", "200", "200"])
            #expect(lines.map { Int($0[1]) ?? -1 }.reduce(0, +) == 1)

            // Requests with bodies keep the connection too.
            let post = ["-d", "{\"a\":1}", "\(base)/echo"]
            let (postExit, postOutput) = try await curl(
                ["-s", "-o", "/dev/null", "-w", "%{num_connects}\n"]
                    + post + ["--next"] + ["-s", "-o", "/dev/null", "-w", "%{num_connects}\n"] + post)
            #expect(postExit == 0)
            #expect(postOutput.split(separator: "\n").compactMap { Int($0) }.reduce(0, +) == 1)
        }
    }

    @Test func gracefulShutdownFinishesInFlightAndRefusesNewConnections() async throws {
        var router = Router()
        router.get("/slow") { _ in
            try await Task.sleep(for: .seconds(1))
            return .json("done")
        }
        let server = HTTPServer(router: router, logger: .silent())
        try server.start()
        let base = "http://127.0.0.1:\(server.port)"

        let inFlight = Task { try await send("GET", "\(base)/slow") }
        // Wait (not a timed assertion) until the server holds the request.
        while server.inFlightRequests == 0 { try await Task.sleep(for: .milliseconds(5)) }
        await server.shutdown()

        let (status, headers, body) = try await inFlight.value
        #expect(status == 200)
        #expect(try Envelope.from(body).data == "done")
        #expect(headers["connection"]?.lowercased() == "close")

        let (exitCode, _) = try await curl(["-s", "-o", "/dev/null", "--max-time", "5", "\(base)/slow"])
        #expect(exitCode == 7)  // curl: failed to connect
        await server.shutdown()  // a second call does nothing
    }

    @Test func shutdownAfterGracePeriodAnswersRemainingRequests() async throws {
        var router = Router()
        router.get("/stuck") { _ in
            try? await Task.sleep(for: .seconds(30))
            return .json("late")
        }
        let server = HTTPServer(
            configuration: .init(shutdownGracePeriod: .milliseconds(200)),
            router: router, logger: .silent())
        try server.start()
        let base = "http://127.0.0.1:\(server.port)"
        let inFlight = Task { try await send("GET", "\(base)/stuck") }
        while server.inFlightRequests == 0 { try await Task.sleep(for: .milliseconds(5)) }
        await server.shutdown()
        let (status, _, body) = try await inFlight.value
        #expect(status == 503)
        #expect(try Envelope.from(body).error?.code == .notReady)
    }

    @Test func manyConcurrentRequestsAreAllAnswered() async throws {
        try await withServer(routes: { router in
            router.get("/item/:n") { request in
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...20)))
                return .json(.string(request.pathParameters["n"] ?? ""))
            }
            router.get("/sync/:n", sync: { request in .json(.string(request.pathParameters["n"] ?? "")) })
        }) { _, base in
            let results = try await getConcurrently(
                (0..<200).map { n in
                    "\(base)/\(n.isMultiple(of: 2) ? "item" : "sync")/\(n)"
                })
            #expect(results.count == 200)
            for (n, result) in results.enumerated() {
                #expect(result.status == 200)
                #expect(result.data == .string(String(n)))
            }
        }
    }
}

@Suite struct HTTPServerRunTests {
    @Test func runServesUntilCancelledThenDrains() async throws {
        var router = Router()
        router.get("/slow") { _ in
            try await Task.sleep(for: .milliseconds(300))
            return .json("done")
        }
        let server = HTTPServer(router: router, logger: .silent())
        try server.start()
        let base = "http://127.0.0.1:\(server.port)"
        let running = Task { try await server.run() }
        let inFlight = Task { try await send("GET", "\(base)/slow") }
        while server.inFlightRequests == 0 { try await Task.sleep(for: .milliseconds(5)) }
        running.cancel()
        try await running.value
        #expect(try await inFlight.value.status == 200)
        #expect(server.port == 0)
    }
}
