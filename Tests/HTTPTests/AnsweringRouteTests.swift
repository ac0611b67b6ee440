import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Dispatch
import Foundation
import Synchronization
import Testing

/// Routes registered with `answering:` decide on the network thread: a response now, a task, or a
/// deferred answer through a `Responder` (the gateway's hot routes join batches this way).
@Suite struct AnsweringRouteTests {
    /// Holds responders until `count` requests arrived, then answers them all in reverse order
    /// from another thread: every request still gets its own answer.
    final class Gate: Sendable {
        let count: Int
        private let waiting = Mutex<[(id: String, responder: Responder)]>([])
        init(count: Int) { self.count = count }

        func arrive(_ id: String, _ responder: Responder) {
            let all = waiting.withLock { waiting -> [(id: String, responder: Responder)]? in
                waiting.append((id, responder))
                return waiting.count == count ? waiting : nil
            }
            guard let all else { return }
            DispatchQueue.global().async {
                for entry in all.reversed() {
                    entry.responder.respond(.json(["id": .string(entry.id)]))
                    entry.responder.respond(.json(["id": "answered twice"]))  // ignored: the first wins
                }
            }
        }
    }

    @Test func nowTaskAndDeferredAnswersAreEnvelopesWithTheirRequestId() async throws {
        try await withServer(routes: { router in
            router.on(
                "GET", "/answer/:how",
                answering: { request in
                    switch request.pathParameters["how"] {
                    case "now": .now(.json("now", headers: ["X-How": "now"]))
                    case "task":
                        .task { _ in
                            try await Task.sleep(for: .milliseconds(1))
                            return .json("task", headers: ["X-How": "task"])
                        }
                    case "deferred":
                        .deferred { responder in
                            DispatchQueue.global().async {
                                responder.respond(.json("deferred", headers: ["X-How": "deferred"]))
                            }
                        }
                    default: .now(.error(APIError(.notFound, "no such answer")))
                    }
                })
        }) { _, base in
            for how in ["now", "task", "deferred"] {
                let (status, headers, body) = try await send(
                    "GET", "\(base)/answer/\(how)", headers: ["X-Request-Id": "req-\(how)"])
                #expect(status == 200)
                #expect(headers["x-how"] == how)
                #expect(headers["x-request-id"] == "req-\(how)")
                let envelope = try Envelope.from(body)
                #expect(envelope.data == .string(how))
                #expect(envelope.metadata["requestId"] == .string("req-\(how)"))
            }
            let (status, _, body) = try await send("GET", "\(base)/answer/other")
            #expect(status == 404)
            #expect(try Envelope.from(body).error?.code == .notFound)
        }
    }

    /// (4 at once: the test client keeps at most 6 connections per host; the deadline turns a
    /// gate that never opens into a failure instead of a hang.)
    @Test func deferredRequestsAnsweredTogetherEachGetTheirOwn() async throws {
        let gate = Gate(count: 4)
        try await withServer(
            configuration: .init(handlerDeadline: .seconds(20)),
            routes: { router in
                router.on(
                    "GET", "/held/:id",
                    answering: { request in
                        let id = request.pathParameters["id"] ?? ""
                        return .deferred { responder in gate.arrive(id, responder) }
                    })
            }
        ) { server, base in
            let ids = (0..<4).map { "r\($0)" }
            let answers = try await getConcurrently(ids.map { "\(base)/held/\($0)" })
            #expect(answers.count == 4)
            for (id, answer) in zip(ids, answers) {
                #expect(answer.status == 200)
                #expect(answer.data == ["id": .string(id)])
            }
            #expect(server.inFlightRequests == 0)
        }
    }

    @Test func behindMiddlewareTheAnswerRunsAsAHandler() async throws {
        try await withServer(routes: { router in
            router.use { request, next in
                var response = try await next(request)
                response.headers.replaceOrAdd(name: "X-Middleware", value: "yes")
                return response
            }
            router.on(
                "GET", "/deferred",
                answering: { _ in
                    .deferred { responder in DispatchQueue.global().async { responder.respond(.json("late")) } }
                })
        }) { _, base in
            let (status, headers, body) = try await send("GET", "\(base)/deferred")
            #expect(status == 200)
            #expect(headers["x-middleware"] == "yes")
            #expect(try Envelope.from(body).data == "late")
        }
    }

    @Test func anUnansweredDeferredRequestGetsTheDeadlineAnswer() async throws {
        try await withServer(
            configuration: .init(handlerDeadline: .milliseconds(100)),
            routes: { router in
                router.on("GET", "/never", answering: { _ in .deferred { _ in } })
            }
        ) { _, base in
            let (status, _, body) = try await send("GET", "\(base)/never")
            #expect(status == 504)
            #expect(try Envelope.from(body).error?.code == .upstreamTimeout)
        }
    }

    @Test func shutdownAnswersWaitingDeferredRequests() async throws {
        var router = Router()
        let arrived = Mutex(false)
        router.on("GET", "/never", answering: { _ in .deferred { _ in arrived.withLock { $0 = true } } })
        let server = HTTPServer(
            configuration: .init(shutdownGracePeriod: .milliseconds(200)), router: router, logger: .silent())
        try server.start()
        let base = "http://127.0.0.1:\(server.port)"
        let request = Task { try await send("GET", "\(base)/never") }
        while !arrived.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        await server.shutdown()
        let (status, _, body) = try await request.value
        #expect(status == 503)
        #expect(try Envelope.from(body).error?.code == .notReady)
    }
}
