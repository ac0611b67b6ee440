import BuzzKitWire
import Foundation
import Synchronization

/// `buzzkit-bench post-messages URL KEY PREFIX COUNT CONNECTIONS RATE OUT`: POSTs one-subscriber
/// messages to the gateway as a tenant's backend would (bench/transactional.sh). Message i
/// (1-based) goes `to` subscriber PREFIX + i as 7 digits. CONNECTIONS keep-alive HTTP/1.1
/// connections (`KeepAliveConnection`, one thread and one request at a time each; URL is
/// `http://<IPv4>:<port>`); RATE > 0 paces the POSTs to that many per second overall (message i
/// starts at t0 + (i-1)/RATE), RATE 0 sends as fast as the connections go. OUT gets one line per
/// message, `<message id> <epoch seconds the 202 arrived>`; stdout one line, `<first POST's
/// start> <last answer>` (epoch seconds). Any answer but 202 stops the run.
///
/// Cheap on purpose: it runs on the machine it measures. A Python client could not post more than
/// about 1,700 a second here; libcurl through Swift tasks cost 56 µs of CPU a POST, these sockets 26-30.
enum PostMessagesBench {
    /// The next message to post, shared by the connections.
    final class Cursor: Sendable {
        let next = Mutex(1)
        func take() -> Int {
            next.withLock { value in
                defer { value += 1 }
                return value
            }
        }
    }

    /// What the connections answered (message number, id, when), and the first failure.
    final class Answers: Sendable {
        let state = Mutex<(answered: [(Int, String, Double)], failure: String?)>(([], nil))
    }

    static func run(arguments: [String]) async throws {
        guard arguments.count == 7, let count = Int(arguments[3]), let connections = Int(arguments[4]),
            let rate = Double(arguments[5]), let url = URLComponents(string: arguments[0]), let host = url.host,
            let port = url.port
        else {
            throw BenchUsage("post-messages http://IPv4:PORT KEY PREFIX COUNT CONNECTIONS RATE OUT")
        }
        let head = Array(
            "POST /v1/messages HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \(arguments[1])\r\nContent-Type: application/json\r\nContent-Length: "
                .utf8)
        let prefix = arguments[2]
        let out = arguments[6]
        let cursor = Cursor()
        let answers = Answers()
        let start = Date().timeIntervalSince1970 + 0.2
        let finished = DispatchGroup()
        for _ in 0..<connections {
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                do {
                    try post(
                        over: try KeepAliveConnection(host: host, port: UInt16(port)), head: head, prefix: prefix,
                        count: count, rate: rate, start: start,
                        cursor: cursor, answers: answers)
                } catch {
                    answers.state.withLock { if $0.failure == nil { $0.failure = "\(error)" } }
                }
            }
            thread.start()
        }
        await withCheckedContinuation { continuation in
            finished.notify(queue: .global()) { continuation.resume() }
        }
        let (all, failure) = answers.state.withLock { ($0.answered, $0.failure) }
        if let failure { throw BenchUsage(failure) }
        let lines = all.sorted { $0.0 < $1.0 }.map { "\($0.1) \(String(format: "%.6f", $0.2))" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: out, atomically: true, encoding: .utf8)
        let last = all.map { $0.2 }.max() ?? start
        print(String(format: "%.6f %.6f", start, last))
    }

    /// One connection's loop: takes the next message until COUNT (or another connection failed).
    private static func post(
        over connection: KeepAliveConnection, head: [UInt8], prefix: String, count: Int, rate: Double,
        start: Double, cursor: Cursor, answers: Answers
    ) throws {
        var answered: [(Int, String, Double)] = []
        defer { answers.state.withLock { $0.answered += answered } }
        let wait = start - Date().timeIntervalSince1970
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        while true {
            let i = cursor.take()
            guard i <= count, answers.state.withLock({ $0.failure == nil }) else { return }
            if rate > 0 {
                let wait = start + Double(i - 1) / rate - Date().timeIntervalSince1970
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            let number = String(i)
            let subscriber = prefix + String(repeating: "0", count: max(0, 7 - number.count)) + number
            let body = Array(
                "{\"to\":\"\(subscriber)\",\"title\":\"Your order shipped\",\"body\":\"Order \(i) is on its way\",\"data\":{\"order\":\(i)}}"
                    .utf8)
            let answer = try connection.exchange(head + Array("\(body.count)\r\n\r\n".utf8) + body)
            let at = Date().timeIntervalSince1970
            guard answer.status == 202, let id = try? JSONValue.parse(answer.body)["data"]?["id"]?.stringValue else {
                throw BenchUsage(
                    "message \(i): HTTP \(answer.status) \(String(decoding: answer.body.prefix(300), as: UTF8.self))")
            }
            answered.append((i, id, at))
        }
    }
}

/// A usage or run error the bench prints and exits 1 on.
struct BenchUsage: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
