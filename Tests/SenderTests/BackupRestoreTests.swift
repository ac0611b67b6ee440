import BuzzKitHTTPClient
import BuzzKitLedger
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// A backup taken while the stack sends, restored, and the stack started on it (issue 30; the
/// procedure is docs/data-lifecycle.md's "How to back up and restore", step for step):
/// `pg_dump --format=custom` of the running stack's database while a topic fan-out goes out, direct
/// messages keep coming and a workflow run waits its hour; the original stack finishes (what the
/// simulator accepted is kept); its services stop; the dump is restored with `pg_restore` into a
/// fresh database, `buzzkit-admin migrate` runs on it, Redis is emptied (a restore never brings
/// Redis back) and the services start on the restored database with a fresh simulator. Then every
/// message, delivery and run the dump held is there, every message the dump held ends sent to every
/// device of its audience, the sends the dump caught mid-way finish (the chunks a sender had
/// claimed, taken over; the queued ones, found again by the outbox sweeper), every push sent again
/// carries the apns-id and collapse id the original stack's push to that device had (a phone shows
/// it once), and the waiting run goes on to its send.
@Suite("backup and restore: a dump taken during traffic, restored, finishes what it caught", .requiresTestStack)
struct BackupRestoreTests {
    static let postgresBin = "/usr/lib/postgresql/15/bin"

    static let nudge = """
        {"trigger": {"event": "workout.scheduled"},
         "steps": [{"name": "pause", "wait": {"duration": "1h"}},
                   {"name": "nudge", "send": {"title": "Leg day", "body": "Workout {{ trigger.data.workoutId }}", "policy": "ignore"}}]}
        """

    /// Runs a PostgreSQL client program to its end; throws with its output unless it exits 0.
    static func run(_ program: String, _ arguments: [String]) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            TestEnvironment.uniqueName(program) + ".log"
        ).path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let status = try await Subprocess.run([postgresBin + "/" + program] + arguments, outputPath: log)
        guard status == 0 else {
            let output = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
            throw StackError(description: "\(program) exited with \(status): \(output)")
        }
    }

    /// `url` (postgres://user@host:port/db) naming database `name` instead.
    static func url(_ url: String, database name: String) throws -> String {
        guard var components = URLComponents(string: url) else { throw StackError(description: "bad URL \(url)") }
        components.path = "/" + name
        return components.string!
    }

    @Test(
        "pg_dump during a fan-out, restored into a fresh database: nothing the dump held is lost, the caught sends finish under the same apns-ids"
    )
    func dumpDuringTrafficRestoreAndFinish() async throws {
        let settings = [
            "BUZZKIT_SENDER_CLAIM_IDLE": "2s", "BUZZKIT_SENDER_RECLAIM_INTERVAL": "1s",
            "BUZZKIT_SENDER_STALE_SENDING": "4s", "BUZZKIT_SENDER_CONCURRENCY": "2",
            "BUZZKIT_SENDER_CHUNK_SIZE": "20"
        ]
        try await withPushStack(senderSettings: settings) { stack in
            let clock = WorkflowClockFile()
            _ = try await stack.startSender(TestEnvironment.uniqueName("sender"))
            _ = try await stack.startIngest()
            _ = try await stack.startWorkflow(clock: clock)

            // 120 subscribers with 2 devices each, all on topic `all`.
            var devicesOf: [String: [String]] = [:]
            for n in 0..<120 {
                let tokens = [PushStack.token(), PushStack.token()]
                try await stack.addSubscriber("s\(n)", tokens: tokens)
                devicesOf["s\(n)"] = tokens
            }
            let allTokens = Set(devicesOf.values.joined())
            try await stack.subscribe(Array(devicesOf.keys), topic: "all")

            // A run waiting its hour when the dump is taken.
            try await stack.putWorkflow("nudge", Self.nudge)
            try await stack.track("s0", [("e0", "workout.scheduled", ["workoutId": "w0"])])
            let waiting = try await stack.waitRuns("nudge", count: 1) { $0.status == "running" && $0.dueAt != nil }
            let runId = waiting[0].id

            // Traffic: two topic fan-outs going out slowly (every answer 200 ms late), direct
            // messages every 100 ms around the dump.
            try await stack.simulator.post("delay", ["ms": 200])
            let first = try await stack.send(["topic": "all", "title": "Backup", "body": "First"])
            let second = try await stack.send([
                "topic": "all", "title": "Backup", "body": "Second", "collapseId": "second"
            ])
            var expected: [String: Set<String>] = [first: allTokens, second: allTokens]
            let sending = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                try await stack.postgres.query(
                    "SELECT 1 FROM deliveries WHERE message_id = $1::uuid LIMIT 1", [UUID(uuidString: first)!]
                ).count > 0
            }
            try #require(sending, "the first fan-out never started sending")
            let direct = Task { () -> [(id: String, to: String, acknowledged: ContinuousClock.Instant)] in
                var sent: [(id: String, to: String, acknowledged: ContinuousClock.Instant)] = []
                var n = 1
                while !Task.isCancelled {
                    let to = "s\(n % 120)"
                    if let id = try? await stack.send(["to": .string(to), "body": .string("Direct \(n)")]) {
                        sent.append((id, to, .now))
                    }
                    n += 1
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return sent
            }
            try await Task.sleep(for: .milliseconds(300))
            let dumpStarted = ContinuousClock.now
            let dump = FileManager.default.temporaryDirectory.appendingPathComponent(
                TestEnvironment.uniqueName("buzzkit") + ".dump"
            ).path
            // The docs' command; --schema only because the shared test server holds every test's
            // schema (this stack's database is its schema).
            try await Self.run(
                "pg_dump",
                ["--format=custom", "--file=" + dump, "--schema=" + stack.schema, TestEnvironment.postgresURL])
            try await Task.sleep(for: .milliseconds(300))
            direct.cancel()
            let directs = await direct.value
            for message in directs { expected[message.id] = Set(devicesOf[message.to]!) }

            // The original stack finishes: every message sent, the run past its hour and its nudge sent.
            try await stack.simulator.post("delay", ["ms": 0])
            clock.advance(3601)
            for id in expected.keys { _ = try await stack.waitSettled(id, limit: .seconds(60)) }
            _ = try await stack.waitRuns("nudge", count: 1) { $0.status == "completed" }
            let nudgeId = try #require(
                try await stack.postgres.query(
                    "SELECT id::text FROM messages WHERE workflow_run_id = $1::uuid", [UUID(uuidString: runId)!]
                ).first?.decode(String.self, at: 0))
            expected[nudgeId] = Set(devicesOf["s0"]!)
            // The run completes when its send is written; the push itself follows.
            _ = try await stack.waitSettled(nudgeId, limit: .seconds(60))
            let originalPushes = try await stack.simulator.allPushes()
            let sourceDeliveries = try await Self.deliveries(stack.postgres)

            // Stop every service of the original stack, as before a restore.
            for process in stack.senders.withLock({ $0 }) + [stack.gateway] where process.isRunning {
                process.signal(SIGTERM)
                #expect(await process.waitForExit(timeout: .seconds(20)) == 0, "\(process.name) did not stop cleanly")
            }

            // Restore: a fresh database, pg_restore, migrate; an empty Redis.
            let database = TestEnvironment.uniqueName("restored")
            let admin = try PostgresClient(url: TestEnvironment.postgresURL, logger: .silent())
            try await withCleanup {
                try await admin.execute("CREATE DATABASE \"\(database)\"")
                let restoredURL = try Self.url(TestEnvironment.postgresURL, database: database)
                try await Self.run("pg_restore", ["--no-owner", "--dbname=" + restoredURL, dump])
                let databaseURL = restoredURL + "?search_path=" + stack.schema
                let migrate = try ServiceProcess(
                    executable: "buzzkit-admin",
                    environment: ["BUZZKIT_DATABASE_URL": databaseURL, "BUZZKIT_LOG_LEVEL": "info"],
                    arguments: ["migrate"])
                let migrated = await migrate.waitForExit(timeout: .seconds(60))
                try #require(migrated == 0, "migrate on the restored database: \(migrate.output)")
                try await stack.redis.restart()
                let restored = try await PostgresTestSupport.client(schema: stack.schema, poolSize: 2, url: restoredURL)
                try await withCleanup {
                    try await checkRestore(
                        stack: stack, restored: restored, databaseURL: databaseURL, clock: clock,
                        expected: expected, directs: directs, dumpStarted: dumpStarted, first: first, second: second,
                        runId: runId, nudgeId: nudgeId, originalPushes: originalPushes,
                        sourceDeliveries: sourceDeliveries)
                } finally: {
                    await restored.shutdown()
                }
            } finally: {
                try? await admin.execute("DROP DATABASE IF EXISTS \"\(database)\" WITH (FORCE)")
                await admin.shutdown()
                try? FileManager.default.removeItem(atPath: dump)
            }
        }
    }

    func checkRestore(
        stack: PushStack, restored: PostgresClient, databaseURL: String, clock: WorkflowClockFile,
        expected: [String: Set<String>], directs: [(id: String, to: String, acknowledged: ContinuousClock.Instant)],
        dumpStarted: ContinuousClock.Instant, first: String, second: String, runId: String, nudgeId: String,
        originalPushes: [JSONValue], sourceDeliveries: [String: Delivery]
    ) async throws {
        var original: [String: Set<String>] = [:]  // token -> "apns-id|collapse id" of what it was sent
        for push in originalPushes {
            original[push["token"]?.stringValue ?? "", default: []].insert(Self.notification(push))
        }
        // What the dump held, before any service touches it.
        let heldMessages = Set(
            try await restored.query("SELECT id::text FROM messages").map { try $0.decode(String.self, at: 0) })
        let heldDeliveries = try await Self.deliveries(restored)
        let heldRuns = try await restored.query("SELECT id::text, status, timer_due_at IS NOT NULL FROM workflow_runs")
            .map { try $0.decode((String, String, Bool).self) }
        let pendingChunks = try await restored.query(
            "SELECT count(*)::int, count(sending_by)::int, coalesce(sum(cardinality(tokens)), 0)::int FROM delivery_chunks"
        )[0].decode((Int, Int, Int).self)

        // The dump caught the sends mid-way, and holds everything acknowledged before it began.
        #expect(heldMessages.isSuperset(of: [first, second]))
        for message in directs where message.acknowledged < dumpStarted {
            #expect(heldMessages.contains(message.id), "direct message \(message.id) acknowledged before the dump")
        }
        #expect(!heldMessages.contains(nudgeId), "the run's send came after the dump")
        let caughtDevices =
            heldMessages.filter { expected[$0] != nil }.reduce(0) { $0 + expected[$1]!.count } - heldDeliveries.count
        try #require(caughtDevices > 0 && !heldDeliveries.isEmpty, "the dump did not catch a send mid-way")
        #expect(pendingChunks.0 > 0, "no chunk still to send in the dump")
        #expect(heldRuns.contains { $0.0 == runId && $0.1 == "running" && $0.2 }, "the waiting run: \(heldRuns)")
        // A delivery in the dump is the original stack's, as it was recorded (written once).
        for (id, delivery) in heldDeliveries { #expect(sourceDeliveries[id] == delivery) }

        // The services on the restored database, with an empty Redis and a fresh simulator.
        let restoredStack = try await RestoredStack(stack: stack, databaseURL: databaseURL, clock: clock)
        try await withCleanup {
            let gateway = restoredStack.gatewayURL
            for id in heldMessages {
                let settled = try await stack.waitSettled(id, limit: .seconds(60), baseURL: gateway)
                #expect(settled["status"] == "completed", "message \(id): \(settled)")
            }
            let done = try await RedisTestSupport.eventually(limit: .seconds(60)) {
                try await restored.query(
                    "SELECT 1 FROM workflow_runs WHERE id = $1::uuid AND status = 'completed'",
                    [UUID(uuidString: runId)!]
                ).count == 1
            }
            #expect(done, "the waiting run did not continue on the restored database")
            _ = try await stack.waitSettled(nudgeId, limit: .seconds(60), baseURL: gateway)

            // Nothing the dump held is gone; its deliveries are unchanged.
            let messagesNow = Set(
                try await restored.query("SELECT id::text FROM messages").map { try $0.decode(String.self, at: 0) })
            #expect(messagesNow.isSuperset(of: heldMessages))
            let deliveriesNow = try await Self.deliveries(restored)
            for (id, delivery) in heldDeliveries { #expect(deliveriesNow[id] == delivery) }
            let runsNow = Set(
                try await restored.query("SELECT id::text FROM workflow_runs").map { try $0.decode(String.self, at: 0) }
            )
            #expect(runsNow.isSuperset(of: heldRuns.map(\.0)))
            #expect(try await restored.query("SELECT 1 FROM delivery_chunks").count == 0)

            // Every message the dump held (and the run's) ended sent to every device of its audience.
            var byMessage: [String: [String: String]] = [:]  // message -> token -> status
            for delivery in deliveriesNow.values {
                byMessage[delivery.message, default: [:]][delivery.token] = delivery.status
            }
            for id in heldMessages.union([nudgeId]) {
                let audience = try #require(expected[id], "a message the test did not send: \(id)")
                #expect(Set((byMessage[id] ?? [:]).keys) == audience, "message \(id) did not reach every device")
                #expect(
                    (byMessage[id] ?? [:]).values.allSatisfy { $0 == "sent" }, "message \(id): \(byMessage[id] ?? [:])")
            }

            // What was sent again: exactly what the dump had not recorded, each push under the
            // apns-id and collapse id the original stack's push to that device carried.
            let pushes = try await restoredStack.simulator.allPushes()
            var resent: Set<String> = []
            var shown: [String: Set<String>] = [:]  // "token|collapse id" -> the apns-ids it came with
            for push in originalPushes + pushes {
                let token = push["token"]?.stringValue ?? ""
                shown[token + "|" + (push["collapseId"]?.stringValue ?? "-"), default: []].insert(
                    push["apnsId"]?.stringValue?.lowercased() ?? "-")
            }
            var originalPayloads: [String: String] = [:]  // "token|apns-id" -> the payload sent
            for push in originalPushes {
                originalPayloads[(push["token"]?.stringValue ?? "") + "|" + Self.notification(push)] =
                    push["payload"]?.stringValue
            }
            for push in pushes {
                let token = push["token"]?.stringValue ?? ""
                let notification = Self.notification(push)
                resent.insert(push["apnsId"]?.stringValue?.lowercased() ?? "")
                #expect(
                    original[token]?.contains(notification) == true,
                    "sent again as \(notification), the original stack sent \(original[token] ?? [])")
                #expect(originalPayloads[token + "|" + notification] == push["payload"]?.stringValue)
            }
            var owed: Set<String> = []
            for id in heldMessages.union([nudgeId]) {
                for token in expected[id]!
                where heldDeliveries[DeliveryID.make(message: UUID(uuidString: id)!, token: token)] == nil {
                    owed.insert(DeliveryID.make(message: UUID(uuidString: id)!, token: token))
                }
            }
            #expect(resent == owed, "sent again: \(resent.count), owed: \(owed.count)")
            // One apns-id per (device, collapse id) across both stacks: a phone shows each once.
            #expect(shown.values.allSatisfy { $0.count == 1 })
        } finally: {
            await restoredStack.close()
        }
    }

    /// A push as a phone tells it apart: "apns-id|collapse id".
    static func notification(_ push: JSONValue) -> String {
        (push["apnsId"]?.stringValue?.lowercased() ?? "-") + "|" + (push["collapseId"]?.stringValue ?? "-")
    }

    struct Delivery: Equatable {
        var message: String
        var token: String
        var status: String
        var attempts: Int
    }

    /// Every delivery row by id.
    static func deliveries(_ postgres: PostgresClient) async throws -> [String: Delivery] {
        var all: [String: Delivery] = [:]
        for row in try await postgres.query(
            "SELECT id::text, message_id::text, device_token, status, attempt_count FROM deliveries")
        {
            let (id, message, token, status, attempts) = try row.decode((String, String, String, String, Int).self)
            all[id] = Delivery(message: message, token: token, status: status, attempts: attempts)
        }
        return all
    }
}

/// The services started again on a restored database: gateway, ingest, workflow and apns-sender on
/// the stack's (emptied) Redis, sending to a simulator of their own that trusts the same key.
final class RestoredStack: Sendable {
    let simulator: APNsSimulator
    let gatewayURL: String
    let processes: [ServiceProcess]
    let http: HTTPClient

    init(stack: PushStack, databaseURL: String, clock: WorkflowClockFile) async throws {
        simulator = try await APNsSimulator(
            keyId: stack.keyId, teamId: PushStack.teamId, publicKeyPEM: stack.providerPublicKeyPEM)
        http = try HTTPClient(configuration: .init(httpVersion: .http1_1), logger: .silent())
        let common = stack.senderEnvironment.merging([
            "BUZZKIT_DATABASE_URL": databaseURL, "BUZZKIT_APNS_SANDBOX_URL": simulator.baseURL,
            "BUZZKIT_APNS_PRODUCTION_URL": simulator.baseURL, "BUZZKIT_APNS_CA_FILE": simulator.caFile
        ]) { _, new in new }
        var started: [(ServiceProcess, Int)] = []
        let gatewayPort = freeLoopbackPort()
        gatewayURL = "http://127.0.0.1:\(gatewayPort)"
        let services: [(String, [String: String], Int)] = [
            (
                "gateway",
                stack.gatewayEnvironment.merging(["BUZZKIT_DATABASE_URL": databaseURL]) { _, new in new },
                gatewayPort
            ),
            ("apns-sender", common, freeLoopbackPort()),
            ("ingest", common, freeLoopbackPort()),
            (
                "workflow",
                common.merging([
                    "BUZZKIT_WORKFLOW_CLOCK_OFFSET_FILE": clock.path, "BUZZKIT_WORKFLOW_POLL_INTERVAL": "50ms"
                ]) { _, new in new },
                freeLoopbackPort()
            )
        ]
        for (executable, environment, port) in services {
            started.append(
                (
                    try ServiceProcess(
                        executable: executable,
                        environment: environment.merging([
                            "BUZZKIT_HTTP_PORT": String(port),
                            "BUZZKIT_INSTANCE_ID": TestEnvironment.uniqueName("restored-" + executable)
                        ]) { _, new in new }), port
                ))
        }
        processes = started.map(\.0)
        for (process, port) in started {
            let http = self.http
            let ready = try await RedisTestSupport.eventually(limit: .seconds(30)) {
                guard process.isRunning else { return true }
                let response = try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz"))
                return response?.status == 200
            }
            guard ready, process.isRunning else {
                await close()
                throw StackError(description: "\(process.name) did not become ready: \(process.output)")
            }
        }
    }

    func close() async {
        for process in processes where process.isRunning {
            process.signal(SIGTERM)
            _ = await process.waitForExit(timeout: .seconds(10))
        }
        await simulator.stop()
        await http.shutdown()
    }
}
