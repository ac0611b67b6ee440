import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitWire
import Foundation
import Synchronization

/// `buzzkit-bench post-messages URL KEY PREFIX COUNT CONNECTIONS RATE OUT`: POSTs one-subscriber
/// messages to the gateway as a tenant's backend would (bench/transactional.sh). Message i
/// (1-based) goes `to` subscriber PREFIX + i as 7 digits. CONNECTIONS keep-alive HTTP/1.1
/// connections (libcurl, one request at a time each); RATE > 0 paces the POSTs to that many per
/// second overall (message i starts at t0 + (i-1)/RATE), RATE 0 sends as fast as the connections
/// go. OUT gets one line per message, `<message id> <epoch seconds the 202 arrived>`; stdout one
/// line, `<first POST's start> <last answer>` (epoch seconds). Any answer but 202 stops the run.
/// (A Python client could not post more than about 1,700 a second here; this one is C underneath.)
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

    static func run(arguments: [String]) async throws {
        guard arguments.count == 7, let count = Int(arguments[3]), let connections = Int(arguments[4]),
            let rate = Double(arguments[5])
        else {
            throw BenchUsage("post-messages URL KEY PREFIX COUNT CONNECTIONS RATE OUT")
        }
        let url = arguments[0] + "/v1/messages"
        let key = arguments[1]
        let prefix = arguments[2]
        let out = arguments[6]
        let client = try HTTPClient(
            configuration: .init(httpVersion: .http1_1, maxConnectionsPerHost: connections), logger: .silent())
        let cursor = Cursor()
        let start = Date().timeIntervalSince1970 + 0.2
        try await Task.sleep(for: .milliseconds(200))
        let answers = try await withThrowingTaskGroup(of: [(Int, String, Double)].self) { group in
            for _ in 0..<connections {
                group.addTask {
                    var answered: [(Int, String, Double)] = []
                    while true {
                        let i = cursor.take()
                        guard i <= count else { return answered }
                        if rate > 0 {
                            let wait = start + Double(i - 1) / rate - Date().timeIntervalSince1970
                            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
                        }
                        let subscriber = prefix + String(repeating: "0", count: max(0, 7 - String(i).count)) + String(i)
                        let body: JSONValue = [
                            "to": .string(subscriber), "title": "Your order shipped",
                            "body": .string("Order \(i) is on its way"), "data": ["order": .int(Int64(i))]
                        ]
                        var headers = HTTPHeaders()
                        headers.add(name: "Authorization", value: "Bearer \(key)")
                        headers.add(name: "Content-Type", value: "application/json")
                        let response = try await client.execute(
                            HTTPClientRequest(method: .POST, url: url, headers: headers, body: body.jsonBytes))
                        let at = Date().timeIntervalSince1970
                        let reply = try? JSONValue.parse(response.body)
                        guard response.status == 202, let id = reply?["data"]?["id"]?.stringValue else {
                            throw BenchUsage(
                                "message \(i): HTTP \(response.status) \(String(decoding: response.body.prefix(300), as: UTF8.self))"
                            )
                        }
                        answered.append((i, id, at))
                    }
                }
            }
            var all: [(Int, String, Double)] = []
            for try await some in group { all += some }
            return all
        }
        await client.shutdown()
        let lines = answers.sorted { $0.0 < $1.0 }.map { "\($0.1) \(String(format: "%.6f", $0.2))" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: out, atomically: true, encoding: .utf8)
        let last = answers.map { $0.2 }.max() ?? start
        print(String(format: "%.6f %.6f", start, last))
    }
}

/// A usage or run error the bench prints and exits 1 on.
struct BenchUsage: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
