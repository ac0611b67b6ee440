import BuzzKitCore
import BuzzKitHTTPServer
import BuzzKitWire
import Foundation
import Synchronization

/// `buzzkit-bench webhook-sink --port N [--threads 2]`: a receiver for bench/webhooks.sh. Answers
/// every `POST /hook` with 204 and counts the requests, the deliveries they carry (occurrences of
/// `"deliveryId"` in the body: a `delivery.sent` batch carries up to 100) and the distinct
/// `webhook-id`s; `GET /count` answers `{"requests", "deliveries", "ids", "firstAt", "lastAt"}`
/// (Unix seconds with fractions). It checks no signature (the tests verify those with the
/// `standardwebhooks` package): it is the measurement's far end, kept as cheap as possible.
enum WebhookSinkBench {
    struct Counts {
        var requests = 0
        var deliveries = 0
        var ids = Set<String>()
        var first: Double?
        var last: Double?
    }

    static func run(arguments: [String]) async throws {
        var port = 0
        var threads = 2
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch arguments[index] {
            case "--port":
                port = Int(value) ?? port
                index += 2
            case "--threads":
                threads = Int(value) ?? threads
                index += 2
            default: index += 1
            }
        }
        let counts = Mutex(Counts())
        let needle = Array(#""deliveryId""#.utf8)
        var router = Router()
        router.post(
            "/hook",
            sync: { request in
                let found = occurrences(of: needle, in: request.body)
                let id = request.headers["webhook-id"] ?? ""
                let now = Date().timeIntervalSince1970
                counts.withLock { c in
                    c.requests += 1
                    c.deliveries += found
                    c.ids.insert(id)
                    if c.first == nil { c.first = now }
                    c.last = now
                }
                return Response(status: 204)
            })
        router.get(
            "/count",
            sync: { _ in
                let c = counts.withLock { $0 }
                let object: JSONValue = [
                    "requests": .int(Int64(c.requests)), "deliveries": .int(Int64(c.deliveries)),
                    "ids": .int(Int64(c.ids.count)), "firstAt": c.first.map { .double($0) } ?? .null,
                    "lastAt": c.last.map { .double($0) } ?? .null
                ]
                return Response(status: 200, headers: ["Content-Type": "application/json"], body: object.jsonBytes)
            })
        let server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: port, workerThreads: threads, maxBodyBytes: 8 << 20),
            router: router, logger: .silent())
        try server.start()
        FileHandle.standardError.write(Data("webhook-sink listening on 127.0.0.1:\(server.port)\n".utf8))
        await HTTPServerBench.waitForTerminationSignal()
        await server.shutdown()
    }

    static func occurrences(of needle: [UInt8], in body: [UInt8]) -> Int {
        guard !needle.isEmpty, body.count >= needle.count else { return 0 }
        var count = 0
        var i = 0
        let first = needle[0]
        let last = body.count - needle.count
        while i <= last {
            if body[i] == first {
                var j = 1
                while j < needle.count && body[i + j] == needle[j] { j += 1 }
                if j == needle.count {
                    count += 1
                    i += needle.count
                    continue
                }
            }
            i += 1
        }
        return count
    }
}
