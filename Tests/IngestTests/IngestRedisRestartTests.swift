import BuzzKitContracts
import BuzzKitRedis
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// A `redis-server` of this test's own with the deployed persistence (`appendonly yes, appendfsync
/// everysec`) in a temp folder, restarted with `SHUTDOWN` (which writes and fsyncs the AOF before
/// exiting) and started again on the same folder and port. Not `appendfsync always`: an fsync per
/// command is what the deployment does not do, and on a CI disk busy with the whole suite it made
/// a hundred XADDs take longer than the test's patience.
/// Driven through bash (`deploy/lib/common.sh`), never `Process.waitUntilExit` on the test's task.
final class PersistentRedis: Sendable {
    let port: Int
    let directory: String

    private init(port: Int, directory: String) {
        self.port = port
        self.directory = directory
    }

    static func start() async throws -> PersistentRedis {
        let parent = ProcessInfo.processInfo.environment["TEST_RUN_DIR"] ?? NSTemporaryDirectory()
        let directory = (parent as NSString).appendingPathComponent(TestEnvironment.uniqueName("redis-aof"))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let output = try await PostgresTestSupport.commonShell(#"echo "PORT=$(bk_free_port)""#, arguments: [])
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("PORT=") }),
            let port = Int(line.dropFirst(5))
        else {
            throw RedisError(.configuration, "no free port: \(output)")
        }
        let server = PersistentRedis(port: port, directory: directory)
        try await server.launch()
        return server
    }

    var url: String { "redis://127.0.0.1:\(port)" }

    private func launch() async throws {
        _ = try await PostgresTestSupport.commonShell(
            #"""
            redis-server --bind 127.0.0.1 --port "$2" --dir "$1" --appendonly yes --appendfsync everysec --save "" \
              --daemonize yes --pidfile "$1/redis.pid" --logfile "$1/redis.log" >/dev/null
            for _ in $(seq 1 200); do redis-cli -p "$2" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
            redis-cli -p "$2" ping | grep -q PONG
            if [ -n "${TEST_RUN_DIR:-}" ] && [ -f "$1/redis.pid" ]; then cat "$1/redis.pid" >>"$TEST_RUN_DIR/children"; fi
            """#, arguments: [directory, String(port)])
    }

    /// `SHUTDOWN` (persists the AOF and exits), wait for the exit, start again on the same folder.
    func restart() async throws {
        _ = try await PostgresTestSupport.commonShell(
            #"""
            pid="$(cat "$1/redis.pid")"
            redis-cli -p "$2" shutdown >/dev/null 2>&1 || true
            for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
            """#, arguments: [directory, String(port)])
        try await launch()
    }

    func stop() async {
        _ = try? await PostgresTestSupport.commonShell(
            #"redis-cli -p "$2" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$1""#,
            arguments: [directory, String(port)])
    }
}

/// Collects what the producer was told.
final class AcceptedLog: Sendable {
    private let state = Mutex<(accepted: [String], failed: Int)>(([], 0))
    func accept(_ ids: [String]) { state.withLock { $0.accepted += ids } }
    func fail() { state.withLock { $0.failed += 1 } }
    var accepted: [String] { state.withLock { $0.accepted } }
    var failed: Int { state.withLock { $0.failed } }
}

/// Redis restarting while batches arrive loses nothing the producer reported as accepted (the 202).
@Suite(.requiresTestStack) struct IngestRedisRestartTests {
    @Test func redisRestartLosesNothingAccepted() async throws {
        let server = try await PersistentRedis.start()
        var configuration = try RedisConfiguration(url: server.url)
        configuration.poolSize = 4
        configuration.connectTimeout = .seconds(1)
        configuration.commandTimeout = .seconds(2)
        let redis = RedisClient(configuration: configuration, logger: .silent())
        // Wait until the new server answers.
        #expect(await RedisTestSupport.eventually { (try? await redis.ping()) != nil })
        let harness = try await IngestHarness.start(redis: redis)
        let tenant = UUID()
        let log = AcceptedLog()
        let stop = Atomic<Bool>(false)

        let producer = Task {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                let ids = (0..<10).map { "b\(n)-e\($0)" }
                let body = Bodies.batch(
                    subscriber: "u\(n % 7)", ids.enumerated().map { Bodies.event($1, offsetSeconds: $0) })
                do {
                    _ = try await harness.intake.accept(tenantId: tenant, json: body)
                    log.accept(ids)
                } catch {
                    log.fail()
                    try? await Task.sleep(for: .milliseconds(20))
                }
                n += 1
            }
        }
        // Some batches before, a restart in the middle, more batches after. The whole suite runs
        // alongside, so the patience is generous; what is checked is what was accepted, not speed.
        #expect(
            await RedisTestSupport.eventually(limit: .seconds(120)) { log.accepted.count >= 300 },
            "accepted \(log.accepted.count) events before the restart, \(log.failed) batches refused")
        try await server.restart()
        let beforeRestart = log.accepted.count
        #expect(
            await RedisTestSupport.eventually(limit: .seconds(120)) { log.accepted.count >= beforeRestart + 300 },
            "accepted \(log.accepted.count - beforeRestart) events after the restart, \(log.failed) batches refused")
        stop.store(true, ordering: .relaxed)
        await producer.value

        let accepted = Set(log.accepted)
        #expect(accepted.count == log.accepted.count)
        _ = try await RedisTestSupport.eventually(limit: .seconds(60)) {
            try await harness.count(
                "SELECT count(*) FROM events WHERE tenant_id = $1 AND event_id = ANY($2)", [tenant, Array(accepted)])
                == accepted.count
        }
        let stored = try await harness.count(
            "SELECT count(*) FROM events WHERE tenant_id = $1 AND event_id = ANY($2)", [tenant, Array(accepted)])
        #expect(stored == accepted.count)
        let duplicated = try await harness.count(
            "SELECT count(*) FROM (SELECT event_id FROM events WHERE tenant_id = $1 GROUP BY event_id HAVING count(*) > 1) d",
            [tenant])
        #expect(duplicated == 0)
        await harness.stop()
        redis.close()
        await server.stop()
    }
}
