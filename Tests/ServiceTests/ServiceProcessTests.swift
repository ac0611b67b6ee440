import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitRedis
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The five service executables, run as real processes against the test Postgres and Redis.
@Suite(.requiresTestStack) struct ServiceProcessTests {
    static let services = ["gateway", "ingest", "workflow", "apns-sender", "liveactivity"]

    func environment(port: Int, databaseURL: String = TestEnvironment.postgresURL) -> [String: String] {
        [
            "BUZZKIT_DATABASE_URL": databaseURL, "BUZZKIT_REDIS_URL": TestEnvironment.redisURL,
            "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_LOG_LEVEL": "info",
            "BUZZKIT_SECRET_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
        ]
    }

    @Test(arguments: services)
    func servesHealthReadinessAndMetricsThenStopsOnSIGTERM(service: String) async throws {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(executable: service, environment: environment(port: port))
        let client = try HTTPClient(logger: .silent())
        try await withCleanup {
            let ready = try await waitForStatus(
                client, "http://127.0.0.1:\(port)/readyz", status: 200, process: process)
            let readiness = try Envelope.decode(ready.body)
            #expect(readiness.data?["ready"] == true)
            #expect(readiness.data?["checks"]?["postgres"] == "ok")
            #expect(readiness.data?["checks"]?["redis"] == "ok")

            let health = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"))
            #expect(health.status == 200)
            #expect(try Envelope.decode(health.body).data?["service"] == .string(service))

            let metrics = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"))
            #expect(metrics.status == 200)
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(text.contains("bk_http_requests_total{method=\"GET\",route=\"/readyz\",status=\"200\"}"))

            process.signal(SIGTERM)
            let status = await process.waitForExit(timeout: .seconds(20))
            #expect(status == 0, "\(service) exit status; output:\n\(process.output)")
            let lines = process.output.split(separator: "\n")
            #expect(!lines.isEmpty)
            for line in lines {
                #expect((try? JSONValue.parse(String(line)))?["msg"] != nil, "not a JSON log line: \(line)")
            }
        } finally: {
            await client.shutdown()
        }
    }

    @Test func isAliveButNotReadyWhilePostgresIsUnreachable() async throws {
        let port = freeLoopbackPort()
        let closedPort = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "ingest",
            environment: environment(port: port, databaseURL: "postgres://buzzkit@127.0.0.1:\(closedPort)/buzzkit"))
        let client = try HTTPClient(logger: .silent())
        try await withCleanup {
            _ = try await waitForStatus(client, "http://127.0.0.1:\(port)/healthz", status: 200, process: process)
            let ready = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz"))
            #expect(ready.status == 503)
            let envelope = try Envelope.decode(ready.body)
            #expect(envelope.error?.code == .notReady)
            #expect(envelope.error?.details?["redis"] == "ok")
            #expect(envelope.error?.details?["postgres"] != "ok")
            process.signal(SIGTERM)
            #expect(await process.waitForExit() == 0)
        } finally: {
            await client.shutdown()
        }
    }

    /// A variable of the service's own that each service rejects (its shared ones are rejected by all).
    static let invalidOwnVariable: [String: (name: String, value: String)] = [
        "gateway": ("BUZZKIT_RATE_LIMIT_RPS", "lots"),
        "ingest": ("BUZZKIT_INGEST_CONSUMERS", "0"),
        "workflow": ("BUZZKIT_WORKFLOW_POLL_INTERVAL", "soon"),
        "apns-sender": ("BUZZKIT_OUTBOX_SWEEP_INTERVAL", "often"),
        "liveactivity": ("BUZZKIT_LA_LANES", "many")
    ]

    /// Every service exits 78 (EX_CONFIG) before starting anything, with one log line naming every
    /// invalid variable: two shared ones and one of its own (workflow and ingest used to read their
    /// own only once running, and exit 1 naming one problem).
    @Test(arguments: services)
    func invalidConfigurationExitsWithEX_CONFIGNamingEveryInvalidVariable(service: String) async throws {
        let own = try #require(Self.invalidOwnVariable[service])
        var env = environment(port: freeLoopbackPort())
        env["BUZZKIT_HTTP_PORT"] = "not-a-port"
        env["BUZZKIT_REDIS_URL"] = "http://x"
        env[own.name] = own.value
        let process = try ServiceProcess(executable: service, environment: env)
        let status = await process.waitForExit()
        #expect(status == 78, "\(service) exit status; output:\n\(process.output)")
        let lines = process.output.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
        let report = try #require(
            lines.first { $0["msg"] == "invalid configuration" }, "no configuration report:\n\(process.output)")
        #expect(report["level"] == "critical")
        let error = report["error"]?.stringValue ?? ""
        for variable in ["BUZZKIT_HTTP_PORT=not-a-port", "BUZZKIT_REDIS_URL", "\(own.name)=\(own.value)"] {
            #expect(error.contains(variable), "\(service) did not name \(variable): \(error)")
        }
        let variables = Set((report["variables"]?.stringValue ?? "").split(separator: ",").map(String.init))
        #expect(variables == ["BUZZKIT_HTTP_PORT", "BUZZKIT_REDIS_URL", own.name])
        // Nothing started: no other line than the report.
        #expect(lines.count == 1, "\(process.output)")
    }

    /// SIGTERM while a stream handler is mid-way: the handler completes, its entry is acknowledged,
    /// and only then does the process exit.
    @Test func sigtermLetsASlowHandlerFinishAndAcksItsEntry() async throws {
        let redis = RedisClient(configuration: try RedisConfiguration(url: TestEnvironment.redisURL), logger: .silent())
        defer { redis.close() }
        let stream = TestEnvironment.uniqueName("lifecycle")
        let group = "workers"
        _ = try await redis.xadd(stream, fields: [("n", "1")])

        let port = freeLoopbackPort()
        var env = environment(port: port)
        env["FIXTURE_STREAM"] = stream
        env["FIXTURE_GROUP"] = group
        let process = try ServiceProcess(executable: "StreamWorkerFixture", environment: env)

        // Wait until the handler has started, then ask the process to stop while it still works.
        let deadline = ContinuousClock.now + .seconds(20)
        while try await keys(redis, "\(stream):started:*").isEmpty {
            #expect(ContinuousClock.now < deadline, "the handler never started; output:\n\(process.output)")
            if ContinuousClock.now >= deadline { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.signal(SIGTERM)
        // The handler is still working: the process must wait for it, not exit.
        try await Task.sleep(for: .milliseconds(500))
        #expect(process.isRunning, "the process exited with a handler in flight; output:\n\(process.output)")
        #expect(try await keys(redis, "\(stream):done:*").isEmpty)
        _ = try await redis.set("\(stream):release", "1")

        let status = await process.waitForExit(timeout: .seconds(20))
        #expect(status == 0, "output:\n\(process.output)")
        #expect(try await keys(redis, "\(stream):done:*").count == 1, "the handler did not complete")
        let pending = try await redis.command(["XPENDING", .init(stream), .init(group)])
        #expect(pending.array?.first?.int == 0, "the entry was not acknowledged: \(pending)")
    }

    /// `/metrics` reports the consumer group's lag, pending count and oldest pending age as Redis
    /// has them, read at the scrape: with one entry per read, the handler holding the first entry
    /// and the read-ahead holding the second, the other four wait undelivered.
    @Test func metricsReportTheConsumerGroupsLagPendingAndOldestPendingAge() async throws {
        let redis = RedisClient(configuration: try RedisConfiguration(url: TestEnvironment.redisURL), logger: .silent())
        defer { redis.close() }
        let stream = TestEnvironment.uniqueName("lagmetrics")
        let group = "workers"
        for n in 1...6 { _ = try await redis.xadd(stream, fields: [("n", String(n))]) }
        let port = freeLoopbackPort()
        var env = environment(port: port)
        env["FIXTURE_STREAM"] = stream
        env["FIXTURE_GROUP"] = group
        env["FIXTURE_BATCH_SIZE"] = "1"
        let process = try ServiceProcess(executable: "StreamWorkerFixture", environment: env)
        let client = try HTTPClient(logger: .silent())
        try await withCleanup {
            _ = try await waitForStatus(client, "http://127.0.0.1:\(port)/readyz", status: 200, process: process)
            #expect(await RedisTestSupport.eventually { (try? await keys(redis, "\(stream):started:*").count) == 1 })
            #expect(
                await RedisTestSupport.eventually { (try? await redis.groupStatus(stream, group: group).pending) == 2 })
            try await Task.sleep(for: .milliseconds(500))

            let labels = "{stream=\"\(stream)\",group=\"\(group)\"}"
            var values = try await scrape(client, port)
            #expect(values["bk_stream_lag\(labels)"] == 4, "\(values)")
            #expect(values["bk_stream_pending\(labels)"] == 2)
            let age = values["bk_stream_oldest_pending_age_seconds\(labels)"] ?? -1
            #expect(age >= 0.5 && age < 120, "oldest pending age \(age)")

            _ = try await redis.set("\(stream):release", "1")
            #expect(await RedisTestSupport.eventually { (try? await keys(redis, "\(stream):done:*").count) == 6 })
            #expect(
                await RedisTestSupport.eventually { (try? await redis.groupStatus(stream, group: group).pending) == 0 })
            values = try await scrape(client, port)
            #expect(values["bk_stream_lag\(labels)"] == 0, "\(values)")
            #expect(values["bk_stream_pending\(labels)"] == 0)
            #expect(values["bk_stream_oldest_pending_age_seconds\(labels)"] == 0)
            #expect(values["bk_stream_status_errors_total"] == 0)
            process.signal(SIGTERM)
            #expect(await process.waitForExit(timeout: .seconds(20)) == 0)
        } finally: {
            await client.shutdown()
        }
    }

    /// `/metrics` as series name (with labels) -> value.
    private func scrape(_ client: HTTPClient, _ port: Int) async throws -> [String: Double] {
        let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"))
        #expect(response.status == 200)
        var values: [String: Double] = [:]
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            values[String(line[..<space])] = value
        }
        return values
    }

    private func keys(_ redis: RedisClient, _ pattern: String) async throws -> [RedisValue] {
        try await redis.command(["KEYS", .init(pattern)]).array ?? []
    }

    /// Polls `url` until it answers `status`, failing early when the process exits.
    private func waitForStatus(
        _ client: HTTPClient, _ url: String, status: Int, process: ServiceProcess,
        timeout: Duration = .seconds(30)
    ) async throws -> HTTPClientResponse {
        let deadline = ContinuousClock.now + timeout
        var last = "no answer"
        while ContinuousClock.now < deadline {
            guard process.isRunning else { break }
            if let response = try? await client.execute(HTTPClientRequest(url: url, timeout: .seconds(3))) {
                if response.status == status { return response }
                last = "status \(response.status)"
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ServiceTestFailure(
            "\(process.name) did not answer \(status) at \(url) (\(last)); output:\n\(process.output)")
    }
}

struct ServiceTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
