import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// Tests for BuzzKitHTTPClient against real local servers: a Python HTTP/1.1 echo server
// (Fixtures/http_echo_server.py) and nghttpd (HTTP/2 over TLS with a throwaway self-signed
// certificate). Each test starts and stops its own server processes on free loopback ports.

@Suite("HTTPClient")
struct HTTPClientTests {
    // MARK: - HTTP/1.1 against the echo server

    @Test func getRoundTripsStatusHeadersAndBody() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            let response = try await client.execute(
                HTTPClientRequest(
                    url: "\(base)/some/path?x=1", headers: ["X-Test": "abc", "X-Empty": ""]))

            #expect(response.status == 200)
            #expect(response.httpVersion == .http1_1)
            #expect(response.headers["content-type"] == "application/json")
            #expect(response.headers["CONTENT-TYPE"] == "application/json")
            #expect(response.headers.values(for: "x-multi") == ["one", "two"])
            #expect(response.newConnections == 1)
            let echo = try Echo.decode(response.body)
            #expect(echo.method == "GET")
            #expect(echo.path == "/some/path?x=1")
            #expect(echo.header("x-test") == "abc")
            #expect(echo.header("x-empty") == "")
            #expect(echo.header("expect") == nil)
            #expect(echo.bodyLength == 0)
        } finally: {
            await client.shutdown()
        }
    }

    @Test(arguments: ["POST", "PUT", "PATCH", "DELETE"])
    func methodsWithBodyRoundTrip(method: String) async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            // Larger than 1 kB so curl would use `Expect: 100-continue` if the client did not stop it.
            let text = "{\"hello\":\"world\"}" + String(repeating: "x", count: 4000)

            let response = try await client.execute(
                HTTPClientRequest(
                    method: HTTPMethod(rawValue: method), url: "\(base)/echo",
                    headers: ["Content-Type": "application/json"], body: Array(text.utf8)))

            #expect(response.status == 200)
            let echo = try Echo.decode(response.body)
            #expect(echo.method == method)
            #expect(echo.body == text)
            #expect(echo.bodyLength == text.utf8.count)
            #expect(echo.header("content-type") == "application/json")
            #expect(echo.header("expect") == nil)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func binaryBodyIsSentExactlyAndNoDefaultContentType() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            let body: [UInt8] = [0, 1, 2, 0, 255, 0]

            let response = try await client.execute(HTTPClientRequest(method: .POST, url: "\(base)/bin", body: body))
            let empty = try await client.execute(HTTPClientRequest(method: .PUT, url: "\(base)/empty"))

            let echo = try Echo.decode(response.body)
            #expect(echo.bodyLength == body.count)
            #expect(echo.header("content-type") == nil)
            let emptyEcho = try Echo.decode(empty.body)
            #expect(emptyEcho.method == "PUT")
            #expect(emptyEcho.header("content-length") == "0")
        } finally: {
            await client.shutdown()
        }
    }

    @Test func headHasHeadersButNoBody() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            let response = try await client.execute(HTTPClientRequest(method: .HEAD, url: "\(base)/head"))

            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(Int(response.headers["content-length"] ?? "") ?? 0 > 0)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func errorStatusIsAResponseNotAnError() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            let response = try await client.execute(HTTPClientRequest(url: "\(base)/status/503"))

            #expect(response.status == 503)
            #expect(try Echo.decode(response.body).path == "/status/503")
        } finally: {
            await client.shutdown()
        }
    }

    @Test func thousandConcurrentRequestsAllComplete() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(
            configuration: .init(httpVersion: .http1_1, maxConnectionsPerHost: 16),
            logger: .silent())
        try await withCleanup {
            let paths = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        let response = try await client.execute(HTTPClientRequest(url: "\(base)/n/\(index)"))
                        guard response.status == 200 else { return "status \(response.status)" }
                        return try Echo.decode(response.body).path
                    }
                }
                var paths: Set<String> = []
                for try await path in group { paths.insert(path) }
                return paths
            }

            #expect(paths == Set((0..<1000).map { "/n/\($0)" }))
            #expect(client.connectionsOpened >= 1)
            #expect(client.connectionsOpened <= 16)
        } finally: {
            await client.shutdown()
        }
    }

    // MARK: - Failures

    @Test func slowResponseTimesOut() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        await withCleanup {
            let error = await #expect(throws: HTTPClientError.self) {
                try await client.execute(
                    HTTPClientRequest(
                        url: "\(base)/delay?ms=10000",
                        timeout: .milliseconds(200)))
            }
            #expect(error?.code == .timeout)
            #expect(error?.isRetryable == true)
            #expect(error?.curlCode == 28)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func refusedConnectionIsConnectFailed() async throws {
        let port = freeLoopbackPort()
        let client = try HTTPClient(logger: .silent())
        await withCleanup {
            let error = await #expect(throws: HTTPClientError.self) {
                try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"))
            }
            #expect(error?.code == .connectFailed)
            #expect(error?.isRetryable == true)
            #expect(error?.message.isEmpty == false)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func malformedURLIsInvalidRequest() async throws {
        let client = try HTTPClient(logger: .silent())
        await withCleanup {
            let error = await #expect(throws: HTTPClientError.self) {
                try await client.execute(HTTPClientRequest(url: "nope://x"))
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.isRetryable == false)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func cancellingTheTaskAbortsTheRequestInFlight() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            let slow = Task {
                try await client.execute(
                    HTTPClientRequest(
                        url: "\(base)/delay?ms=30000",
                        timeout: .seconds(60)))
            }
            try await server.waitForHits(1, client: client)
            slow.cancel()

            await #expect(throws: CancellationError.self) { try await slow.value }
            // The client still works after a cancellation.
            let after = try await client.execute(HTTPClientRequest(url: "\(base)/after"))
            #expect(after.status == 200)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func alreadyCancelledTaskNeverSends() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        try await withCleanup {
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await client.execute(HTTPClientRequest(url: "\(base)/never"))
            }

            await #expect(throws: CancellationError.self) { try await task.value }
            let hits = try await client.execute(HTTPClientRequest(url: "\(base)/hits"))
            #expect(String(decoding: hits.body, as: UTF8.self) == "0")
        } finally: {
            await client.shutdown()
        }
    }

    @Test func shutdownFailsPendingAndLaterRequests() async throws {
        let server = try await EchoServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())

        let slow = Task {
            try await client.execute(
                HTTPClientRequest(
                    url: "\(base)/delay?ms=30000",
                    timeout: .seconds(60)))
        }
        try await server.waitForHits(1, client: client)
        await client.shutdown()

        let pending = await #expect(throws: HTTPClientError.self) { try await slow.value }
        #expect(pending?.code == .shutdown)
        let later = await #expect(throws: HTTPClientError.self) {
            try await client.execute(HTTPClientRequest(url: "\(base)/later"))
        }
        #expect(later?.code == .shutdown)
        await client.shutdown()  // a second call is harmless
    }

    // MARK: - HTTP/2 over TLS against nghttpd

    @Test func http2MultiplexesConcurrentRequestsOnOneConnection() async throws {
        let server = try await NGHTTPServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(
            configuration: .init(httpVersion: .http2, caFile: server.certificatePath),
            logger: .silent())
        try await withCleanup {
            // nghttpd allows 100 concurrent streams per connection: stay within it so that any
            // second connection would mean the client failed to wait for multiplexing.
            let results = try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await client.execute(HTTPClientRequest(url: "\(base)/hello.txt")) }
                }
                var results: [HTTPClientResponse] = []
                for try await response in group { results.append(response) }
                return results
            }

            #expect(results.count == 100)
            #expect(results.allSatisfy { $0.status == 200 && $0.httpVersion == .http2 })
            #expect(results.allSatisfy { String(decoding: $0.body, as: UTF8.self) == NGHTTPServer.helloText })
            #expect(results.reduce(0) { $0 + $1.newConnections } == 1)
            #expect(client.connectionsOpened == 1)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func http2PostEchoesTheBody() async throws {
        let server = try await NGHTTPServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(configuration: .init(caFile: server.certificatePath), logger: .silent())
        try await withCleanup {
            let payload = Array("{\"aps\":{\"alert\":\"hi\"}}".utf8)

            let response = try await client.execute(
                HTTPClientRequest(
                    method: .POST, url: "\(base)/hello.txt",
                    headers: ["content-type": "application/json", "apns-topic": "com.example"], body: payload))

            #expect(response.status == 200)
            #expect(response.httpVersion == .http2)
            #expect(response.body == payload)
        } finally: {
            await client.shutdown()
        }
    }

    @Test func untrustedCertificateIsTLSFailed() async throws {
        let server = try await NGHTTPServer.start()
        defer { server.stop() }
        let base = server.baseURL
        let client = try HTTPClient(logger: .silent())  // system CAs only: the test cert is unknown
        await withCleanup {
            let error = await #expect(throws: HTTPClientError.self) {
                try await client.execute(HTTPClientRequest(url: "\(base)/hello.txt"))
            }
            #expect(error?.code == .tlsFailed)
            #expect(error?.isRetryable == false)
        } finally: {
            await client.shutdown()
        }
    }

    /// Not a test but a measurement, run on demand: `BK_HTTPCLIENT_MEASURE=1 swift test -c release
    /// --filter http2Throughput`. 20,000 POSTs of 300 bytes over HTTP/2 to nghttpd (answering with a
    /// small static file), 100 in flight; prints requests/s.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["BK_HTTPCLIENT_MEASURE"] != nil))
    func http2Throughput() async throws {
        let server = try await NGHTTPServer.start(echoUpload: false)
        defer { server.stop() }
        let base = server.baseURL
        let environment = ProcessInfo.processInfo.environment
        let total = 20_000
        let inFlight = Int(environment["BK_HTTPCLIENT_MEASURE_IN_FLIGHT"] ?? "") ?? 100
        var configuration = HTTPClient.Configuration(caFile: server.certificatePath)
        if let limit = Int(environment["BK_HTTPCLIENT_MEASURE_MAX_CONNECTIONS"] ?? "") {
            configuration.maxConnectionsPerHost = limit
        }
        let client = try HTTPClient(configuration: configuration, logger: .silent())
        try await withCleanup {
            let request = HTTPClientRequest(
                method: .POST, url: "\(base)/hello.txt",
                headers: ["content-type": "application/json"],
                body: Array(repeating: UInt8(ascii: "x"), count: 300))
            _ = try await client.execute(request)  // warm up: connect and handshake

            let clock = ContinuousClock()
            let started = clock.now
            let failures = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<inFlight {
                    group.addTask {
                        var failures = 0
                        for _ in 0..<(total / inFlight) {
                            let response = try await client.execute(request)
                            if response.status != 200 || response.body.isEmpty { failures += 1 }
                        }
                        return failures
                    }
                }
                return try await group.reduce(0, +)
            }
            let elapsed = clock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "http2Throughput: \(total) POSTs in \(seconds) s = \(Int(Double(total) / seconds)) requests/s,"
                    + " connections opened \(client.connectionsOpened), failures \(failures)")
            #expect(failures == 0)
        } finally: {
            await client.shutdown()
        }
    }

    // MARK: - Pure values

    @Test func headersLookUpNamesCaseInsensitively() {
        var headers: HTTPHeaders = ["Content-Type": "a", "Set-Cookie": "1"]
        headers.add(name: "set-cookie", value: "2")
        #expect(headers["content-type"] == "a")
        #expect(headers["CONTENT-TYPE"] == "a")
        #expect(headers["content-typ"] == nil)
        #expect(headers.values(for: "SET-COOKIE") == ["1", "2"])
        headers.replaceOrAdd(name: "SET-cookie", value: "3")
        #expect(headers.values(for: "set-cookie") == ["3"])
        headers.remove(name: "content-TYPE")
        #expect(!headers.contains(name: "content-type"))
    }
}

// MARK: - Fixtures

/// What the echo server answers.
private struct Echo: Decodable {
    var method: String
    var path: String
    var headers: [[String]]
    var body: String
    var bodyLength: Int

    static func decode(_ bytes: [UInt8]) throws -> Echo {
        try JSONDecoder().decode(Echo.self, from: Data(bytes))
    }

    func header(_ name: String) -> String? {
        headers.first { $0.count == 2 && $0[0].lowercased() == name }?[1]
    }
}

/// The Python echo server, on a port it picks itself and prints.
private final class EchoServer: Sendable {
    let process: ChildProcess
    let baseURL: String

    private init(process: ChildProcess, port: Int) {
        self.process = process
        baseURL = "http://127.0.0.1:\(port)"
    }

    /// Started and polled on a thread of its own (the poll blocks; Python starts slowly on a busy machine).
    static func start() async throws -> EchoServer {
        try await OwnThread.run { try startBlocking() }
    }

    /// The script prints its port on its first line; it goes to a file the fixture polls.
    private static func startBlocking() throws -> EchoServer {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/http_echo_server.py").path
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent(TestNames.unique("bk_echo_server")).path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let process = try ChildProcess.spawn(["/usr/bin/python3", "-u", script], outputPath: outputPath)
        for _ in 0..<500 {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n", omittingEmptySubsequences: false).first, text.contains("\n"),
                let port = Int(line.trimmingCharacters(in: .whitespaces))
            {
                return EchoServer(process: process, port: port)
            }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        process.killAndWait()
        throw FixtureError(message: "echo server did not report its port")
    }

    /// Polls `/hits` until the server has seen `count` requests (other than `/hits`).
    func waitForHits(_ count: Int, client: HTTPClient) async throws {
        for _ in 0..<500 {
            let response = try await client.execute(HTTPClientRequest(url: "\(baseURL)/hits"))
            if Int(String(decoding: response.body, as: UTF8.self)) ?? 0 >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw FixtureError(message: "the echo server never saw \(count) requests")
    }

    func stop() { process.killAndWait() }
}

/// nghttpd over TLS with a fresh self-signed certificate for 127.0.0.1; serves `hello.txt` and
/// echoes POST bodies (`--echo-upload`).
private final class NGHTTPServer {
    static let helloText = "hello over h2\n"
    let process: ChildProcess
    let directory: String
    let port: Int
    var baseURL: String { "https://127.0.0.1:\(port)" }
    var certificatePath: String { directory + "/cert.pem" }

    private init(process: ChildProcess, directory: String, port: Int) {
        self.process = process
        self.directory = directory
        self.port = port
    }

    /// `echoUpload`: answer POST/PUT with the uploaded body (nghttpd spools it to a temporary file,
    /// which costs more than the whole client); otherwise POSTs get the requested file.
    static func start(echoUpload: Bool = true) async throws -> NGHTTPServer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent(TestNames.unique("bk_nghttpd")).path
        let docroot = directory + "/htdocs"
        try FileManager.default.createDirectory(atPath: docroot, withIntermediateDirectories: true)
        do {
            try Data(helloText.utf8).write(to: URL(fileURLWithPath: docroot + "/hello.txt"))
            try run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"
                ])
            let port = freeLoopbackPort()
            let process = try ChildProcess.spawn(
                [try nghttpdPath()] + (echoUpload ? ["--echo-upload"] : []) + [
                    "-a", "127.0.0.1", "-d", docroot,
                    String(port), directory + "/key.pem", directory + "/cert.pem"
                ])
            let server = NGHTTPServer(process: process, directory: directory, port: port)
            do {
                try await waitUntilListening(port: port)
            } catch {
                server.stop()
                throw error
            }
            return server
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    func stop() {
        process.killAndWait()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func nghttpdPath() throws -> String {
        for candidate in ["/usr/sbin/nghttpd", "/usr/bin/nghttpd", "/usr/local/bin/nghttpd"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw FixtureError(message: "nghttpd is not installed (apt-get install nghttp2-server)")
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let status = try Subprocess.runBlocking([executable] + arguments)
        guard status == 0 else { throw FixtureError(message: "\(executable) exited with \(status)") }
    }
}

private enum TestNames {
    static func unique(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
    }
}

private struct FixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Waits (up to about 10 s) until something accepts TCP connections on the loopback port.
private func waitUntilListening(port: Int) async throws {
    for _ in 0..<500 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError(message: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        close(fd)
        if connected { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw FixtureError(message: "nothing listens on port \(port)")
}
