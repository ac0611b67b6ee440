import BuzzKitHTTPClient
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation

/// The workflow service on a `PushStack` (gateway, apns-sender, ingest, APNs simulator): real
/// processes, and a clock the test moves (`BUZZKIT_WORKFLOW_CLOCK_OFFSET_FILE`): every workflow
/// replica of the stack reads the same offset file, so waits of hours or days pass at once.
struct WorkflowClockFile {
    let path: String

    init() {
        let parent = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] ?? NSTemporaryDirectory()
        path = (parent as NSString).appendingPathComponent(TestEnvironment.uniqueName("clock") + ".offset")
        set(offset: 0)
    }

    /// The workflow services' now = the real time + `offset` seconds.
    func set(offset: Double) {
        try? String(offset).write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Moves the services' clock so that it reads `instant` now.
    func set(now instant: Date) { set(offset: instant.timeIntervalSinceNow) }

    var offset: Double { (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Double($0) } ?? 0 }

    /// Moves it forward by `seconds` from where it is.
    func advance(_ seconds: Double) { set(offset: offset + seconds) }
}

extension PushStack {
    /// Starts one workflow replica (polling every 50 ms) reading `clock`; `settings` add to or
    /// override its environment.
    func startWorkflow(
        _ instance: String = TestEnvironment.uniqueName("workflow"), clock: WorkflowClockFile,
        settings: [String: String] = [:]
    ) async throws -> ServiceProcess {
        let port = freeLoopbackPort()
        let process = try ServiceProcess(
            executable: "workflow",
            environment: senderEnvironment.merging([
                "BUZZKIT_HTTP_PORT": String(port), "BUZZKIT_INSTANCE_ID": instance,
                "BUZZKIT_WORKFLOW_CLOCK_OFFSET_FILE": clock.path, "BUZZKIT_WORKFLOW_POLL_INTERVAL": "50ms"
            ]) { _, new in new }.merging(settings) { _, new in new })
        senders.withLock { $0.append(process) }
        let ready = try await RedisTestSupport.eventually(limit: .seconds(30)) {
            guard process.isRunning else { return true }
            let response = try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz"))
            return response?.status == 200
        }
        guard ready, process.isRunning else {
            throw StackError(description: "workflow did not become ready: \(process.output)")
        }
        return process
    }

    /// Saves a workflow definition (fails the test unless 200/201).
    func putWorkflow(_ key: String, _ text: String) async throws {
        let reply = try await api("PUT", "/v1/workflows/\(key)", body: try JSONValue.parse(text))
        guard reply.status == 200 || reply.status == 201 else {
            throw StackError(description: "PUT workflow \(key): \(reply.status) \(reply.envelope)")
        }
    }

    /// Tracks events for `subscriber` through the gateway (`POST /v1/events`).
    func track(_ subscriber: String, _ events: [(id: String, name: String, data: JSONValue)]) async throws {
        let body: JSONValue = [
            "subscriberId": .string(subscriber),
            "events": .array(
                events.map {
                    [
                        "id": .string($0.id), "name": .string($0.name), "data": $0.data,
                        "timestamp": .string(EventTimestamp.format(Date()))
                    ]
                })
        ]
        let reply = try await api("POST", "/v1/events", body: body)
        guard reply.status == 202 else { throw StackError(description: "track: \(reply.status) \(reply.envelope)") }
    }

    /// The runs of `key` as stored (status, state), newest last.
    func runs(_ key: String) async throws -> [(
        id: String, subscriber: String, status: String, state: JSONValue?, dueAt: Date?
    )] {
        try await postgres.query(
            """
            SELECT id::text, subscriber_id, status, state, timer_due_at FROM workflow_runs
            WHERE tenant_id = $1::uuid AND workflow_key = $2 ORDER BY created_at, id
            """, [tenantID, key]
        ).map { row in
            (
                try row.decode(String.self, at: 0), try row.decode(String.self, at: 1),
                try row.decode(String.self, at: 2),
                try row.decode(JSONValue?.self, at: 3), try row.decode(Date?.self, at: 4)
            )
        }
    }

    /// Waits until `key` has `count` runs that satisfy `condition`; returns all runs then.
    @discardableResult
    func waitRuns(
        _ key: String, count: Int, limit: Duration = .seconds(30),
        _ condition:
            @escaping ((id: String, subscriber: String, status: String, state: JSONValue?, dueAt: Date?)) -> Bool
    )
        async throws -> [(id: String, subscriber: String, status: String, state: JSONValue?, dueAt: Date?)]
    {
        var last: [(id: String, subscriber: String, status: String, state: JSONValue?, dueAt: Date?)] = []
        let done = try await RedisTestSupport.eventually(limit: limit) {
            last = try await runs(key)
            return last.filter(condition).count >= count
        }
        guard done else {
            let logs = senders.withLock { $0 }.filter { $0.name.contains("workflow") }.map {
                String($0.output.suffix(3000))
            }
            throw StackError(
                description:
                    "runs of \(key) never reached \(count): \(last.map { "\($0.status) \($0.state?.jsonString ?? "null")" }); workflow logs: \(logs)"
            )
        }
        return last
    }

    /// The alert pushes `token` received (their decoded payloads), waiting for at least `count`.
    func alerts(_ token: String, atLeast count: Int, limit: Duration = .seconds(30)) async throws -> [JSONValue] {
        var payloads: [JSONValue] = []
        _ = try await RedisTestSupport.eventually(limit: limit) {
            payloads = try await simulator.pushes(token: token).compactMap { push in
                push["payload"]?.stringValue.flatMap { try? JSONValue.parse(Array($0.utf8)) }
            }
            return payloads.count >= count
        }
        return payloads
    }
}
